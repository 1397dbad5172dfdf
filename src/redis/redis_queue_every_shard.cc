// RedisQueue's calls run on every shard (see redis_queue.h for the map of its files): a topic's
// dead letters (list_dead(), requeue_dead_topic(), purge_dead(), over_dead()), pause and resume
// (set_paused()), health() and stats() (add_shard_stats()).
#include <algorithm>
#include <utility>

#include "common/rules.h"
#include "common/timing.h"
#include "redis/redis_queue.h"

namespace delayq::redis {

Result<std::vector<JobInfo>> RedisQueue::list_dead(std::string_view topic, size_t limit) {
  if (shut()) return shut_status();
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
  rules::merge_dead_lists(all, keys_.size(), limit);
  return all;
}

Result<uint64_t> RedisQueue::requeue_dead_topic(std::string_view topic) {
  return over_dead(kRequeueDeadTopic, topic);
}

Result<uint64_t> RedisQueue::purge_dead(std::string_view topic) {
  return over_dead(kPurgeDead, topic);
}

// requeue_dead_topic / purge_dead: each shard, a batch per call until none are left.
Result<uint64_t> RedisQueue::over_dead(ScriptId script, std::string_view topic) {
  if (shut()) return shut_status();
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

Status RedisQueue::set_paused(std::string_view topic, bool paused) {
  if (shut()) return shut_status();
  if (Status s = rules::check_topic(topic); !s.ok()) return s;
  for (const ShardKeys& sh : keys_.shards()) {
    std::vector<std::string> args = common_(sh);
    args.emplace_back(topic);
    args.emplace_back(paused ? "1" : "0");
    Result<Reply> r = router_.eval(sh.slot, kPause, sh.base, std::move(args));
    if (!r) return r.status();
    if (r->elements.empty() || r->elements[0].as_int(-1) != kOk) return bad_reply(kPause);
  }
  return Status();
}

// One PING for a single server; in a cluster one per shard, each to the node that holds it.
Status RedisQueue::health() {
  if (shut()) return shut_status();
  for (const ShardKeys& sh : keys_.shards()) {
    Result<Reply> r = router_.command(sh.slot, {"PING"});
    if (!r) return r.status();
    if (r->type == Reply::Type::error)
      return Status(Errc::unavailable, "redis answered PING with an error: " + r->str);
    if (!router_.cluster()) break;
  }
  return Status();
}

Stats RedisQueue::stats() {
  // In a forked child, nothing: its locks may be held by threads that stayed in the parent, and
  // its connections are the parent's (common/fork_guard.h); health() says why.
  if (waiting_.forked()) return {};
  {
    // After close(), the snapshot taken as it closed: the jobs stay in Redis, but this client no
    // longer talks to it.
    std::lock_guard lock(final_stats_mu_);
    if (final_stats_) return *final_stats_;
  }
  Stats st;
  for (const ShardKeys& sh : keys_.shards()) {
    add_shard_stats(sh, st);
    add_shard_flow(sh, st);
  }
  return st;
}

void RedisQueue::add_shard_stats(const ShardKeys& sh, Stats& st) {
  Result<Reply> names = router_.command(sh.slot, {"HKEYS", sh.topics});
  if (!names) return;  // stats() cannot fail: an unreachable shard counts nothing
  std::vector<std::string> topics;
  for (const Reply& n : names->elements) topics.push_back(n.str);
  // A few hundred topics per call keeps each script short.
  for (size_t from = 0; from < topics.size() || from == 0; from += 200) {
    const size_t to = std::min(topics.size(), from + 200);
    std::vector<std::string> k = sh.base;
    for (size_t i = from; i < to; ++i) sh.add_topic(topics[i], k);
    std::vector<std::string> args = common_(sh);
    args.push_back(std::to_string(to - from));
    Result<Reply> r = router_.eval(sh.slot, kTopicStats, k, args);
    if (!r || r->elements.size() != to - from + 2) return;
    for (size_t i = from; i < to; ++i) {
      const Reply& row = r->elements[1 + i - from];
      const std::optional<TopicStats> counts = read_topic_counts(row);
      if (!counts || *counts == TopicStats{}) continue;
      TopicStats& o = st.topics[topics[i]];
      o.delayed += counts->delayed;
      o.ready += counts->ready;
      o.reserved += counts->reserved;
      o.dead += counts->dead;
      if (const std::optional<TopicTiming> t = read_topic_timing(row))
        timing::add(st.timing[topics[i]], *t);
    }
    // The totals come with every call; take them from the last one.
    if (to == topics.size()) read_totals(r->elements.back(), st);
    if (topics.empty()) break;
  }
  // Paused topics are listed even without jobs.
  if (Result<Reply> paused = router_.command(sh.slot, {"SMEMBERS", sh.paused}))
    for (const Reply& t : paused->elements) st.topics[t.str].paused = true;
}

}  // namespace delayq::redis
