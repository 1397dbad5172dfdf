// RedisQueue: the Queue interface over the Lua scripts of scripts.cc.
//
// Each call finds the job's shard (FNV-1a of the id), builds the keys the script will touch and
// runs it on that shard's node. The server does every state change and every time decision;
// this side turns replies into Deliveries, JobInfos and Statuses (with the engine's wording,
// see rules.h), and does the waiting:
//  - A blocked reserve() runs the claim script; when nothing is ready it learns from the reply
//    how long until the next due time or lease deadline of its topics, and sleeps that long (or
//    the sweep interval, if shorter).
//  - A listener thread subscribes to every shard's wake channel. The scripts publish on it when
//    a job becomes ready or is scheduled earlier than the topic's earliest one; each message
//    wakes the waiters, who claim again.
//  - reserve_async() waiters are served by one thread that does the same.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <iterator>
#include <list>
#include <random>
#include <stop_token>
#include <thread>
#include <unordered_map>

#include "common/format.h"
#include "engine/rules.h"
#include "delayq/redis.h"
#include "redis/keys.h"
#include "redis/router.h"
#include "redis/replies.h"
#include "redis/rules.h"
#include "redis/scripts.h"

namespace delayq {

namespace {

using namespace redis;
using Steady = std::chrono::steady_clock;

// Waits longer than this are "forever" (and keep time_point arithmetic in range).
constexpr Duration kForever = std::chrono::hours(24 * 365 * 100);

// Nanoseconds to whole microseconds, rounded up: a due time or a wait is never shortened.
int64_t ceil_us(int64_t ns) { return ns / 1000 + (ns > 0 && ns % 1000 != 0 ? 1 : 0); }
int64_t ceil_us(Duration d) { return ceil_us(d.count()); }
int64_t ceil_us(TimePoint t) { return ceil_us(t.time_since_epoch().count()); }
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

Status bad_reply(const char* script) {
  return Status(Errc::corrupt, std::string("unexpected reply from the redis script '") + script + "'");
}

Status closed_error() { return Status(Errc::closed, "the queue is closed"); }


class RedisQueue final : public Queue {
 public:
  RedisQueue(const RedisOptions& opt, Endpoint ep)
      : opt_(opt),
        rules_(Limits{opt.max_delay, opt.max_body_bytes, opt.default_ttr, opt.default_retry}),
        keys_(opt.queue, opt.shards),
        router_(std::move(ep),
              NodeOptions{opt.connections, opt.connect_timeout, opt.call_timeout,
                          opt.reconnect_min, opt.reconnect_max},
              &library()) {
    std::random_device rd;
    const uint64_t seed = opt.seed ? opt.seed : (uint64_t{rd()} << 32 | rd());
    rng_.store(seed);
    // A generated id: a base-36 counter that starts at the time of opening in nanoseconds, then
    // '-' and this opening's number (start()), so that two openings never draw the same id,
    // whatever their wall clocks say.
    next_id_.store(static_cast<uint64_t>(SystemClock::instance().now().time_since_epoch().count()));
    max_delay_us_ = std::to_string(ceil_us(opt.max_delay));
  }

  ~RedisQueue() override {
    close();
    // Destroying the queue from one of its own reserve_async callbacks would free the async
    // thread's state under its feet: a programming error, reported rather than left undefined.
    if (std::this_thread::get_id() == async_thread_.get_id()) {
      std::fprintf(stderr, "delayq: a Redis queue was destroyed from its own reserve_async callback\n");
      std::abort();
    }
    join_threads();
  }

  // Checks the queue's shard count and starts the listener threads.
  Status start() {
    if (Status s = router_.start(); !s.ok()) return s;
    const uint16_t meta_slot = keys_.shard(0).slot;
    Result<Reply> r = router_.command(meta_slot, {"HSETNX", keys_.meta(), "shards", std::to_string(opt_.shards)});
    if (!r) return r.status();
    Result<Reply> got = router_.command(meta_slot, {"HGET", keys_.meta(), "shards"});
    if (!got) return got.status();
    if (got->as_int(-1) != static_cast<int64_t>(opt_.shards))
      return Status(Errc::invalid_argument,
                    "redis options: queue '" + opt_.queue + "' was created with " + got->str +
                        " shards; open it with shards = " + got->str);
    // This opening's number, for its generated ids: the server counts the queue's openings.
    Result<Reply> n = router_.command(meta_slot, {"HINCRBY", keys_.meta(), "clients", "1"});
    if (!n) return n.status();
    if (n->as_int(0) <= 0)
      return Status(Errc::unavailable, "redis: HINCRBY " + keys_.meta() + " clients gave no count");
    id_tag_ = to_base36(static_cast<uint64_t>(n->as_int(0)));
    listener_ = std::thread([this] { listen(); });
    async_thread_ = std::thread([this] { serve_async(); });
    return {};
  }

