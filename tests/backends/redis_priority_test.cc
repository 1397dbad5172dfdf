// Priorities on the Redis backend, as stored (docs/redis.md, "Key layout"): what the shared flow
// suite (flow_priority_test.cc, which runs the same rules on every backend) cannot see. A default
// record keeps its 8-element array; other priorities stand in the topic's q zset, scored by
// priority; the batched claim and push_batch follow the same order; a job leaving the ready
// state leaves q. Also the test clock hook (RedisOptions::clock): the scripts read it instead of
// the server's TIME, and its moves wake a blocked reserve().
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "delayq/redis.h"
#include "redis_server.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using testing::RedisServer;

// 2026-01-01T00:00:00Z: months behind the server's own clock whenever these tests run, so that a
// script reading TIME would find every job due.
TimePoint manual_start() { return TimePoint(1767225600s); }

class RedisPriority : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.started()) << server_.log(); }

  std::unique_ptr<Queue> open(RedisOptions o = {}) {
    o.url = server_.url();
    o.queue = "p";
    o.seed = 7;
    auto q = open_redis(o);
    EXPECT_TRUE(q.ok()) << q.status().to_string();
    return q.ok() ? std::move(q).value() : nullptr;
  }
  // A queue whose scripts read `clock` instead of the server's TIME.
  std::unique_ptr<Queue> open_on(ManualClock& clock) {
    RedisOptions o;
    o.clock = &clock;
    return open(o);
  }
  // The MessagePack array header of job `id`'s record in topic "t" (after the topic's length
  // byte and the topic): 0x98 for 8 elements, 0x99 for 9, 0x9a for 10; "" when there is none.
  std::string header_of(const std::string& id) {
    return server_.command("EVAL \"local r = redis.call('HGET', KEYS[1], ARGV[1]) "
                           "return r and string.byte(r, 3) or -1\" 1 {dq:p:0}:jobs " +
                           id);
  }
  std::string key(const std::string& kind) { return "{dq:p:0}:" + kind + ":t"; }

  RedisServer server_;
};

TEST_F(RedisPriority, DefaultRecordsKeepTheirShapeAndOtherPrioritiesStandInQ) {
  auto q = open();
  ASSERT_TRUE(q);
  ASSERT_TRUE(q->push({.topic = "t", .id = "plain"}).ok());
  ASSERT_TRUE(q->push({.topic = "t", .id = "later", .delay = 1h}).ok());
  ASSERT_TRUE(q->push({.topic = "t", .id = "urgent", .priority = 5}).ok());
  ASSERT_TRUE(q->push({.topic = "t", .id = "low-later", .delay = 1h, .priority = 2000}).ok());
  EXPECT_EQ(header_of("plain"), ":152");      // 0x98: as before priorities
  EXPECT_EQ(header_of("later"), ":152");
  EXPECT_EQ(header_of("urgent"), ":154");     // 0x9a: priority and line seq
  EXPECT_EQ(header_of("low-later"), ":153");  // 0x99: priority only, not in a line yet
  EXPECT_EQ(server_.command("ZCARD " + key("r")), ":1");
  EXPECT_EQ(server_.command("ZCARD " + key("q")), ":1");
  EXPECT_EQ(server_.command("ZCARD " + key("d")), ":2");
  EXPECT_EQ(server_.command("EVAL \"return tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, "
                            "'WITHSCORES')[2])\" 1 " + key("q")),
            ":5");  // scored by its priority
  EXPECT_EQ(q->stats().topics["t"].ready, 2u);  // both lines count

  // A ready job that leaves the ready state leaves q: cancelled, rescheduled, reserved.
  ASSERT_TRUE(q->reschedule("urgent", SystemClock::instance().now() + 1h).ok());
  EXPECT_EQ(server_.command("ZCARD " + key("q")), ":0");
  ASSERT_TRUE(q->reschedule("urgent", SystemClock::instance().now()).ok());
  EXPECT_EQ(server_.command("ZCARD " + key("q")), ":1");
  auto d = q->reserve("t", 0ms);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, "urgent");
  EXPECT_EQ(server_.command("ZCARD " + key("q")), ":0");
  ASSERT_TRUE(q->release(d->token).ok());
  EXPECT_EQ(server_.command("ZCARD " + key("q")), ":1");
  ASSERT_TRUE(q->cancel("urgent").ok());
  EXPECT_EQ(server_.command("ZCARD " + key("q")), ":0");
  EXPECT_EQ(server_.command("ZCARD " + key("r")), ":1");  // "plain" untouched throughout
}

