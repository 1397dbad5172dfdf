// The Engine's public calls (ShardedEngine, sharded_engine.h); how one is opened: open_engine.cc.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>

#include "common/format.h"
#include "common/rules.h"
#include "engine/store_seam.h"
#include "engine/sharded_engine.h"

namespace delayq::engine {

ShardedEngine::ShardedEngine(const EngineOptions& options, Clock& clock,
                             std::unique_ptr<Persistence> store)
    : opt_(options),
      clock_(clock),
      parts_(std::make_unique<Parts>(clock, std::move(store), options.timer_slack)) {}

Status ShardedEngine::start() {
  // Before the driver follows a manual clock: no move runs on a half-caught-up shard.
  if (Status s = shards_.advance_all(); !s.ok()) return s;
  driver_.start();
  // Then the schedules: what fell while the store was closed, by each one's catch-up policy,
  // before the engine serves; later occurrences as the clock comes to them (schedules.h).
  fire_schedules();
  if (clock_.manual())
    schedule_subscription_ = clock_.subscribe([this] { fire_schedules(); });
  else
    schedules_.start(clock_, [this] { return fire_schedules(); });
  return {};
}

ShardedEngine::~ShardedEngine() {
  // In a child forked after the open: nothing is closed, joined or freed (common/fork_guard.h).
  if (waiting_.forked()) {
    (void)parts_.release();
    return;
  }
  close();
  // Destroying the engine from one of its own reserve_async callbacks would free the waiting
  // thread's state under its feet: a programming error, reported rather than left undefined.
  if (waiting_.on_own_thread()) {
    std::fprintf(stderr, "delayq: an Engine was destroyed from its own reserve_async callback\n");
    std::abort();
  }
  waiting_.join();
}

void ShardedEngine::close() {
  if (waiting_.forked()) return;  // the parent's queue: left alone (common/fork_guard.h)
  stop_consumers();  // first, while their last acks are still served
  if (shut_.exchange(true)) return;
  // Blocked reserves return `closed` (or the store's failure, if that came first), pending
  // reserve_async callbacks run with it on the waiting thread, later calls fail with it.
  waiting_.close(Waiting::closed_error());
  driver_.stop();
  if (schedule_subscription_ != 0) clock_.unsubscribe(std::exchange(schedule_subscription_, 0));
  schedules_.stop();
  // From a reserve_async callback, on the waiting thread itself: it cannot wait for itself. It
  // ends when the callback returns, and the destructor joins it.
  if (!waiting_.on_own_thread()) waiting_.join();
}

// ---- pushing ----

template <class PushAs>
Result<std::string> ShardedEngine::push_with_id(JobSpec&& spec, PushAs&& push_as) {
  const bool generated = spec.id.empty();
  for (;;) {
    if (generated) spec.id = to_base36(next_id_.fetch_add(1));
    std::string id = spec.id;
    // Core::push moves from `spec` only when it succeeds.
    Status s = push_as(std::move(spec));
    if (s.ok()) return id;
    // A generated id that a user happened to take already: draw the next one.
    if (!(generated && s.is(Errc::duplicate_id))) return s;
  }
}

Status ShardedEngine::push_one(Shard& s, JobSpec&& spec, TimePoint now) {
  return shards_.placement().push(s, std::move(spec), now);
}

Result<std::string> ShardedEngine::push(JobSpec spec) {
  if (closed()) return closed_status();
  return push_with_id(std::move(spec), [this](JobSpec&& s) {
    Shard& shard = shards_.of(s.id);
    return shards_.apply(
        shard, [&](Core&, TimePoint now) { return push_one(shard, std::move(s), now); });
  });
}

std::vector<Result<std::string>> ShardedEngine::push_batch(std::vector<JobSpec> specs) {
  std::vector<Result<std::string>> out;
  out.reserve(specs.size());
  if (shards_.size() > 1) {
    for (JobSpec& s : specs) out.push_back(push(std::move(s)));
    return out;
  }
  if (closed()) {
    out.assign(specs.size(), closed_status());
    return out;
  }
  // One shard: one lock (and one journal write) for the whole batch.
  Shard& shard = shards_[0];
  const Status written = shards_.apply(shard, [&](Core&, TimePoint now) {
    for (JobSpec& spec : specs)
      out.push_back(push_with_id(std::move(spec), [&](JobSpec&& s) {
        return push_one(shard, std::move(s), now);
      }));
    return Status();
  });
  // The batch's journal write failed: none of its pushes may be reported as done.
  if (!written.ok())
    for (Result<std::string>& r : out)
      if (r.ok()) r = written;
  return out;
}

// ---- reserving ----

Waiting::Attempt ShardedEngine::try_reserve(std::span<const std::string> topics) {
  const size_t n = shards_.size();
  const size_t start = n == 1 ? 0 : next_shard_.fetch_add(1) % n;
  for (size_t i = 0; i < n; ++i) {
    Result<Delivery> r = shards_.apply(
        shards_[(start + i) % n], [&](Core& c, TimePoint now) { return c.reserve(topics, now); });
    if (!r.is(Errc::timeout)) return {std::move(r)};
  }
  // Nothing ready: the waiting component sleeps until a job is made ready or the driver's
  // next_look() (the earliest deadline) comes, then tries again.
  return {rules::reserve_timeout(topics), true};
}

Result<Delivery> ShardedEngine::wait_reserve(std::span<const std::string> topics, Duration timeout,
                                             const std::atomic<bool>* stop) {
  if (Status s = rules::check_topics(topics); !s.ok()) return s;
  return waiting_.wait([&](auto) { return try_reserve(topics); }, timeout, stop);
}

Result<Delivery> ShardedEngine::reserve(std::span<const std::string> topics, Duration timeout) {
  return wait_reserve(topics, timeout, nullptr);
}

Result<Delivery> ShardedEngine::reserve_interruptible(std::span<const std::string> topics,
                                                      Duration timeout,
                                                      const std::atomic<bool>& stop) {
  return wait_reserve(topics, timeout, &stop);
}

void ShardedEngine::reserve_async(std::vector<std::string> topics, Duration timeout,
                                  std::function<void(Result<Delivery>)> done,
                                  std::stop_token stop) {
  if (Status s = rules::check_topics(topics); !s.ok()) return done(std::move(s));
  waiting_.wait_async([this, topics = std::move(topics)](auto) { return try_reserve(topics); },
                      timeout, std::move(done), std::move(stop));
}

// ---- calls on one job ----

template <class F>
auto ShardedEngine::on_job(std::string_view id, F&& f) {
  using R = std::invoke_result_t<F&, Shard&, TimePoint>;
  if (closed()) return R(closed_status());
  Shard& shard = shards_.of(id);
  return shards_.apply(shard, [&](Core&, TimePoint now) { return f(shard, now); });
}

// A token call: the core's answer, except that a not_found is the placement's to answer (a job
// kept out of memory: a stale token).
template <class F>
auto ShardedEngine::on_token(const Token& t, F&& f) {
  return on_job(t.id, [&](Shard& s, TimePoint now) {
    auto r = f(s.core, now);
    using R = decltype(r);
    if (!r.is(Errc::not_found)) return r;
    if constexpr (std::is_same_v<R, Status>)
      return shards_.placement().token_miss(s, t, r);
    else
      return R(shards_.placement().token_miss(s, t, r.status()));
  });
}

Status ShardedEngine::ack(const Token& t) {
  return on_token(t, [&](Core& c, TimePoint now) { return c.ack(t, now); });
}

Status ShardedEngine::nack(const Token& t, std::optional<Duration> delay) {
  return on_token(t, [&](Core& c, TimePoint now) { return c.nack(t, delay, now); });
}

Status ShardedEngine::dead_letter(const Token& t) {
  return on_token(t, [&](Core& c, TimePoint now) { return c.dead_letter(t, now); });
}

Status ShardedEngine::release(const Token& t) {
  return on_token(t, [&](Core& c, TimePoint now) { return c.release(t, now); });
}

Result<TimePoint> ShardedEngine::touch(const Token& t) {
  return on_token(t, [&](Core& c, TimePoint now) { return c.touch(t, now); });
}

Status ShardedEngine::cancel(std::string_view id) {
  return on_job(id, [&](Shard& s, TimePoint now) {
    return shards_.placement().cancel(s, id, now);
  });
}

Result<JobInfo> ShardedEngine::get(std::string_view id) {
  return on_job(id, [&](Shard& s, TimePoint now) {
    return shards_.placement().get(s, id, now);
  });
}

Status ShardedEngine::reschedule(std::string_view id, TimePoint when) {
  return on_job(id, [&](Shard& s, TimePoint now) {
    return shards_.placement().reschedule(s, id, when, now);
  });
}

Status ShardedEngine::requeue_dead(std::string_view id) {
  return on_job(id, [&](Shard& s, TimePoint now) {
    return shards_.placement().requeue_dead(s, id, now);
  });
}

// ---- calls over topics: every shard in turn ----

template <class F>
Result<uint64_t> ShardedEngine::sum_over_shards(F&& call) {
  if (closed()) return closed_status();
  uint64_t n = 0;
  for (const auto& s : shards_.all()) {
    Result<uint64_t> part =
        shards_.apply(*s, [&](Core& c, TimePoint now) -> Result<uint64_t> { return call(c, now); });
    if (!part) return part;
    n += *part;
  }
  return n;
}

Result<std::vector<JobInfo>> ShardedEngine::list_dead(std::string_view topic, size_t limit) {
  if (closed()) return closed_status();
  std::vector<JobInfo> all;
  for (const auto& s : shards_.all()) {
    std::vector<JobInfo> part =
        shards_.apply(*s, [&](Core& c, TimePoint now) { return c.list_dead(topic, limit, now); });
    all.insert(all.end(), std::make_move_iterator(part.begin()),
               std::make_move_iterator(part.end()));
  }
  rules::merge_dead_lists(all, shards_.size(), limit);
  return all;
}

Result<uint64_t> ShardedEngine::requeue_dead_topic(std::string_view topic) {
  return sum_over_shards([&](Core& c, TimePoint now) { return c.requeue_dead_topic(topic, now); });
}

Result<uint64_t> ShardedEngine::purge_dead(std::string_view topic) {
  return sum_over_shards([&](Core& c, TimePoint now) { return c.purge_dead(topic, now); });
}

void ShardedEngine::restore_paused(const std::vector<std::string>& topics) {
  std::lock_guard l(pause_mu_);
  for (const std::string& topic : topics) {
    paused_.insert(topic);
    for (const auto& s : shards_.all()) s->core.restore_paused(topic);
  }
}

Status ShardedEngine::set_paused(std::string_view topic, bool paused) {
  if (closed()) return closed_status();
  if (Status s = rules::check_topic(topic); !s.ok()) return s;
  std::unique_lock l(pause_mu_);
  const auto it = paused_.find(topic);
  if ((it != paused_.end()) == paused) return {};  // as asked already: nothing changes
  uint64_t ticket = 0;
  if (Persistence* store = shards_.store()) {
    Result<uint64_t> w = store->write_paused(topic, paused);
    if (!w) return shards_.fail(w.status());
    ticket = *w;
  }
  if (paused)
    paused_.emplace(topic);
  else
    paused_.erase(it);
  for (const auto& s : shards_.all())
    shards_.apply(*s, [&](Core& c, TimePoint now) {
      c.set_paused(topic, paused, now);
      return 0;
    });
  l.unlock();
  if (ticket != 0)
    if (Status d = shards_.store()->wait_durable(ticket); !d.ok()) return shards_.fail(d);
  return {};
}

Status ShardedEngine::health() {
  // The failure the engine stopped on, if any, else "closed".
  return closed() ? closed_status() : Status();
}

Stats ShardedEngine::stats() {
  Stats st;
  // In a forked child, nothing: the shards' locks may be held by threads that stayed in the
  // parent (common/fork_guard.h); health() says why.
  if (waiting_.forked()) return st;
  Placement& placement = shards_.placement();
  OutOfMemoryCounts elsewhere;  // jobs per topic that the cores do not hold
  // Topics copied into a core's view per hold of the shard's lock (a few ms of work at most).
  constexpr size_t kPiece = 4096;
  for (const auto& s : shards_.all()) {
    // The shard's lock is held only to copy the topics that changed since the last stats()
    // (Core::publish), kPiece at a time, the lock released in between; every topic is added from
    // the core's view after it is released, so that pushes do not wait for work in proportion to
    // the number of topics. The view's lock, taken first, keeps concurrent stats() calls in
    // order. After 64 pieces (changes coming faster than they are copied) the rest goes at once.
    TopicView& view = s->core.view();
    const std::unique_lock view_lock = view.lock();
    TimePoint at{};
    bool done = false, last = false;
    for (int piece = 1; !done; ++piece) {
      shards_.apply(*s, [&](Core& c, TimePoint now) {
        c.advance(now);  // counts as of now, not as of the last call
        done = c.publish(last ? SIZE_MAX : kPiece);
        if (!done) return 0;
        at = now;
        add_totals(st, c.totals());
        placement.add_shard_stats(*s, st, elsewhere);
        return 0;
      });
      last = piece + 1 >= 64;
    }
    view.add_to(st, at);
  }
  placement.finish_stats(st, elsewhere);
  add_flow(st);
  return st;
}

}  // namespace delayq::engine