  Result<std::string> push(JobSpec spec) override {
    if (closed_.load()) return closed_error();
    const bool generated = spec.id.empty();
    for (;;) {
      if (generated) spec.id = to_base36(next_id_.fetch_add(1)) + "-" + id_tag_;
      if (Status s = rules_.check_push(spec, SystemClock::instance().now()); !s.ok()) return s;
      const ShardKeys& sh = shard_for(spec.id);
      auto [k, args] = push_call(sh, spec);
      Result<Reply> r = router_.eval(sh.slot, kPush, k, args);
      if (!r) return unsent(r.status(), spec.id, generated);
      const int64_t code = code_of(*r);
      if (code == kOk) {
        remember_topic(spec.id, spec.topic);
        return spec.id;
      }
      if (code != kDuplicateId || r->elements.size() < 2) return bad_reply("push");
      // A generated id that is taken already: draw the next one.
      if (!generated) return rules_.duplicate(spec.id, to_state(r->elements[1].as_int()));
      spec.body = std::move(args[kBodyArg]);
    }
  }

  // The specs that pass the checks go to the server grouped by shard and topic: one push_many
  // script run per group of up to kBatch jobs (a few commands for the whole group instead of a
  // few per job), the runs of a shard pipelined (one round trip). Each run's result is its own:
  // a run refused or lost fails its jobs only, and the jobs of the runs answered keep their
  // answers (a client that retries must not be told that a stored job failed). A generated id
  // that turns out to be taken is pushed again on its own with the next id.
  std::vector<Result<std::string>> push_batch(std::vector<JobSpec> specs) override {
    constexpr size_t kBatch = 100;
    std::vector<Result<std::string>> out(specs.size(), closed_error());
    if (closed_.load()) return out;
    std::vector<bool> generated(specs.size());
    // Per shard: the groups of specs, by topic, each at most kBatch long.
    std::vector<std::vector<std::vector<size_t>>> groups(keys_.size());
    std::vector<std::unordered_map<std::string_view, size_t>> open_group(keys_.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      JobSpec& spec = specs[i];
      generated[i] = spec.id.empty();
      if (generated[i]) spec.id = to_base36(next_id_.fetch_add(1)) + "-" + id_tag_;
      if (Status s = rules_.check_push(spec, SystemClock::instance().now()); !s.ok()) {
        out[i] = s;
        continue;
      }
      const size_t sh = keys_.shard_of(spec.id);
      auto [it, fresh] = open_group[sh].try_emplace(spec.topic, groups[sh].size());
      if (fresh || groups[sh][it->second].size() == kBatch) {
        it->second = groups[sh].size();
        groups[sh].emplace_back();
      }
      groups[sh][it->second].push_back(i);
    }
    for (size_t sh = 0; sh < keys_.size(); ++sh) {
      if (groups[sh].empty()) continue;
      std::vector<ScriptCall> calls;
      for (const std::vector<size_t>& g : groups[sh]) {
        const std::string& topic = specs[g.front()].topic;
        std::vector<std::string> args = common_args(keys_.shard(sh));
        args.push_back(topic);
        args.push_back(std::to_string(g.size()));
        for (size_t i : g) add_job_args(specs[i], /*with_topic=*/false, args);
        calls.emplace_back(keys_.shard(sh).with_topic(topic), std::move(args));
      }
      std::vector<Result<Reply>> r = router_.eval_each(keys_.shard(sh).slot, kPushMany, calls);
      for (size_t c = 0; c < groups[sh].size(); ++c)
        settle_group(r[c], groups[sh][c], specs, generated, out);
    }
    return out;
  }

  // The results of one push_many run's jobs, from its reply (one stored state per job, -1 for
  // stored now) or from why there is none.
  void settle_group(const Result<Reply>& r, const std::vector<size_t>& g,
                    std::vector<JobSpec>& specs, const std::vector<bool>& generated,
                    std::vector<Result<std::string>>& out) {
    const bool well_formed = r && code_of(*r) == kOk && r->elements.size() == g.size() + 1;
    for (size_t k = 0; k < g.size(); ++k) {
      const size_t i = g[k];
      JobSpec& spec = specs[i];
      if (!r) {
        out[i] = unsent(r.status(), spec.id, generated[i]);
        continue;
      }
      if (!well_formed) {
        out[i] = bad_reply("push_many");
        continue;
      }
      const int64_t state = r->elements[k + 1].as_int(-2);
      if (state == -1) {
        remember_topic(spec.id, spec.topic);
        out[i] = spec.id;
      } else if (generated[i]) {
        spec.id.clear();  // draw another
        out[i] = push(std::move(spec));
      } else {
        out[i] = rules_.duplicate(spec.id, to_state(state));
      }
    }
  }

  // A push whose call failed. A generated id is named: a call that may have taken effect can
  // only be looked up, or pushed again to find out (duplicate_id if it was stored), by its id.
  static Status unsent(const Status& why, const std::string& id, bool generated) {
    if (!generated) return why;
    return Status(static_cast<Errc>(why.code().value()),
                  why.message() + " (the job's generated id was '" + id + "')");
  }

  Result<Delivery> reserve(std::span<const std::string> topics, Duration timeout) override {
    return wait_reserve(topics, timeout, nullptr);
  }

