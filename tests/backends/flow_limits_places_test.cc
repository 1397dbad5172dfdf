// Concurrency limits (TopicLimits::max_in_flight) on every backend, on a ManualClock: the cap
// holds and each way out of `reserved` lets exactly one more through, waking a blocked
// reserve(); limits changed and cleared at run time; limits kept across a restart; an engine of
// four shards shares one topic's bucket and cap. Rates: flow_limits_test.cc (same binary).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "flow_limits.h"

namespace delayq::flow {
namespace {

std::string id_of(int i) {
  return "j" + std::to_string(10 + i);
}  // sorts as pushed

TEST_P(Flow, TheConcurrencyCapHoldsAndEveryExitFreesAPlace) {
  for (int i = 0; i < 12; ++i) push({.topic = "t", .id = id_of(i), .ttr = 1h});
  set_limits_of(q(), "t", TopicLimits{.max_in_flight = 2});
  std::deque<Delivery> held;  // oldest first
  for (int i = 0; i < 2; ++i) {
    auto d = q().reserve("t", 0ms);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    held.push_back(*d);
    advance(1s);
  }
  EXPECT_EQ(take("t"), "");
  const std::vector<std::pair<std::string, std::function<Status(const Delivery&)>>> exits = {
      {"ack", [&](const Delivery& d) { return q().ack(d.token); }},
      {"nack", [&](const Delivery& d) { return q().nack(d.token, 1h); }},
      {"release", [&](const Delivery& d) { return q().release(d.token); }},
      {"dead_letter", [&](const Delivery& d) { return q().dead_letter(d.token); }},
      {"cancel", [&](const Delivery& d) { return q().cancel(d.id); }},
  };
  for (const auto& [name, exit] : exits) {
    advance(1s);  // every lease ends at its own instant
    Blocked waiter(q(), "t");
    EXPECT_FALSE(waiter.returned_within(50ms)) << name << ": past the cap";
    const Status s = exit(held.front());
    ASSERT_TRUE(s.ok()) << name << ": " << s.to_string();
    held.pop_front();
    EXPECT_EQ(waiter.id().rfind("j", 0), 0u) << name << " did not wake the waiting consumer";
    held.push_back(waiter.delivery());
    EXPECT_EQ(take("t"), "") << name << " let more than one through";
    EXPECT_EQ(flow_of(q(), "t").in_flight, 2u) << name;
  }
  // The oldest lease runs out; the other, a second younger at least, does not.
  Blocked waiter(q(), "t");
  EXPECT_FALSE(waiter.returned_within(50ms));
  advance(held.front().lease_deadline - now());
  EXPECT_EQ(waiter.id().rfind("j", 0), 0u) << "a lease that ran out did not wake the consumer";
  EXPECT_EQ(take("t"), "");
  EXPECT_EQ(flow_of(q(), "t").in_flight, 2u);
}

TEST_P(Flow, LimitsCanBeChangedAndClearedAtRunTime) {
  for (int i = 0; i < 6; ++i) push({.topic = "t", .id = id_of(i), .ttr = 1h});
  set_limits_of(q(), "t", rate(1, 1h, 1));
  expect_next(take("t"), id_of(0));
  {
    // Raised to one a second: the next token comes a second after the change, not an hour.
    Blocked waiter(q(), "t");
    EXPECT_FALSE(waiter.returned_within(50ms));
    set_limits_of(q(), "t", rate(1, 1s, 1));
    advance(999ms);
    EXPECT_FALSE(waiter.returned_within(50ms));
    advance(1ms);
    expect_next(waiter.id(), id_of(1));
  }
  {
    // Spent again; clearing the limits lets the waiting consumer through at once.
    Blocked waiter(q(), "t");
    EXPECT_FALSE(waiter.returned_within(50ms));
    ASSERT_TRUE(q().clear_topic_limits("t").ok());
    expect_next(waiter.id(), id_of(2));
  }
  EXPECT_FALSE(q().stats().flow.contains("t"));
  expect_next(take("t"), id_of(3));
  expect_next(take("t"), id_of(4));
  // A cap installed at run time counts the jobs already reserved: five, so it is full.
  set_limits_of(q(), "t", TopicLimits{.max_in_flight = 5});
  EXPECT_EQ(flow_of(q(), "t").in_flight, 5u);
  EXPECT_EQ(take("t"), "");
  Blocked waiter(q(), "t");
  EXPECT_FALSE(waiter.returned_within(50ms));
  set_limits_of(q(), "t", TopicLimits{.max_in_flight = 6});  // raised: the waiter goes
  expect_next(waiter.id(), id_of(5));
  EXPECT_EQ(flow_of(q(), "t").in_flight, 6u);
}

// Limits are kept like a pause; the bucket starts full after a restart (tokens are not kept),
// in_flight counts the jobs still reserved, the throttled counts start at 0. On Redis the bucket
// and the counts are the queue's keys, shared by its clients, and are kept as they were.
TEST_P(Flow, LimitsSurviveARestart) {
  if (!backend_->keeps_jobs()) GTEST_SKIP() << "the memory engine keeps nothing across a reopen";
  const TopicLimits a{.rate = TopicLimits::Rate{.count = 2, .per = 1s, .burst = 3},
                      .max_in_flight = 5};
  const TopicLimits idle{.max_in_flight = 1};
  set_limits_of(q(), "a", a);
  set_limits_of(q(), "idle", idle);
  set_limits_of(q(), "gone", idle);
  ASSERT_TRUE(q().clear_topic_limits("gone").ok());
  for (int i = 0; i < 4; ++i) push({.topic = "a", .id = id_of(i), .ttr = 1h});
  auto first = q().reserve("a", 0ms);
  ASSERT_TRUE(first.ok());
  expect_next(take("a"), id_of(1));
  expect_next(take("a"), id_of(2));
  EXPECT_EQ(take("a"), "");  // the bucket is empty
  EXPECT_EQ(flow_of(q(), "a"), (TopicFlow{.limits = a, .in_flight = 3, .throttled_rate = 1}));
  reopen();
  const bool kept = backend_->bucket_survives_reopen();
  const uint32_t tokens = kept ? 0 : 3;
  uint64_t throttled = kept ? 1 : 0;
  const Stats st = q().stats();
  EXPECT_EQ(st.flow,
            (std::map<std::string, TopicFlow>{
                {"a", TopicFlow{.limits = a, .tokens = tokens, .in_flight = 3,
                                .throttled_rate = throttled}},
                {"idle", TopicFlow{.limits = idle}}}));
  ASSERT_TRUE(q().ack(first->token).ok());
  EXPECT_EQ(flow_of(q(), "a").in_flight, 2u);
  if (kept) {
    EXPECT_EQ(take("a"), "") << "the kept bucket is still empty";
    advance(1500ms);  // refilled to its burst, at 2 a second
    ++throttled;
  }
  expect_next(take("a"), id_of(3));
  EXPECT_EQ(flow_of(q(), "a"),
            (TopicFlow{.limits = a, .tokens = 2, .in_flight = 3, .throttled_rate = throttled}));
}

// One topic over four shards (its jobs spread by id): one bucket and one cap for the queue.
// Four threads take and ack while the clock stands still: exactly `burst` hand-outs in all (a
// bucket per shard would give up to four times as many), and never more than the cap at once.
TEST(FlowShards, FourShardsShareOneTopicsBucketAndCap) {
  ManualClock clock{start_time()};
  EngineOptions o;
  o.clock = &clock;
  o.limits = flow_limits();
  o.shards = 4;
  o.seed = 7;
  auto opened = Engine::open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  Queue& q = **opened;
  for (int i = 0; i < 400; ++i) ASSERT_TRUE(q.push({.topic = "t", .id = id_of(i), .ttr = 1h}).ok());
  auto run = [&q](int tries) {
    std::atomic<int> holding{0}, most{0}, handed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < tries; ++i) {
          Result<Delivery> d = q.reserve("t", 0ms);
          if (!d.ok()) continue;
          const int now_holding = ++holding;
          int seen = most.load();
          while (seen < now_holding && !most.compare_exchange_weak(seen, now_holding)) {
          }
          ++handed;
          std::this_thread::yield();
          --holding;  // before the ack: `holding` never counts more than are reserved
          EXPECT_TRUE(q.ack(d->token).ok());
        }
      });
    for (std::thread& t : threads) t.join();
    return std::pair{handed.load(), most.load()};
  };
  set_limits_of(q, "t",
                TopicLimits{.rate = TopicLimits::Rate{.count = 5, .per = 1h, .burst = 5},
                            .max_in_flight = 3});
  EXPECT_EQ(run(200).first, 5);
  EXPECT_EQ(flow_of(q, "t").tokens, 0u);
  EXPECT_EQ(flow_of(q, "t").in_flight, 0u);
  set_limits_of(q, "t", TopicLimits{.max_in_flight = 3});
  const auto [handed, most] = run(50);  // at most 200 of the 395 jobs left
  EXPECT_GT(handed, 3);
  EXPECT_LE(most, 3);
  // Without acks: three reserved, spread over the shards, and then no more.
  int reserved = 0;
  for (int i = 0; i < 20; ++i) reserved += q.reserve("t", 0ms).ok() ? 1 : 0;
  EXPECT_EQ(reserved, 3);
  EXPECT_EQ(flow_of(q, "t").in_flight, 3u);
}

}  // namespace
}  // namespace delayq::flow