// push_batch carries each job's priority, and a claim of several jobs of one topic
// (claim_batch) hands them out in the same order as one at a time: more urgent than the
// default, then the default's line, then less urgent; within a priority, push order.
TEST_F(RedisPriority, ABatchedClaimTakesBothLinesInPriorityOrder) {
  RedisOptions o;
  o.claim_batch = 10;
  auto q = open(o);
  ASSERT_TRUE(q);
  std::vector<JobSpec> specs{
      {.topic = "t", .id = "a"},
      {.topic = "t", .id = "b", .priority = 5},
      {.topic = "t", .id = "c", .priority = 2000},
      {.topic = "t", .id = "d", .priority = 5},
      {.topic = "t", .id = "e", .priority = 0},
      {.topic = "t", .id = "f"},
      {.topic = "t", .id = "g", .priority = 1025},
  };
  for (const auto& r : q->push_batch(specs)) ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(q->get("c")->priority, 2000u);
  std::vector<std::string> order;
  std::vector<uint32_t> prios;
  for (size_t i = 0; i < specs.size(); ++i) {
    auto d = q->reserve("t", 0ms);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    order.push_back(d->id);
    prios.push_back(d->priority);
    ASSERT_TRUE(q->ack(d->token).ok());
  }
  EXPECT_EQ(order, (std::vector<std::string>{"e", "b", "d", "a", "f", "g", "c"}));
  EXPECT_EQ(prios, (std::vector<uint32_t>{0, 5, 5, 1024, 1024, 1025, 2000}));
  EXPECT_FALSE(q->reserve("t", 0ms).ok());
}

// RedisOptions::clock: the server's TIME is months ahead of the ManualClock, so a job due in an
// hour of the manual clock would be due at once if the scripts read TIME. A reserve() blocked
// for it wakes when the clock moves (the sweep is an hour: only the move can wake it).
TEST_F(RedisPriority, ATestClockReplacesTheServersTimeAndItsMovesWakeWaiters) {
  ManualClock clock(manual_start());
  RedisOptions o;
  o.clock = &clock;
  o.sweep = 1h;
  o.limits.max_delay = 24h * 300;
  auto q = open(o);
  ASSERT_TRUE(q);
  ASSERT_TRUE(q->push({.topic = "t", .id = "x", .delay = 1h, .priority = 3}).ok());
  EXPECT_EQ(q->get("x")->due, manual_start() + 1h);
  // The client's own check reads the test clock too: beyond max_delay (300 days) of it, refused,
  // though that instant is already past by the real clock.
  EXPECT_TRUE(q->push({.topic = "t", .due_at = manual_start() + o.limits.max_delay + 1h})
                  .status()
                  .is(Errc::invalid_argument));
  EXPECT_FALSE(q->reserve("t", 0ms).ok());
  auto waiter = std::async(std::launch::async, [&] { return q->reserve("t", 60s); });
  std::this_thread::sleep_for(50ms);  // most likely asleep by now; either way it must get it
  clock.advance(1h);
  ASSERT_EQ(waiter.wait_for(30s), std::future_status::ready);
  auto d = waiter.get();
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, "x");
  EXPECT_EQ(d->priority, 3u);
  EXPECT_EQ(d->due, manual_start() + 1h);
  EXPECT_EQ(d->lease_deadline, manual_start() + 1h + Limits{}.default_ttr);
}

// stats(): a topic's ready count is both lines', and its oldest ready job is the older of their
// heads (here q's: an urgent job waiting behind nothing, older than the default line's head).
TEST_F(RedisPriority, StatsCountBothLinesAndTheOlderHead) {
  ManualClock clock(manual_start());
  auto q = open_on(clock);
  ASSERT_TRUE(q);
  ASSERT_TRUE(q->push({.topic = "t", .id = "urgent", .priority = 5}).ok());
  clock.advance(10s);
  ASSERT_TRUE(q->push({.topic = "t", .id = "plain"}).ok());
  clock.advance(1s);
  Stats st = q->stats();
  EXPECT_EQ(st.topics["t"].ready, 2u);
  EXPECT_EQ(st.timing["t"].oldest_ready, 11s);
  ASSERT_TRUE(q->reserve("t", 0ms).ok());  // takes "urgent"
  st = q->stats();
  EXPECT_EQ(st.topics["t"].ready, 1u);
  EXPECT_EQ(st.timing["t"].oldest_ready, 1s);
}