  void reserve_async(std::vector<std::string> topics, Duration timeout,
                     std::function<void(Result<Delivery>)> done, std::stop_token stop) override {
    if (topics.empty()) {
      done(Status(Errc::invalid_argument, "reserve needs at least one topic"));
      return;
    }
    AsyncWaiter w{std::move(topics), Steady::now() + clamp_wait(timeout), std::move(done), stop,
                  nullptr};
    // A withdrawal wakes the async thread, which checks `stop` before every claim. Registered
    // before wait_mu_ is taken: it runs at once if the stop came already, and takes wait_mu_.
    if (stop.stop_possible())
      w.on_stop = std::make_unique<std::stop_callback<std::function<void()>>>(
          stop, std::function<void()>([this] { bump(); }));
    std::unique_lock lock(wait_mu_);
    if (closed_.load()) {
      lock.unlock();
      w.on_stop.reset();
      w.done(closed_error());
      return;
    }
    async_.push_back(std::move(w));
    epoch_.fetch_add(1);
    cv_.notify_all();
  }

  Status ack(const Token& t) override {
    // A consumer of this topic holding no jobs ahead will reserve again next: the same script
    // run takes its next jobs (one round trip per job instead of two). Only with claim_batch > 1,
    // which is the caller's consent to jobs being leased before a reserve() asks for them.
    const std::string topic = opt_.claim_batch > 1 ? topic_hint(t.id) : std::string();
    if (const uint32_t want = refill_wanted(topic); want > 0) {
      Result<Reply> r = by_id(kAckClaim, t.id,
                              {std::to_string(t.fence), std::to_string(want), topic});
      if (!r) return settle_error(r.status(), t);
      forget_topic(t.id);
      std::vector<Delivery> more;
      if (!parse_deliveries(r->elements, &more)) return bad_reply("ack_claim");
      keep(std::move(more));
      return {};
    }
    Result<Reply> r = by_id(kAck, t.id, {std::to_string(t.fence)});
    if (!r) return settle_error(r.status(), t);
    forget_topic(t.id);
    return {};
  }

  Status nack(const Token& t, std::optional<Duration> delay) override {
    if (closed_.load()) return closed_error();
    if (Status s = rules_.check_nack_delay(delay, SystemClock::instance().now()); !s.ok()) return s;
    Result<Reply> r =
        by_id(kNack, t.id, {std::to_string(t.fence), delay ? std::to_string(ceil_us(*delay)) : ""});
    return r ? Status() : settle_error(r.status(), t);
  }

  Status dead_letter(const Token& t) override {
    Result<Reply> r = by_id(kDeadLetter, t.id, {std::to_string(t.fence)});
    return r ? Status() : settle_error(r.status(), t);
  }

  Status release(const Token& t) override {
    Result<Reply> r = by_id(kRelease, t.id, {std::to_string(t.fence)});
    return r ? Status() : settle_error(r.status(), t);
  }

  Result<TimePoint> touch(const Token& t) override {
    Result<Reply> r = by_id(kTouch, t.id, {std::to_string(t.fence)});
    if (!r) return settle_error(r.status(), t);
    if (r->elements.size() < 2) return bad_reply("touch");
    return from_us(r->elements[1].as_int());
  }

  Status cancel(std::string_view id) override {
    Result<Reply> r = by_id(kCancel, id, {});
    if (!r) return r.status();
    forget_topic(id);
    return {};
  }

  Result<JobInfo> get(std::string_view id) override {
    Result<Reply> r = by_id(kGet, id, {});
    if (!r) return r.status();
    std::vector<Reply>& e = r->elements;
    if (e.size() < 10) return bad_reply("get");
    return read_job_info(e, 1, std::move(e[9].str));
  }

  Status reschedule(std::string_view id, TimePoint when) override {
    const int64_t when_us = ceil_us(when);
    Result<Reply> r = by_id(kReschedule, id, {std::to_string(when_us)});
    if (r || !refused_.is(Errc::invalid_state)) return r ? Status() : r.status();
    // The script's refusal: the job's state, or (code 1) how far away `when` is.
    const Reply& e = refusal_;
    if (code_of(e) == kInvalidArgument)
      return rules_.reschedule_refused(id, JobState::delayed, from_us(when_us),
                                       read_server_now(when_us, e.elements));
    return rules_.reschedule_refused(id, to_state(e.elements[1].as_int()), when,
                                     SystemClock::instance().now());
  }

  Result<std::vector<JobInfo>> list_dead(std::string_view topic, size_t limit) override {
    if (closed_.load()) return closed_error();
    std::vector<JobInfo> all;
    if (limit == 0) return all;
    const std::string lim = std::to_string(std::min<size_t>(limit, 1000000000));
    for (const ShardKeys& sh : keys_.shards()) {
      std::vector<std::string> args = common_args(sh);
      args.push_back(lim);
      Result<Reply> r = router_.eval(sh.slot, kListDead, sh.with_topic(topic), args);
      if (!r) return r.status();
      std::vector<Reply>& e = r->elements;
      for (size_t i = 1; i + 8 <= e.size(); i += 8)
        all.push_back(read_job_info(e, i, std::string(topic)));
    }
    if (keys_.size() > 1)
      std::stable_sort(all.begin(), all.end(),
                       [](const JobInfo& a, const JobInfo& b) { return a.due < b.due; });
    if (all.size() > limit) all.resize(limit);
    return all;
  }

