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
#include "redis/args.h"
#include "redis/claim_ahead.h"
#include "redis/job_calls.h"
#include "redis/keys.h"
#include "redis/listener.h"
#include "redis/router.h"
#include "redis/waiting.h"
#include "redis/replies.h"
#include "redis/rules.h"
#include "redis/scripts.h"

namespace delayq {

namespace {

using namespace redis;
using Steady = std::chrono::steady_clock;


Status closed_error() { return Status(Errc::closed, "the queue is closed"); }

std::vector<std::string> wake_channels(const KeyLayout& keys) {
  std::vector<std::string> out;
  for (const ShardKeys& sh : keys.shards()) out.push_back(sh.wake);
  return out;
}

uint64_t random_seed() {
  std::random_device rd;
  return uint64_t{rd()} << 32 | rd();
}


class RedisQueue final : public Queue {
 public:
  RedisQueue(const RedisOptions& opt, Endpoint ep)
      : opt_(opt),
        rules_(Limits{opt.max_delay, opt.max_body_bytes, opt.default_ttr, opt.default_retry}),
        keys_(opt.queue, opt.shards),
        router_(std::move(ep),
              NodeOptions{opt.connections, opt.connect_timeout, opt.call_timeout,
                          opt.reconnect_min, opt.reconnect_max},
              &library()),
        common_(opt.max_delay, opt.seed ? opt.seed : random_seed()),
        jobs_(keys_, router_, common_, rules_),
        ahead_(opt.claim_batch),
        listener_(
            wake_channels(keys_), [this] { return router_.endpoints(); },
            [this] { waiting_.wake(); }, {opt.connect_timeout, opt.reconnect_min, opt.reconnect_max}),
        waiting_([this](std::span<const std::string> topics) { return look(topics); },
                 [this](std::span<const std::string> topics) { return try_claim(topics); }) {
    // A generated id: a base-36 counter that starts at the time of opening in nanoseconds, then
    // '-' and this opening's number (start()), so that two openings never draw the same id,
    // whatever their wall clocks say.
    next_id_.store(static_cast<uint64_t>(SystemClock::instance().now().time_since_epoch().count()));
  }

  ~RedisQueue() override { close(); }

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
    listener_.start();
    waiting_.start();
    return {};
  }

  Result<std::string> push(JobSpec spec) override {
    if (closed_.load()) return closed_error();
    const bool generated = spec.id.empty();
    for (;;) {
      if (generated) spec.id = to_base36(next_id_.fetch_add(1)) + "-" + id_tag_;
      if (Status s = rules_.check_push(spec, SystemClock::instance().now()); !s.ok()) return s;
      const ShardKeys& sh = shard_for(spec.id);
      std::vector<std::string> args = common_(sh);
      add_job_args(spec, /*with_topic=*/true, opt_.default_ttr, opt_.default_retry, args);
      Result<Reply> r = router_.eval(sh.slot, kPush, sh.with_topic(spec.topic), args);
      if (!r) return unsent(r.status(), spec.id, generated);
      Result<std::optional<JobState>> taken = read_push(*r);
      if (!taken) return taken.status();
      if (!*taken) {
        jobs_.remember(spec.id, spec.topic);
        return spec.id;
      }
      // A generated id that is taken already: draw the next one.
      if (!generated) return rules_.duplicate(spec.id, **taken);
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
        std::vector<std::string> args = common_(keys_.shard(sh));
        args.push_back(topic);
        args.push_back(std::to_string(g.size()));
        for (size_t i : g)
          add_job_args(specs[i], /*with_topic=*/false, opt_.default_ttr, opt_.default_retry, args);
        calls.emplace_back(keys_.shard(sh).with_topic(topic), std::move(args));
      }
      std::vector<Result<Reply>> r = router_.eval_each(keys_.shard(sh).slot, kPushMany, calls);
      for (size_t c = 0; c < groups[sh].size(); ++c)
        settle_group(r[c], groups[sh][c], specs, generated, out);
    }
    return out;
  }

