// Rate limits (Queue::set_topic_limits, a token bucket) on every backend, on a ManualClock: a
// full bucket hands out `burst` at once, then exactly `count` per `per`, never one more; a
// throttled topic keeps its order and does not hold back other topics; a blocked reserve() wakes
// at the next token's exact instant; stats() shows exact numbers; bad limits are refused with
// the shared words (common/flow_rules.h). Places (max_in_flight), changes, restarts and shards:
// flow_limits_places_test.cc, in the same binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "common/flow_rules.h"
#include "flow_limits.h"
#include "flow_redis.h"

namespace delayq::flow {
namespace {

struct RateCase {
  uint32_t count;
  Duration per;
  uint32_t burst;
  int jobs;
  Duration step;  // each advance; odd, so that it falls between tokens
};

// The count after each advance over 10 simulated minutes is min(jobs, burst + floor(t * count /
// per)) exactly: computed here in integers, checked after draining all the queue allows. On the
// remote backends the steps are 7 times as long (259 and 791 ms).
TEST_P(Flow, ATokenBucketHandsOutBurstThenRate) {
  for (RateCase c : {RateCase{10, 1s, 5, 1000, 37ms}, RateCase{3, 7s, 2, 300, 113ms}}) {
    if (backend_->remote()) c.step *= 7;
    const std::string topic = "t" + std::to_string(c.count);
    for (int i = 0; i < c.jobs; ++i) push({.topic = topic, .ttr = 1h});
    set_limits_of(q(), topic, rate(c.count, c.per, c.burst));
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

// Hand-outs of a throttled topic come in its ready order (due order here), one per token.
TEST_P(Flow, AThrottledTopicKeepsItsOrder) {
  for (const char* id : {"e", "c", "a", "d", "b"})
    push({.topic = "t", .id = id, .delay = Duration(1s) * (id[0] - 'a' + 1)});
  advance(5s);
  set_limits_of(q(), "t", rate(1, 1s, 1));
  std::vector<std::string> got;
  for (int i = 0; i < 5; ++i) {
    got.push_back(take("t"));
    EXPECT_EQ(take("t"), "") << "a second job within one token's interval";
    advance(1s);
  }
  if (!backend_->keeps_topic_order()) std::sort(got.begin(), got.end());  // each shard's order
  EXPECT_EQ(got, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
}

// reserve() over several topics passes a throttled one over, even when its job is due first and
// it is listed first, for a spent rate and for a full cap alike.
TEST_P(Flow, ThrottledTopicsDoNotBlockOthers) {
  push({.topic = "rated", .id = "r1"});
  push({.topic = "rated", .id = "r2"});
  push({.topic = "capped", .id = "c1"});
  push({.topic = "capped", .id = "c2"});
  advance(1s);
  push({.topic = "free", .id = "f1"});
  push({.topic = "free", .id = "f2"});
  set_limits_of(q(), "rated", rate(1, 1h, 1));
  set_limits_of(q(), "capped", TopicLimits{.max_in_flight = 1});
  EXPECT_EQ(take("rated"), "r1");
  EXPECT_EQ(take("capped"), "c1");
  EXPECT_EQ(take(std::vector<std::string>{"rated", "capped", "free"}), "f1");
  EXPECT_EQ(take(std::vector<std::string>{"capped", "rated", "free"}), "f2");
  EXPECT_EQ(take(std::vector<std::string>{"rated", "capped", "free"}), "");
}

// 3 per second: after one hand-out the next token is due 333 333 334 ns later (a third of a
// second, rounded up to a whole nanosecond; on Redis, which keeps whole microseconds, 333 334 µs).
// A consumer blocked in reserve() is still waiting 1 ns before it, and is handed the job when the
// clock reaches it, with no other event.
TEST_P(Flow, ABlockedReserveWakesWhenTheNextTokenIsDue) {
  push({.topic = "t", .id = "first"});
  push({.topic = "t", .id = "second"});
  set_limits_of(q(), "t", rate(3, 1s, 1));
  ASSERT_EQ(take("t"), "first");
  const Duration token = as_kept(333'333'334ns);
  Blocked waiter(q(), "t");
  EXPECT_FALSE(waiter.returned_within(50ms));
  advance(token - 1ns);
  EXPECT_FALSE(waiter.returned_within(100ms)) << "woke 1 ns before the token";
  advance(1ns);
  EXPECT_EQ(waiter.id(), "second");
}

// A paused topic is passed over before its limits are looked at: it spends no token and counts
// no refusal; on resume the full bucket hands out its burst.
TEST_P(Flow, APausedTopicSpendsNoTokens) {
  for (int i = 0; i < 4; ++i) push({.topic = "t", .id = "j" + std::to_string(i)});
  set_limits_of(q(), "t", rate(1, 1h, 2));
  ASSERT_TRUE(q().pause("t").ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(take("t"), "");
  EXPECT_EQ(flow_of(q(), "t"), (TopicFlow{.limits = rate(1, 1h, 2), .tokens = 2}));
  ASSERT_TRUE(q().resume("t").ok());
  EXPECT_EQ(take("t"), "j0");
  EXPECT_EQ(take("t"), "j1");
  EXPECT_EQ(take("t"), "");
}

// release(): the delivery never reached a consumer, so its token goes back to the bucket and
// the job can be handed out again at once; its place is freed too.
TEST_P(Flow, AReleaseGivesItsTokenAndPlaceBack) {
  push({.topic = "t", .id = "a"});
  push({.topic = "t", .id = "b"});
  const TopicLimits limits{.rate = TopicLimits::Rate{.count = 1, .per = 1h, .burst = 1},
                           .max_in_flight = 1};
  set_limits_of(q(), "t", limits);
  auto d = q().reserve("t", 0ms);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(flow_of(q(), "t"), (TopicFlow{.limits = limits, .tokens = 0, .in_flight = 1}));
  ASSERT_TRUE(q().release(d->token).ok());
  EXPECT_EQ(flow_of(q(), "t"), (TopicFlow{.limits = limits, .tokens = 1, .in_flight = 0}));
  expect_next(take("t"), "a");
  EXPECT_EQ(take("t"), "");
}

// Exact numbers after a scripted sequence: tokens, in_flight and the refusals by cause, one per
// reserve() call and topic; a limited topic with no job is in flow, not in topics.
TEST_P(Flow, StatsShowLimitsTokensInFlightAndThrottled) {
  const TopicLimits limits{.rate = TopicLimits::Rate{.count = 2, .per = 1s, .burst = 3},
                           .max_in_flight = 2};
  set_limits_of(q(), "s", limits);
  set_limits_of(q(), "idle", TopicLimits{.max_in_flight = 4});
  for (int i = 0; i < 5; ++i) push({.topic = "s", .id = "s" + std::to_string(i), .ttr = 1h});
  EXPECT_EQ(flow_of(q(), "s"), (TopicFlow{.limits = limits, .tokens = 3}));
  auto a = q().reserve("s", 0ms);
  auto b = q().reserve("s", 0ms);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(take("s"), "");                                 // at the cap
  EXPECT_EQ(take(std::vector<std::string>{"s", "x"}), "");  // again, once for this call
  EXPECT_EQ(flow_of(q(), "s"),
            (TopicFlow{.limits = limits, .tokens = 1, .in_flight = 2, .throttled_concurrency = 2}));
  ASSERT_TRUE(q().ack(a->token).ok());
  auto c = q().reserve("s", 0ms);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(q().ack(b->token).ok());
  ASSERT_TRUE(q().ack(c->token).ok());
  EXPECT_EQ(take("s"), "");  // no token left
  EXPECT_EQ(take("s"), "");
  EXPECT_EQ(flow_of(q(), "s"), (TopicFlow{.limits = limits,
                                          .tokens = 0,
                                          .in_flight = 0,
                                          .throttled_rate = 2,
                                          .throttled_concurrency = 2}));
  advance(500ms);  // one token per 500 ms
  EXPECT_EQ(flow_of(q(), "s").tokens, 1u);
  advance(999ms);
  EXPECT_EQ(flow_of(q(), "s").tokens, 2u);
  advance(1ms);
  EXPECT_EQ(flow_of(q(), "s").tokens, 3u);
  advance(1h);
  EXPECT_EQ(flow_of(q(), "s").tokens, 3u) << "the bucket holds at most `burst`";
  const Stats st = q().stats();
  EXPECT_EQ(st.flow.at("idle"), (TopicFlow{.limits = TopicLimits{.max_in_flight = 4}}));
  EXPECT_FALSE(st.topics.contains("idle"));
  EXPECT_EQ(st.flow.size(), 2u);
}

// Each bad limit is refused with the words every backend shares, and changes nothing.
TEST_P(Flow, BadLimitsAreRefusedAndChangeNothing) {
  set_limits_of(q(), "t", rate(5, 1s, 2));
  const Stats before = q().stats();
  using R = TopicLimits::Rate;
  const Duration beyond = flow_limits().max_delay + 1ns;
  const std::vector<std::pair<std::string, TopicLimits>> bad = {
      {"t", TopicLimits{.rate = R{.count = 0, .per = 1s}}},
      {"t", TopicLimits{.rate = R{.count = 1, .per = 0s}}},
      {"t", TopicLimits{.rate = R{.count = 1, .per = -1s}}},
      {"t", TopicLimits{.rate = R{.count = 1, .per = beyond}}},
      {"t", TopicLimits{.rate = R{.count = 1, .per = 1s, .burst = 0}}},
      {"t", TopicLimits{.rate = R{.count = 1, .per = 1s, .burst = rules::kMaxBurst + 1}}},
      {"t", TopicLimits{.max_in_flight = 0}},
      {"t", TopicLimits{}},
      {"", TopicLimits{.max_in_flight = 1}},
      {std::string(256, 'x'), TopicLimits{.max_in_flight = 1}},
  };
  for (const auto& [topic, limits] : bad) {
    const Status want = rules::check_topic_limits(topic, limits, flow_limits().max_delay);
    ASSERT_FALSE(want.ok());
    const Status got = q().set_topic_limits(topic, limits);
    EXPECT_TRUE(got.is(Errc::invalid_argument)) << got.to_string();
    EXPECT_EQ(got.message(), want.message());
  }
  EXPECT_NE(q().set_topic_limits("t", TopicLimits{}).message().find("set a rate or max_in_flight"),
            std::string::npos);
  EXPECT_TRUE(q().clear_topic_limits("").is(Errc::invalid_argument));
  EXPECT_TRUE(q().clear_topic_limits("never-limited").ok());
  EXPECT_EQ(q().stats().flow, before.flow);
}

// On the system clock nobody advances the engine: a consumer blocked on a throttled topic is
// woken by the next token's deadline itself (published like a due time, no polling). 20 per
// second: the second hand-out comes 50 ms after the first by the queue's clock, never earlier,
// and long before the 1 s a sleeper waits at most before it reads the clock again.
TEST(FlowRealClock, ABlockedReserveIsHandedTheNextTokenOnTime) {
  auto q = Engine::open({}).value();
  for (const char* id : {"a", "b"}) ASSERT_TRUE(q->push({.topic = "t", .id = id, .ttr = 1h}).ok());
  set_limits_of(*q, "t", rate(20, 1s, 1));
  auto first = q->reserve("t", 0ms);
  ASSERT_TRUE(first.ok());
  const auto asked = std::chrono::steady_clock::now();
  auto second = q->reserve("t", 5s);
  const auto waited = std::chrono::steady_clock::now() - asked;
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  const TimePoint handed_first = first->lease_deadline - 1h;
  const TimePoint handed_second = second->lease_deadline - 1h;
  EXPECT_GE(handed_second - handed_first, 50ms);
  EXPECT_LT(waited, 900ms) << "the waiter was not woken by the token's deadline";
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Backends, Flow, ::testing::ValuesIn(with_sharded_redis(backends())),
                         backend_name);

}  // namespace delayq::flow