  Status requeue_dead(std::string_view id) override {
    Result<Reply> r = by_id(kRequeueDead, id, {});
    if (r || !refused_.is(Errc::invalid_state)) return r ? Status() : r.status();
    return rules_.requeue_refused(id, to_state(refusal_.elements[1].as_int()));
  }

  Result<uint64_t> requeue_dead_topic(std::string_view topic) override {
    return over_dead(kRequeueDeadTopic, topic);
  }

  Result<uint64_t> purge_dead(std::string_view topic) override {
    return over_dead(kPurgeDead, topic);
  }

  // One PING for a single server; in a cluster one per shard, each to the node that holds it.
  Status health() override {
    if (closed_.load()) return closed_error();
    for (const ShardKeys& sh : keys_.shards()) {
      Result<Reply> r = router_.command(sh.slot, {"PING"});
      if (!r) return r.status();
      if (r->type == Reply::Type::error)
        return Status(Errc::unavailable, "redis answered PING with an error: " + r->str);
      if (!router_.cluster()) break;
    }
    return Status();
  }

  Stats stats() override {
    {
      // After close(), the snapshot taken as it closed: the jobs stay in Redis, but this client
      // no longer talks to it.
      std::lock_guard lock(final_stats_mu_);
      if (final_stats_) return *final_stats_;
    }
    Stats st;
    for (const ShardKeys& sh : keys_.shards()) {
      Result<Reply> names = router_.command(sh.slot, {"HKEYS", sh.topics});
      if (!names) continue;  // stats() cannot fail: an unreachable shard counts nothing
      std::vector<std::string> topics;
      for (const Reply& n : names->elements) topics.push_back(n.str);
      // A few hundred topics per call keeps each script short.
      for (size_t from = 0; from < topics.size() || from == 0; from += 200) {
        const size_t to = std::min(topics.size(), from + 200);
        std::vector<std::string> k = sh.base;
        for (size_t i = from; i < to; ++i) sh.add_topic(topics[i], k);
        std::vector<std::string> args = common_args(sh);
        args.push_back(std::to_string(to - from));
        Result<Reply> r = router_.eval(sh.slot, kStats, k, args);
        if (!r || r->elements.size() != to - from + 2) break;
        for (size_t i = from; i < to; ++i) {
          const std::optional<TopicStats> counts = read_topic_counts(r->elements[1 + i - from]);
          if (!counts || *counts == TopicStats{}) continue;
          const TopicStats& ts = *counts;
          TopicStats& o = st.topics[topics[i]];
          o.delayed += ts.delayed;
          o.ready += ts.ready;
          o.reserved += ts.reserved;
          o.dead += ts.dead;
        }
        // The totals come with every call; take them from the last one.
        if (to == topics.size()) read_totals(r->elements.back(), st);
        if (topics.empty()) break;
      }
    }
    return st;
  }

  void close() override {
    {
      std::lock_guard lock(wait_mu_);
      if (closed_.exchange(true)) return;
      cv_.notify_all();
    }
    {
      std::lock_guard lock(listen_mu_);
      if (listen_conn_ != nullptr) listen_conn_->shutdown();
    }
    give_back_kept();
    {
      Stats last = stats();
      std::lock_guard lock(final_stats_mu_);
      final_stats_ = std::move(last);
    }
    router_.close();
    // The async thread finishes its waiters with `closed` and ends; it cannot join itself.
    if (std::this_thread::get_id() != async_thread_.get_id()) join_threads();
  }

 protected:
  Result<Delivery> reserve_interruptible(std::span<const std::string> topics, Duration timeout,
                                         const std::atomic<bool>& stop) override {
    return wait_reserve(topics, timeout, &stop);
  }

  void wake_waiters() override {
    std::lock_guard lock(wait_mu_);
    cv_.notify_all();
  }

 private:
  std::mutex final_stats_mu_;
  std::optional<Stats> final_stats_;  // set by close()

  struct AsyncWaiter {
    std::vector<std::string> topics;
    Steady::time_point deadline;
    std::function<void(Result<Delivery>)> done;
    std::stop_token stop;  // requested: withdrawn, claim nothing more
    // Wakes the async thread. Destroyed without wait_mu_ held: it waits for a running callback,
    // which takes wait_mu_.
    std::unique_ptr<std::stop_callback<std::function<void()>>> on_stop;
  };

  // What one pass of the claim script over the shards found.
  struct Claim {
    Result<Delivery> result = Status(Errc::timeout, "");
    std::optional<Duration> next;  // until the earliest due time or lease deadline, if any
  };

  static Duration clamp_wait(Duration d) { return std::clamp(d, Duration::zero(), kForever); }

  const ShardKeys& shard_for(std::string_view id) const { return keys_.shard(keys_.shard_of(id)); }

