// Rate limits on the Redis backend (Queue::set_topic_limits, a token bucket kept by the claim
// script, lua/flow.lua), where Redis has its own: the rules every backend shares run in
// flow_limits_test.cc (Redis and RedisShards4 instances). Here, on a ManualClock through
// RedisOptions::clock: exactly the rate for a period that is not a whole number of µs (counted in
// ns); on the server's own clock a blocked reserve() woken at the token by the claim's reply; a
// waiting reserve() counted as throttled once; a rate beyond what the scripts count exactly
// refused; on four shards, two clients share one limit and a place nobody frees frees itself at
// its deadline. Places, changes and batches: redis_limits_places_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redis_limits.h"

namespace delayq::redis_limits {
namespace {

struct RateCase {
  uint32_t count;
  Duration per;
  uint32_t burst;
  int jobs;
  Duration step;  // each advance; odd, so that it falls between tokens
};

// The count after each advance over 10 simulated minutes is min(jobs, burst + floor(t * count /
// per)) exactly, computed here in integers, for a period that is not a whole number of µs (the
// scripts then count in ns; flow_limits_test.cc has periods of whole µs); the limits read back
// from stats() as set.
TEST_F(RedisLimits, ATokenBucketHandsOutBurstThenExactlyTheRate) {
  for (const RateCase& c : {RateCase{7, 3'000'000'500ns, 3, 1500, 41ms}}) {
    const std::string topic = "t" + std::to_string(c.count);
    for (int i = 0; i < c.jobs; ++i) push({.topic = topic, .ttr = 1h});
    set_limits(topic, rate(c.count, c.per, c.burst));
    EXPECT_EQ(flow_of(topic).limits, rate(c.count, c.per, c.burst));
    const TimePoint t0 = now();
    int taken = 0;
    while (true) {
      while (!take(topic).empty()) ++taken;
      const int64_t t = (now() - t0).count();
      const int64_t allowed = c.burst + t * int64_t{c.count} / c.per.count();
      ASSERT_EQ(taken, std::min<int64_t>(c.jobs, allowed)) << topic << " at +" << t << " ns";
      if (now() - t0 >= 10min) break;
      advance(c.step);
    }
  }
}

// On the server's clock nobody moves a clock: the claim's reply says when the next token is due,
// and the waiter sleeps that long (its sweep is a minute). 20 per second: 50 ms apart by the
// server's clock (the lease deadlines, ttr after each hand-out), and well within a second.
TEST_F(RedisLimits, OnTheServersClockABlockedReserveIsHandedTheNextTokenOnTime) {
  RedisOptions o;
  o.url = server_.url();
  o.queue = "real";
  o.sweep = 60s;
  auto opened = open_redis(o);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  Queue& rq = **opened;
  for (const char* id : {"a", "b"}) ASSERT_TRUE(rq.push({.topic = "t", .id = id, .ttr = 1h}).ok());
  ASSERT_TRUE(rq.set_topic_limits("t", rate(20, 1s, 1)).ok());
  auto first = rq.reserve("t", 0ms);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  const auto asked = std::chrono::steady_clock::now();
  auto second = rq.reserve("t", 5s);
  const auto waited = std::chrono::steady_clock::now() - asked;
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_GE(second->lease_deadline - first->lease_deadline, 50ms);
  EXPECT_LT(waited, 900ms) << "the waiter was not woken at the token's instant";
  rq.close();
}

// A reserve() that waits looks again at each move of the clock and each wake-up, and is counted
// once all the same: the client names each call, and the script counts a call once per topic.
TEST_F(RedisLimits, AWaitingReserveIsCountedAsThrottledOnce) {
  push({.topic = "t", .id = "a", .ttr = 24h});
  push({.topic = "t", .id = "b", .ttr = 24h});
  set_limits("t", rate(1, 1h, 1));
  ASSERT_EQ(take("t"), "a");
  {
    Blocked waiter(q(), "t");
    EXPECT_FALSE(waiter.returned_within(50ms));
    for (int i = 0; i < 5; ++i) {
      advance(1min);  // a look each time, no token yet
      EXPECT_FALSE(waiter.returned_within(50ms));
    }
    advance(55min);
    EXPECT_EQ(waiter.id(), "b");
  }
  EXPECT_EQ(flow_of("t").throttled_rate, 1u);
  EXPECT_EQ(take("t"), "");  // no job ready: nothing held back, nothing counted
  EXPECT_EQ(flow_of("t").throttled_rate, 1u);
  push({.topic = "t", .id = "c", .ttr = 24h});
  EXPECT_EQ(take("t"), "");  // another call, held back: counted
  EXPECT_EQ(flow_of("t").throttled_rate, 2u);
}

// Beyond what the scripts count exactly: burst × per above 2^52 µs (a day, a million tokens) is
// refused, and changes nothing (the refusals every backend shares: flow_limits_test.cc).
TEST_F(RedisLimits, ARateBeyondWhatTheScriptsCountExactlyIsRefused) {
  set_limits("t", rate(5, 1s, 2));
  const Stats before = q().stats();
  const Status huge = q().set_topic_limits("t", rate(1, 24h, 1'000'000));
  EXPECT_TRUE(huge.is(Errc::invalid_argument)) << huge.to_string();
  EXPECT_NE(huge.message().find("counts exactly"), std::string::npos) << huge.message();
  EXPECT_EQ(q().stats().flow, before.flow);
  EXPECT_TRUE(q().set_topic_limits("t", rate(1, 24h, 50'000)).ok());  // 137 years: below 2^52 µs
}

// Four shards: the topic's bucket and places are kept by the home shard, so two clients of the
// queue, taking from jobs spread over every shard, share one rate and one cap.
TEST_F(RedisLimits, TwoClientsOfFourShardsShareOneLimit) {
  auto a = open(1, 4, "shared");
  auto b = open(1, 4, "shared");
  ASSERT_TRUE(a && b);
  for (int i = 0; i < 40; ++i)
    ASSERT_TRUE(a->push({.topic = "t", .id = "j" + std::to_string(i), .ttr = 1h}).ok());
  ASSERT_TRUE(a->set_topic_limits("t", rate(5, 1h, 5)).ok());
  int handed = 0;
  for (int i = 0; i < 20; ++i) handed += (i % 2 ? a : b)->reserve("t", 0ms).ok() ? 1 : 0;
  EXPECT_EQ(handed, 5) << "a bucket per shard or per client would hand out more";
  advance(12min);  // one token
  EXPECT_TRUE(b->reserve("t", 0ms).ok());
  EXPECT_FALSE(a->reserve("t", 0ms).ok());
  // A cap of 7 (the six reserved above count) and no rate: one more, then a place frees only by an
  // exit.
  ASSERT_TRUE(b->set_topic_limits("t", TopicLimits{.max_in_flight = 7}).ok());
  std::vector<Delivery> held;
  for (int i = 0; i < 6; ++i)
    if (auto d = (i % 2 ? a : b)->reserve("t", 0ms); d.ok()) held.push_back(*d);
  EXPECT_EQ(held.size(), 1u);
  EXPECT_EQ(a->stats().flow.at("t").in_flight, 7u);
  ASSERT_TRUE(a->ack(held[0].token).ok());  // b reserved it: its place frees all the same
  EXPECT_EQ(a->stats().flow.at("t").in_flight, 6u);
  EXPECT_TRUE(a->reserve("t", 0ms).ok());
  EXPECT_FALSE(b->reserve("t", 0ms).ok());
  a->close();
  b->close();
}

// Four shards: a place is held on the home shard until its deadline. A client that reserved and
// vanished holds it until its lease runs out, and one that died between the home shard's
// admission and its claim (an admission never settled, written here by hand) until the admission
// ends; then the place frees itself, with no message from anyone.
TEST_F(RedisLimits, OnFourShardsAPlaceNobodyFreesFreesItselfAtItsDeadline) {
  auto q = open(1, 4, "crashed");
  ASSERT_TRUE(q);
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(q->push({.topic = "t", .id = "j" + std::to_string(i), .ttr = 1min}).ok());
  ASSERT_TRUE(q->set_topic_limits("t", TopicLimits{.max_in_flight = 2}).ok());
  {
    auto gone = open(1, 4, "crashed");  // reserves, then goes without a word
    ASSERT_TRUE(gone);
    ASSERT_TRUE(gone->reserve("t", 0ms).ok());
  }
  const int64_t now_us =
      std::chrono::duration_cast<std::chrono::microseconds>(now().time_since_epoch()).count();
  EXPECT_EQ(command("ZADD {dq:crashed:0}:p:t " + std::to_string(now_us + 90'000'000) +
                    " a:dead-client:1"),
            ":1");
  EXPECT_FALSE(q->reserve("t", 0ms).ok());
  EXPECT_EQ(q->stats().flow.at("t").in_flight, 2u);
  advance(1min - 1us);
  EXPECT_FALSE(q->reserve("t", 0ms).ok()) << "a place freed before its lease ran out";
  advance(1us);
  auto d = q->reserve("t", 0ms);
  EXPECT_TRUE(d.ok()) << "the lease ran out: its place frees itself";
  EXPECT_FALSE(q->reserve("t", 0ms).ok());
  advance(30s - 1us);
  EXPECT_FALSE(q->reserve("t", 0ms).ok()) << "the admission's place freed early";
  advance(1us);
  EXPECT_TRUE(q->reserve("t", 0ms).ok()) << "the admission ended: its place frees itself";
  EXPECT_EQ(q->stats().flow.at("t").in_flight, 2u);
  q->close();
}

}  // namespace
}  // namespace delayq::redis_limits