// The claim counts each delivery's lateness in the engine's buckets (Lateness::kBounds, upper
// bounds inclusive), found per job without building a field name: on the test clock each job is
// late by exactly one bound or by one µs more, against a reference that scans the bounds.
TEST_F(RedisPriority, LatenessFallsInTheEnginesBucketsAtEachBound) {
  ManualClock clock(manual_start());
  auto q = open_on(clock);
  ASSERT_TRUE(q);
  const TimePoint at = manual_start() + 5h;
  std::vector<Duration> lates{0us};
  for (Duration b : Lateness::kBounds) {
    lates.push_back(b);
    lates.push_back(b + 1us);
  }
  Lateness want;
  for (size_t i = 0; i < lates.size(); ++i) {
    ASSERT_TRUE(q->push({.topic = "t", .id = std::to_string(i), .due_at = at - lates[i]}).ok());
    size_t b = 0;
    while (b < Lateness::kBounds.size() && lates[i] > Lateness::kBounds[b]) ++b;
    ++want.buckets[b];
    ++want.count;
    want.sum_seconds += std::chrono::duration<double>(lates[i]).count();
  }
  clock.advance(5h);
  for (size_t i = 0; i < lates.size(); ++i) {
    auto d = q->reserve("t", 0ms);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    ASSERT_TRUE(q->ack(d->token).ok());
  }
  const Lateness got = q->stats().timing.at("t").first;
  EXPECT_EQ(got.buckets, want.buckets);
  EXPECT_EQ(got.count, want.count);
  EXPECT_NEAR(got.sum_seconds, want.sum_seconds, 1e-6);
  EXPECT_EQ(got.clamped, 0u);
}

// A queue's keys outlive a client upgrade: a record packed by hand as the scripts have always
// packed it (cmsgpack.pack of the whole record, a list policy with a fractional factor) is
// leased with the policy's bytes kept as they are, and its retries still follow that policy.
TEST_F(RedisPriority, ARecordPackedWholeIsLeasedAndRetriedPerItsPolicy) {
  ManualClock clock(manual_start());
  auto q = open_on(clock);
  ASSERT_TRUE(q);
  const std::string policy = "{1, 3, 0, 2.5, 0, 0.25, {7000000, 9000000}}";
  const std::string due =
      std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                         manual_start().time_since_epoch()).count());
  ASSERT_EQ(server_.command(
                "EVAL \"redis.call('HSET', KEYS[1], 'old', string.char(1) .. 't' .. "
                "cmsgpack.pack({0, 0, tonumber(ARGV[1]), 0, 30000000, 0, 1, " + policy + "})) "
                "redis.call('HSET', KEYS[2], 'old', 'hello') "
                "redis.call('HINCRBY', KEYS[3], 't', 1) "
                "return redis.call('ZADD', KEYS[4], ARGV[1], 'old')\" 4 {dq:p:0}:jobs "
                "{dq:p:0}:body {dq:p:0}:topics " + key("d") + " " + due),
            ":1");
  clock.advance(1s);
  auto d = q->reserve("t", 0ms);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, "old");
  EXPECT_EQ(d->body, "hello");
  EXPECT_EQ(d->attempt, 1u);
  EXPECT_EQ(d->max_attempts, 3u);
  EXPECT_EQ(d->due, manual_start());
  EXPECT_EQ(d->lease_deadline, manual_start() + 1s + 30s);
  EXPECT_EQ(server_.command("EVAL \"local r = redis.call('HGET', KEYS[1], 'old') "
                            "local p = cmsgpack.pack(" + policy + ") "
                            "return string.sub(r, -#p) == p and 1 or 0\" 1 {dq:p:0}:jobs"),
            ":1");
  for (uint32_t attempt = 1; attempt <= 3; ++attempt) {
    ASSERT_EQ(d->attempt, attempt);
    ASSERT_TRUE(q->nack(d->token).ok());
    auto info = q->get("old");
    ASSERT_TRUE(info.ok()) << info.status().to_string();
    if (attempt == 3) {
      EXPECT_EQ(info->state, JobState::dead);
      break;
    }
    EXPECT_EQ(info->state, JobState::delayed);
    const Duration wait = attempt == 1 ? 7s : 9s;  // the list's delays
    EXPECT_EQ(info->due, clock.now() + wait);
    clock.advance(wait);
    d = q->reserve("t", 0ms);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
  }
}

// The catch-up moves due jobs to the line without decoding their records; jobs due at one instant
// still join it in push order, whatever their ids' order in the delayed zset (a model: sorted by
// due time, then push order).
TEST_F(RedisPriority, JobsDueAtOneInstantJoinTheLineInPushOrderWhateverTheirIds) {
  ManualClock clock(manual_start());
  auto q = open_on(clock);
  ASSERT_TRUE(q);
  std::mt19937 rng(11);
  std::vector<std::pair<TimePoint, int>> model;
  std::vector<std::string> ids;
  for (int i = 0; i < 40; ++i) {
    ids.push_back(std::to_string(rng() % 100000) + "-" + std::to_string(i));
    const TimePoint due = manual_start() + 1s + std::chrono::milliseconds(rng() % 3);
    ASSERT_TRUE(q->push({.topic = "t", .id = ids.back(), .due_at = due}).ok());
    model.emplace_back(due, i);
  }
  std::sort(model.begin(), model.end());
  clock.advance(2s);
  for (const auto& [due, i] : model) {
    auto d = q->reserve("t", 0ms);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_EQ(d->id, ids[i]);
    EXPECT_EQ(d->due, due);
  }
}

}  // namespace
}  // namespace delayq