  // The keys and arguments of the push script for a checked spec. The body is moved into the
  // arguments (at kBodyArg), for the caller to take back if it needs the spec again.
  static constexpr size_t kBodyArg = 5;
  std::pair<std::vector<std::string>, std::vector<std::string>> push_call(const ShardKeys& sh,
                                                                          JobSpec& spec) {
    std::vector<std::string> args = common_args(sh);
    add_job_args(spec, /*with_topic=*/true, args);
    return {sh.with_topic(spec.topic), std::move(args)};
  }

  // A job's arguments, as push (with_topic) and push_many (without, and with the number of
  // delays before them) take them: id, [topic], body (moved out of the spec), delay, due_at, ttr,
  // the retry policy.
  void add_job_args(JobSpec& spec, bool with_topic, std::vector<std::string>& args) const {
    const RetryPolicy& p = spec.retry ? *spec.retry : opt_.default_retry;
    args.push_back(spec.id);
    if (with_topic) args.push_back(spec.topic);
    args.push_back(std::move(spec.body));
    args.push_back(spec.delay ? std::to_string(ceil_us(*spec.delay)) : "");
    args.push_back(spec.due_at ? std::to_string(ceil_us(*spec.due_at)) : "");
    args.push_back(std::to_string(ceil_us(spec.ttr > Duration::zero() ? spec.ttr : opt_.default_ttr)));
    args.push_back(std::to_string(static_cast<int>(p.kind)));
    args.push_back(std::to_string(p.max_attempts));
    args.push_back(std::to_string(ceil_us(p.base)));
    args.push_back(num(p.factor));
    args.push_back(std::to_string(ceil_us(p.cap)));
    args.push_back(num(p.jitter));
    if (!with_topic) args.push_back(std::to_string(p.delays.size()));
    for (Duration d : p.delays) args.push_back(std::to_string(ceil_us(d)));
  }

  std::vector<std::string> common_args(const ShardKeys& sh) {
    // A fresh seed for the script's jitter: 1 .. 2^31-2, as Park-Miller needs.
    uint64_t x = rng_.fetch_add(0x9e3779b97f4a7c15ull);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return {sh.wake, max_delay_us_, std::to_string(1 + x % 2147483646)};
  }

  // ---- the topic of an id ----
  // Scripts about one job need its topic's keys up front. The client remembers the topics of
  // the jobs it pushed and reserved; for others it guesses, and the script names the right
  // topic when the guess was wrong (one more round trip).

  std::string topic_hint(std::string_view id) {
    std::lock_guard lock(topics_mu_);
    auto it = topic_of_.find(std::string(id));
    return it == topic_of_.end() ? std::string() : it->second;
  }
  void remember_topic(std::string_view id, std::string_view topic) {
    std::lock_guard lock(topics_mu_);
    if (topic_of_.size() > 100000) topic_of_.clear();  // a cache, not a record
    topic_of_[std::string(id)] = std::string(topic);
  }
  void forget_topic(std::string_view id) {
    std::lock_guard lock(topics_mu_);
    topic_of_.erase(std::string(id));
  }

  // Runs a script about one job. Script refusals become Statuses in the engine's words; the
  // raw refusal stays in refused_/refusal_ (thread-local) for callers that need its details.
  Result<Reply> by_id(size_t script, std::string_view id, std::vector<std::string> extra) {
    if (closed_.load()) return closed_error();
    return by_id_unchecked(script, id, std::move(extra));
  }
  Result<Reply> by_id_unchecked(size_t script, std::string_view id, std::vector<std::string> extra) {
    refused_ = Status();
    const ShardKeys& sh = shard_for(id);
    std::string topic = topic_hint(id);
    for (int attempt = 0; attempt < 5; ++attempt) {
      std::vector<std::string> args = common_args(sh);
      args.push_back(std::string(id));
      args.push_back(topic);
      args.insert(args.end(), extra.begin(), extra.end());
      Result<Reply> r = router_.eval(sh.slot, script, sh.with_topic(topic), args);
      if (!r) return r;
      const int64_t code = code_of(*r);
      switch (code) {
        case kOk:
          return r;
        case kWrongTopic:
          if (r->elements.size() < 2) return bad_reply(library().scripts[script].name.c_str());
          topic = r->elements[1].str;
          remember_topic(id, topic);
          continue;
        case kNotFound:
          forget_topic(id);
          return rules_.not_found(id);
        case kStaleToken:
        case kInvalidState:
        case kInvalidArgument:
          if (r->elements.size() < 2) return bad_reply(library().scripts[script].name.c_str());
          refusal_ = std::move(*r);
          // Marked invalid_state here; the caller turns it into the engine's Status.
          refused_ = Status(code == kStaleToken ? Errc::stale_token : Errc::invalid_state, "");
          return refused_;
        default:
          return bad_reply(library().scripts[script].name.c_str());
      }
    }
    return Status(Errc::unavailable,
                  "job '" + std::string(id) + "' kept changing topics during the call; try again");
  }