  // The results of one push_many run's jobs, from its reply or from why there is none.
  void settle_group(const Result<Reply>& r, const std::vector<size_t>& g,
                    std::vector<JobSpec>& specs, const std::vector<bool>& generated,
                    std::vector<Result<std::string>>& out) {
    Result<std::vector<std::optional<JobState>>> taken =
        r ? read_push_many(*r, g.size()) : Result<std::vector<std::optional<JobState>>>(r.status());
    for (size_t k = 0; k < g.size(); ++k) {
      const size_t i = g[k];
      JobSpec& spec = specs[i];
      if (!r) {
        out[i] = unsent(r.status(), spec.id, generated[i]);
      } else if (!taken) {
        out[i] = taken.status();
      } else if (!(*taken)[k]) {
        jobs_.remember(spec.id, spec.topic);
        out[i] = spec.id;
      } else if (generated[i]) {
        spec.id.clear();  // draw another
        out[i] = push(std::move(spec));
      } else {
        out[i] = rules_.duplicate(spec.id, *(*taken)[k]);
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
    return waiting_.wait(topics, timeout, nullptr);
  }

  void reserve_async(std::vector<std::string> topics, Duration timeout,
                     std::function<void(Result<Delivery>)> done, std::stop_token stop) override {
    waiting_.wait_async(std::move(topics), timeout, std::move(done), std::move(stop));
  }

  Status ack(const Token& t) override {
    // A consumer of this topic holding no jobs ahead will reserve again next: the same script
    // run takes its next jobs (one round trip per job instead of two). Only with claim_batch > 1,
    // which is the caller's consent to jobs being leased before a reserve() asks for them.
    const std::string topic = opt_.claim_batch > 1 ? jobs_.topic_of(t.id) : std::string();
    if (const uint32_t want = ahead_.refill_wanted(topic); want > 0) {
      Result<Reply> r = about(delivery(kAckClaim, t), {fence(t), std::to_string(want), topic});
      if (!r) return r.status();
      jobs_.forget(t.id);
      Result<std::vector<Delivery>> more = read_ack_claim(std::move(*r));
      if (!more) return more.status();
      remember_topics(*more);
      keep(std::move(*more));
      return {};
    }
    Result<Reply> r = about(delivery(kAck, t), {fence(t)});
    if (!r) return r.status();
    jobs_.forget(t.id);
    return {};
  }

  Status nack(const Token& t, std::optional<Duration> delay) override {
    if (closed_.load()) return closed_error();
    if (Status s = rules_.check_nack_delay(delay, SystemClock::instance().now()); !s.ok()) return s;
    return about(delivery(kNack, t), {fence(t), delay ? std::to_string(ceil_us(*delay)) : ""})
        .status();
  }

  Status dead_letter(const Token& t) override {
    return about(delivery(kDeadLetter, t), {fence(t)}).status();
  }

  Status release(const Token& t) override {
    return about(delivery(kRelease, t), {fence(t)}).status();
  }

  Result<TimePoint> touch(const Token& t) override {
    Result<Reply> r = about(delivery(kTouch, t), {fence(t)});
    if (!r) return r.status();
    return read_touch(*r);
  }

  Status cancel(std::string_view id) override {
    Result<Reply> r = about({.script = kCancel, .id = id}, {});
    if (!r) return r.status();
    jobs_.forget(id);
    return {};
  }

  Result<JobInfo> get(std::string_view id) override {
    Result<Reply> r = about({.script = kGet, .id = id}, {});
    if (!r) return r.status();
    return read_get(std::move(*r));
  }

  Status reschedule(std::string_view id, TimePoint when) override {
    const int64_t when_us = ceil_us(when);
    return about({.script = kReschedule,
                  .id = id,
                  .when = when,
                  .when_us = when_us,
                  .client_now = SystemClock::instance().now()},
                 {std::to_string(when_us)})
        .status();
  }

  Result<std::vector<JobInfo>> list_dead(std::string_view topic, size_t limit) override {
    if (closed_.load()) return closed_error();
    std::vector<JobInfo> all;
    if (limit == 0) return all;
    const std::string lim = std::to_string(std::min<size_t>(limit, 1000000000));
    for (const ShardKeys& sh : keys_.shards()) {
      std::vector<std::string> args = common_(sh);
      args.push_back(lim);
      Result<Reply> r = router_.eval(sh.slot, kListDead, sh.with_topic(topic), args);
      if (!r) return r.status();
      read_dead_list(std::move(*r), topic, &all);
    }
    if (keys_.size() > 1)
      std::stable_sort(all.begin(), all.end(),
                       [](const JobInfo& a, const JobInfo& b) { return a.due < b.due; });
    if (all.size() > limit) all.resize(limit);
    return all;
  }

  Status requeue_dead(std::string_view id) override {
    return about({.script = kRequeueDead, .id = id}, {}).status();
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
        std::vector<std::string> args = common_(sh);
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
    if (closed_.exchange(true)) return;
    waiting_.close();
    listener_.stop();
    give_back(ahead_.close());
    {
      Stats last = stats();
      std::lock_guard lock(final_stats_mu_);
      final_stats_ = std::move(last);
    }
    router_.close();
    // The waiting thread finishes its waiters with `closed` and ends; it cannot join itself.
    waiting_.join();
  }

 protected:
  Result<Delivery> reserve_interruptible(std::span<const std::string> topics, Duration timeout,
                                         const std::atomic<bool>& stop) override {
    Result<Delivery> r = waiting_.wait(topics, timeout, &stop);
    // A consume() loop ends on any error but timeout: while the server is away, it keeps
    // waiting instead.
    if (r.is(Errc::unavailable))
      return Status(Errc::timeout, "redis unavailable: " + r.status().message());
    return r;
  }

  void wake_waiters() override { waiting_.interrupt(); }

 private:
  std::mutex final_stats_mu_;
  std::optional<Stats> final_stats_;  // set by close()

  const ShardKeys& shard_for(std::string_view id) const { return keys_.shard(keys_.shard_of(id)); }

  // The push script's ARGV index of the body (after the common arguments, id and topic), for
  // the caller to take back when it needs the spec again.
  static constexpr size_t kBodyArg = 5;

  // A call about one job: refused after close(); refusals in the engine's words (JobCalls).
  Result<Reply> about(const JobCall& call, const std::vector<std::string>& args) {
    if (closed_.load()) return closed_error();
    return jobs_.run(call, args);
  }
  static JobCall delivery(ScriptId script, const Token& t) {
    return {.script = script, .id = t.id, .token = &t};
  }
  static std::string fence(const Token& t) { return std::to_string(t.fence); }

  // requeue_dead_topic / purge_dead: each shard, a batch per call until none are left.
  Result<uint64_t> over_dead(ScriptId script, std::string_view topic) {
    if (closed_.load()) return closed_error();
    uint64_t n = 0;
    for (const ShardKeys& sh : keys_.shards()) {
      for (;;) {
        Result<Reply> r = router_.eval(sh.slot, script, sh.with_topic(topic), common_(sh));
        if (!r) return r.status();
        Result<DeadBatch> batch = read_dead_batch(*r, script);
        if (!batch) return batch.status();
        n += batch->done;
        if (batch->done == 0 || batch->left == 0) break;
      }
    }
    return n;
  }

  // ---- reserving and waiting ----

  // One pass of the claim script over the shards, from a rotating start, taking up to `want`
  // jobs from the first shard that has any: the first is the result, the others go to `more`.
  // When none was ready, the earliest due time or lease deadline of the topics says when to
  // look again (at most a sweep away, in case a wake-up message is lost).
  Attempt try_claim(std::span<const std::string> topics, uint32_t want = 1,
                    std::vector<Delivery>* more = nullptr) {
    std::optional<Duration> next;
    const size_t n = keys_.size();
    const size_t start = n == 1 ? 0 : next_shard_.fetch_add(1) % n;
    for (size_t i = 0; i < n; ++i) {
      const ShardKeys& sh = keys_.shard((start + i) % n);
      std::vector<std::string> k = sh.base;
      for (const std::string& t : topics) sh.add_topic(t, k);
      std::vector<std::string> args = common_(sh);
      args.push_back(std::to_string(topics.size()));
      args.push_back(std::to_string(want));
      Result<Reply> r = router_.eval(sh.slot, kClaim, std::move(k), std::move(args));
      Result<Claimed> got = r ? read_claim(std::move(*r)) : Result<Claimed>(r.status());
      // Unavailable: the node paces its reconnections, look again soon.
      if (!got) return {got.status(), opt_.reconnect_min};
      if (got->jobs.empty()) {
        if (const std::optional<Duration> w = got->next; w && (!next || *w < *next)) next = *w;
        continue;
      }
      remember_topics(got->jobs);
      Attempt found{std::move(got->jobs.front())};
      if (more) std::move(got->jobs.begin() + 1, got->jobs.end(), std::back_inserter(*more));
      return found;
    }
    return {engine::reserve_timeout(topics), next ? std::min(*next, opt_.sweep) : opt_.sweep};
  }

  // A look of a blocking reserve(): a job kept ahead, else a claim (of several jobs ahead,
  // when ClaimAhead says so).
  Attempt look(std::span<const std::string> topics) {
    if (std::optional<Delivery> d = take_kept(topics)) return {std::move(*d)};
    std::vector<Delivery> more;
    Attempt a = try_claim(topics, ahead_.claim_size(topics), &more);
    keep(std::move(more));
    return a;
  }

  // The topics of jobs handed out, for the calls about them (JobCalls).
  void remember_topics(const std::vector<Delivery>& jobs) {
    for (const Delivery& d : jobs) jobs_.remember(d.id, d.topic);
  }

  // ---- jobs taken ahead (claim_batch > 1) ----

  // A kept job for `topics` (ClaimAhead::take); the stale ones found on the way are given back.
  std::optional<Delivery> take_kept(std::span<const std::string> topics) {
    std::vector<Delivery> stale;
    std::optional<Delivery> out = ahead_.take(topics, &stale);
    for (const Delivery& d : stale) (void)nack(d.token, Duration::zero());
    return out;
  }

  void keep(std::vector<Delivery> more) { give_back(ahead_.keep(std::move(more))); }

  // Jobs leased to this client, back to their topic: a failed attempt, as a lease running out.
  void give_back(const std::vector<Delivery>& jobs) {
    for (const Delivery& d : jobs) (void)jobs_.run(delivery(kNack, d.token), {fence(d.token), "0"});
  }

  RedisOptions opt_;
  Rules rules_;
  KeyLayout keys_;
  Router router_;
  CommonArgs common_;
  JobCalls jobs_;
  std::string id_tag_;
  std::atomic<uint64_t> next_id_{0};
  std::atomic<uint32_t> next_shard_{0};
  std::atomic<bool> closed_{false};

  ClaimAhead ahead_;

  Listener listener_;
  // Last: destroyed first, its thread joined before anything its looks use goes.
  Waiting waiting_;

};


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