  // ack/nack/dead_letter/touch: a refused token in the engine's words.
  Status settle_error(const Status& s, const Token& t) {
    if (!s.is(Errc::stale_token) || refusal_.elements.size() < 3) return s;
    return rules_.stale(t, to_state(refusal_.elements[1].as_int()),
                        static_cast<uint32_t>(refusal_.elements[2].as_int()));
  }

  // requeue_dead_topic / purge_dead: each shard, a batch per call until none are left.
  Result<uint64_t> over_dead(size_t script, std::string_view topic) {
    if (closed_.load()) return closed_error();
    uint64_t n = 0;
    for (const ShardKeys& sh : keys_.shards()) {
      for (;;) {
        Result<Reply> r = router_.eval(sh.slot, script, sh.with_topic(topic), common_args(sh));
        if (!r) return r.status();
        if (r->elements.size() < 3) return bad_reply(library().scripts[script].name.c_str());
        const int64_t done = r->elements[1].as_int(), left = r->elements[2].as_int();
        n += static_cast<uint64_t>(done);
        if (done == 0 || left == 0) break;
      }
    }
    return n;
  }

  // ---- reserving and waiting ----

  // One pass of the claim script over the shards, from a rotating start, taking up to `want`
  // jobs from the first shard that has any: the first is the result, the others go to `more`.
  Claim try_claim(std::span<const std::string> topics, uint32_t want = 1,
                  std::vector<Delivery>* more = nullptr) {
    Claim c;
    const size_t n = keys_.size();
    const size_t start = n == 1 ? 0 : next_shard_.fetch_add(1) % n;
    for (size_t i = 0; i < n; ++i) {
      const ShardKeys& sh = keys_.shard((start + i) % n);
      std::vector<std::string> k = sh.base;
      for (const std::string& t : topics) sh.add_topic(t, k);
      std::vector<std::string> args = common_args(sh);
      args.push_back(std::to_string(topics.size()));
      args.push_back(std::to_string(want));
      Result<Reply> r = router_.eval(sh.slot, kClaim, std::move(k), std::move(args));
      if (!r) {
        c.result = r.status();
        return c;
      }
      std::vector<Reply>& e = r->elements;
      const int64_t code = code_of(*r);
      if (code == kNothingReady && e.size() >= 2) {
        if (const std::optional<Duration> w = read_next_wait(e); w && (!c.next || *w < *c.next))
          c.next = *w;
        continue;
      }
      std::vector<Delivery> got;
      if (code != kOk || e.size() < 9 || !parse_deliveries(e, &got)) {
        c.result = bad_reply("claim");
        return c;
      }
      c.result = std::move(got.front());
      if (more) std::move(got.begin() + 1, got.end(), std::back_inserter(*more));
      return c;
    }
    c.result = engine::reserve_timeout(topics);
    return c;
  }

  // The jobs of a claim reply (see read_deliveries), appended to `out`, their topics
  // remembered. False when the reply is malformed.
  bool parse_deliveries(std::vector<Reply>& e, std::vector<Delivery>* out) {
    const size_t first = out->size();
    if (!read_deliveries(e, out)) return false;
    for (size_t i = first; i < out->size(); ++i) remember_topic((*out)[i].id, (*out)[i].topic);
    return true;
  }

  // ---- jobs taken ahead (claim_batch > 1) ----

  // How many jobs an ack of a job of `topic` should take along: claim_batch when this client
  // reserves that topic on its own (a batched reserve() of it happened) and holds none of it
  // ahead, else 0.
  uint32_t refill_wanted(const std::string& topic) {
    if (topic.empty() || closed_.load()) return 0;
    std::lock_guard lock(kept_mu_);
    auto it = kept_.find(topic);
    return it != kept_.end() && it->second.empty() ? opt_.claim_batch : 0;
  }

  // A kept job for `topics`, if one has more than half of its lease left; the others found on
  // the way are given back.
  std::optional<Delivery> take_kept(std::span<const std::string> topics) {
    if (opt_.claim_batch <= 1 || topics.size() != 1) return std::nullopt;
    std::vector<Delivery> stale;
    std::optional<Delivery> out;
    {
      std::lock_guard lock(kept_mu_);
      auto it = kept_.find(topics[0]);
      if (it == kept_.end()) return std::nullopt;
      const Steady::time_point now = Steady::now();
      while (!it->second.empty() && !out) {
        Kept k = std::move(it->second.front());
        it->second.pop_front();
        if (now - k.taken < k.lease_left / 2) {
          out = std::move(k.d);
        } else {
          stale.push_back(std::move(k.d));
        }
      }
    }
    for (const Delivery& d : stale) (void)nack(d.token, Duration::zero());
    return out;
  }

  void keep(std::vector<Delivery> more) {
    if (more.empty()) return;
    const TimePoint now = SystemClock::instance().now();
    const Steady::time_point taken = Steady::now();
    {
      std::lock_guard lock(kept_mu_);
      // After close() gave back what was kept, jobs that arrive late (an ack_claim in flight)
      // go straight back too.
      if (!kept_closed_) {
        auto& q = kept_[more.front().topic];
        for (Delivery& d : more) {
          const Duration left = d.lease_deadline - now;
          q.push_back(Kept{std::move(d), taken, left});
        }
        return;
      }
    }
    for (const Delivery& d : more)
      (void)by_id_unchecked(kNack, d.id, {std::to_string(d.token.fence), "0"});
  }

  // close(): every kept job goes back to its topic (a failed attempt, as a lease running out).
  void give_back_kept() {
    std::vector<Delivery> all;
    {
      std::lock_guard lock(kept_mu_);
      kept_closed_ = true;
      for (auto& [topic, q] : kept_)
        for (Kept& k : q) all.push_back(std::move(k.d));
      kept_.clear();
    }
    for (const Delivery& d : all) {
      std::vector<std::string> extra{std::to_string(d.token.fence), "0"};
      (void)by_id_unchecked(kNack, d.id, std::move(extra));
    }
  }

  // How long to wait before claiming again, after a pass that found nothing.
  Duration pause_after(const Claim& c) const {
    if (c.result.is(Errc::unavailable)) return opt_.reconnect_min;  // the node paces reconnects
    return c.next ? std::min(*c.next, opt_.sweep) : opt_.sweep;
  }

  Result<Delivery> wait_reserve(std::span<const std::string> topics, Duration timeout,
                                const std::atomic<bool>* stop) {
    if (topics.empty()) return Status(Errc::invalid_argument, "reserve needs at least one topic");
    const Steady::time_point deadline = Steady::now() + clamp_wait(timeout);
    for (;;) {
      if (closed_.load()) return closed_error();
      if (stop && stop->load()) return Status(Errc::closed, "the consumer was stopped");
      if (std::optional<Delivery> d = take_kept(topics)) return std::move(*d);
      const uint64_t seen = epoch_.load();
      std::vector<Delivery> more;
      const bool batch = opt_.claim_batch > 1 && topics.size() == 1;
      if (batch) {
        // Marks the topic as one this client consumes (see refill_wanted()).
        std::lock_guard lock(kept_mu_);
        kept_.try_emplace(topics[0]);
      }
      Claim c = try_claim(topics, batch ? opt_.claim_batch : 1, &more);
      keep(std::move(more));
      if (!c.result.is(Errc::timeout) && !c.result.is(Errc::unavailable)) return c.result;
      const Steady::time_point now = Steady::now();
      if (now >= deadline) {
        // A consume() loop ends on any error but timeout: while the server is away, it keeps
        // waiting instead.
        if (stop && c.result.is(Errc::unavailable))
          return Status(Errc::timeout, "redis unavailable: " + c.result.status().message());
        return c.result;
      }
      const Steady::time_point wake = std::min(deadline, now + pause_after(c));
      std::unique_lock lock(wait_mu_);
      cv_.wait_until(lock, wake, [&] {
        return epoch_.load() != seen || closed_.load() || (stop && stop->load());
      });
    }
  }

  // The async thread: serves reserve_async() waiters the way wait_reserve() serves one caller.
  void serve_async() {
    std::unique_lock lock(wait_mu_);
    for (;;) {
      if (closed_.load()) {
        std::list<AsyncWaiter> left = std::move(async_);
        async_.clear();
        lock.unlock();
        for (AsyncWaiter& w : left) w.done(closed_error());
        return;
      }
      if (async_.empty()) {
        cv_.wait(lock, [&] { return closed_.load() || !async_.empty(); });
        continue;
      }
      const uint64_t seen = epoch_.load();
      std::list<AsyncWaiter> batch = std::move(async_);
      async_.clear();
      lock.unlock();
      Steady::time_point wake = Steady::time_point::max();
      for (auto it = batch.begin(); it != batch.end();) {
        if (it->stop.stop_requested()) {
          it->done(Status(Errc::cancelled,
                          "the reserve was withdrawn (stop requested) before a job came"));
          it = batch.erase(it);
          continue;
        }
        Claim c = try_claim(it->topics);
        const Steady::time_point now = Steady::now();
        const bool waiting = c.result.is(Errc::timeout) || c.result.is(Errc::unavailable);
        if (!waiting || now >= it->deadline) {
          it->done(std::move(c.result));
          it = batch.erase(it);
          continue;
        }
        wake = std::min({wake, it->deadline, now + pause_after(c)});
        ++it;
      }
      lock.lock();
      async_.splice(async_.begin(), batch);
      if (!async_.empty() && !closed_.load())
        cv_.wait_until(lock, wake, [&] { return epoch_.load() != seen || closed_.load(); });
    }
  }

  // The listener thread: subscribes to the wake channels and wakes the waiters on each message.
  // In a cluster, the scripts' PUBLISH reaches every node over the cluster bus, so one
  // subscription on any node hears every shard; when that node fails, the next one is tried.
  void listen() {
    Duration backoff = opt_.reconnect_min;
    size_t turn = 0;
    while (!closed_.load()) {
      const std::vector<Endpoint> eps = router_.endpoints();
      const Endpoint& ep = eps[turn++ % eps.size()];
      Result<std::unique_ptr<Connection>> c =
          Connection::open(ep, opt_.connect_timeout, Duration::zero());
      if (c) {
        std::vector<std::string_view> argv{"SUBSCRIBE"};
        for (const ShardKeys& sh : keys_.shards()) argv.push_back(sh.wake);
        {
          std::lock_guard lock(listen_mu_);
          if (closed_.load()) return;
          listen_conn_ = c->get();
        }
        if ((*c)->call(argv)) {
          backoff = opt_.reconnect_min;
          --turn;  // stay with a node that works
          bump();  // wake-ups may have been missed while unsubscribed
          for (;;) {
            Result<Reply> m = (*c)->read();
            if (!m) break;
            if (m->type == Reply::Type::array && !m->elements.empty() &&
                m->elements[0].str == "message")
              bump();
          }
        }
        std::lock_guard lock(listen_mu_);
        listen_conn_ = nullptr;
      }
      std::unique_lock lock(wait_mu_);
      cv_.wait_for(lock, backoff, [&] { return closed_.load(); });
      backoff = std::min<Duration>(backoff * 2, opt_.reconnect_max);
    }
  }

  void bump() {
    std::lock_guard lock(wait_mu_);
    epoch_.fetch_add(1);
    cv_.notify_all();
  }

  void join_threads() {
    if (listener_.joinable()) listener_.join();
    if (async_thread_.joinable() && std::this_thread::get_id() != async_thread_.get_id())
      async_thread_.join();
  }

  RedisOptions opt_;
  Rules rules_;
  KeyLayout keys_;
  Router router_;
  std::string max_delay_us_;
  std::string id_tag_;
  std::atomic<uint64_t> next_id_{0};
  std::atomic<uint64_t> rng_{0};
  std::atomic<uint32_t> next_shard_{0};
  std::atomic<bool> closed_{false};

  std::mutex topics_mu_;
  std::unordered_map<std::string, std::string> topic_of_;

  // Jobs taken ahead by a batched claim, per topic, oldest first (claim_batch > 1).
  // A job taken ahead. Its lease is timed on the server's clock; here, how much of it was left
  // when it arrived (server deadline minus this client's wall clock, read once) and its age on
  // the steady clock, so that a step of this client's wall clock changes neither.
  struct Kept {
    Delivery d;
    Steady::time_point taken;
    Duration lease_left;
  };
  std::mutex kept_mu_;
  std::unordered_map<std::string, std::deque<Kept>> kept_;  // a key per topic reserved alone
  bool kept_closed_ = false;                                // under kept_mu_: set by close()

  // Waiting: a wake-up (message, new async waiter, close) moves epoch_ and notifies cv_.
  std::mutex wait_mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> epoch_{0};
  std::list<AsyncWaiter> async_;  // under wait_mu_

  std::mutex listen_mu_;
  Connection* listen_conn_ = nullptr;  // under listen_mu_: the subscribed connection
  std::thread listener_;
  std::thread async_thread_;

  // The last script refusal on this thread (see by_id()).
  static thread_local Reply refusal_;
  static thread_local Status refused_;
};

thread_local Reply RedisQueue::refusal_;
thread_local Status RedisQueue::refused_;

}  // namespace

Result<std::unique_ptr<Queue>> open_redis(const RedisOptions& options) {
  auto bad = [](const std::string& why) {
    return Status(Errc::invalid_argument, "redis options: " + why);
  };
  Result<Endpoint> ep = parse_url(options.url);
  if (!ep) return ep.status();
  if (options.queue.empty() || options.queue.size() > 64 ||
      options.queue.find_first_of("{}:") != std::string::npos)
    return bad("queue must be 1 to 64 bytes without '{', '}' or ':', got '" + options.queue + "'");
  if (options.shards < 1 || options.shards > 1024)
    return bad("shards must be between 1 and 1024, got " + std::to_string(options.shards));
  if (options.claim_batch < 1 || options.claim_batch > 1000)
    return bad("claim_batch must be between 1 and 1000, got " + std::to_string(options.claim_batch));
  if (options.connections < 1 || options.connections > 64)
    return bad("connections must be between 1 and 64, got " + std::to_string(options.connections));
  if (std::string why = Rules::check(Limits{options.max_delay, options.max_body_bytes,
                                            options.default_ttr, options.default_retry});
      !why.empty())
    return bad(why);
  for (auto [name, d] : {std::pair{"connect_timeout", options.connect_timeout},
                         {"call_timeout", options.call_timeout},
                         {"reconnect_min", options.reconnect_min},
                         {"reconnect_max", options.reconnect_max},
                         {"sweep", options.sweep}})
    if (d <= Duration::zero() || d > std::chrono::hours(1))
      return bad(std::string(name) + " must be positive and at most 1h, got " + format_duration(d));
  if (options.reconnect_max < options.reconnect_min)
    return bad("reconnect_max must be at least reconnect_min");
  auto q = std::make_unique<RedisQueue>(options, std::move(*ep));
  if (Status s = q->start(); !s.ok()) return s;
  return std::unique_ptr<Queue>(std::move(q));
}

}  // namespace delayq
