// Lateness and what fires when on the Redis backend (docs/redis.md, "Lateness and what fires
// when"), against a private redis-server (tests/support/redis_server.h). Time is the server's: the claim
// script measures each delivery against its own TIME, the stats script counts the windows from
// it, and the client reads no clock for either. In real time only lower bounds are asserted; the
// bucket rule itself is the engine's (the bounds are compared with the script's text).
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "delayq/redis.h"
#include "redis/lua_sources.h"
#include "redis_server.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using testing::RedisServer;

class RedisTiming : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.started()) << server_.log();
    q_ = open().value();
  }
  Result<std::unique_ptr<Queue>> open(size_t shards = 2, uint32_t claim_batch = 1,
                                      const std::string& queue = "timing") {
    RedisOptions o;
    o.url = server_.url();
    o.queue = queue;
    o.shards = shards;
    o.claim_batch = claim_batch;
    o.limits.max_delay = 30 * 24h;
    return open_redis(o);
  }
  Delivery take(const std::string& topic) {
    auto d = q_->reserve(topic, 10s);
    EXPECT_TRUE(d.ok()) << d.status().to_string();
    return d.ok() ? *d : Delivery{};
  }
  static uint64_t below(const Lateness& l, Duration d) {
    uint64_t n = 0;
    for (size_t i = 0; i < Lateness::kBounds.size() && Lateness::kBounds[i] < d; ++i)
      n += l.buckets[i];
    return n;
  }

  RedisServer server_;
  std::unique_ptr<Queue> q_;
};

TEST(RedisLateness, TheScriptsBoundsAreTheEngines) {
  const std::string prelude(redis::lua::files()[0].text);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(prelude, m, std::regex(R"(LATE_BOUNDS = \{([^}]*)\})")));
  std::vector<int64_t> script;
  const std::string list = m[1].str();
  const std::regex number("[0-9]+");
  for (std::sregex_iterator it(list.begin(), list.end(), number), end; it != end; ++it)
    script.push_back(std::stoll(it->str()));
  std::vector<int64_t> engine;
  for (Duration b : Lateness::kBounds)
    engine.push_back(std::chrono::duration_cast<std::chrono::microseconds>(b).count());
  EXPECT_EQ(script, engine);
}

TEST_F(RedisTiming, LatenessIsMeasuredOnTheServerAndSharedByEveryClient) {
  ASSERT_TRUE(q_->push({.topic = "t", .id = "a", .retry = RetryPolicy::fixed(1s, 3)}).ok());
  std::this_thread::sleep_for(40ms);
  Delivery d = take("t");
  ASSERT_TRUE(q_->nack(d.token, 0ms).ok());
  std::this_thread::sleep_for(40ms);
  d = take("t");
  EXPECT_EQ(d.attempt, 2u);
  ASSERT_TRUE(q_->ack(d.token).ok());
  // Another client of the queue sees the same counts: they live in the server.
  auto other = open();
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  for (Queue* q : {q_.get(), other->get()}) {
    const Stats st = q->stats();
    EXPECT_EQ(st.topics.count("t"), 0u);
    ASSERT_EQ(st.timing.count("t"), 1u) << "an empty topic keeps its lateness";
    for (const Lateness* l : {&st.timing.at("t").first, &st.timing.at("t").retry}) {
      EXPECT_EQ(l->count, 1u);
      EXPECT_EQ(below(*l, 40ms), 0u) << "ready 40 ms before it was taken";
      EXPECT_GE(l->sum_seconds, 0.040 - 1e-6);
      EXPECT_LT(l->sum_seconds, 60.0);
      EXPECT_EQ(l->clamped, 0u);
    }
  }
}

TEST_F(RedisTiming, ABatchedClaimCountsEveryJobItTakes) {
  auto q = open(1, 8, "batched");
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  q_ = std::move(q).value();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(q_->push({.topic = "b", .id = std::to_string(i)}).ok());
  std::this_thread::sleep_for(20ms);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(q_->ack(take("b").token).ok());
  const Lateness l = q_->stats().timing.at("b").first;
  EXPECT_EQ(l.count, 5u);
  EXPECT_EQ(below(l, 20ms), 0u);
}

TEST_F(RedisTiming, DelayedJobsAreCountedByTheWindowTheyFallDueIn) {
  int n = 0;
  for (Duration d : {Duration(30s), Duration(40s), Duration(10min), Duration(2h), Duration(3 * 24h),
                     Duration(10 * 24h)})
    ASSERT_TRUE(q_->push({.topic = "w", .id = "w" + std::to_string(n++), .delay = d}).ok());
  ASSERT_TRUE(q_->push({.topic = "w", .id = "now"}).ok());
  Stats st = q_->stats();
  EXPECT_EQ(st.topics.at("w").delayed, 6u);
  EXPECT_EQ(st.timing.at("w").due, (DueWindows{2, 1, 1, 1, 1}));
  ASSERT_TRUE(q_->reschedule("w5", SystemClock::instance().now() + 20s).ok());
  ASSERT_TRUE(q_->cancel("w2").ok());
  EXPECT_EQ(q_->stats().timing.at("w").due, (DueWindows{3, 0, 1, 1, 0}));
}

TEST_F(RedisTiming, OldestReadyIsHowLongTheFrontOfTheLineHasBeenDue) {
  ASSERT_TRUE(q_->push({.topic = "o", .id = "first"}).ok());
  std::this_thread::sleep_for(30ms);
  const Duration waited = q_->stats().timing.at("o").oldest_ready;
  EXPECT_GE(waited, 30ms);
  EXPECT_LT(waited, 60s);
  EXPECT_EQ(take("o").id, "first");
  EXPECT_EQ(q_->stats().timing.at("o").oldest_ready, 0s);
}

// docs/redis.md, "Lateness": a shard keeps the lateness counters of the 1024 topics emptied most
// recently, and of the paused ones and those with jobs; the one emptied longest ago goes first.
TEST_F(RedisTiming, TheLatenessOfTopicsEmptiedLongAgoIsForgottenBeyond1024) {
  auto q = open(1, 1, "gone");
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  q_ = std::move(q).value();
  const auto cycle = [&](const std::string& topic) {
    ASSERT_TRUE(q_->push({.topic = topic}).ok());
    ASSERT_TRUE(q_->ack(take(topic).token).ok());
  };
  cycle("held");
  ASSERT_TRUE(q_->pause("held").ok());  // empty and paused: kept however long
  cycle("again");                        // emptied first of all
  cycle("t0");
  ASSERT_TRUE(q_->push({.topic = "again", .delay = 1h}).ok());  // holds a job again: kept
  for (int i = 1; i <= 1024; ++i) cycle("t" + std::to_string(i));
  Stats st = q_->stats();
  EXPECT_EQ(st.timing.size(), 1026u) << "held, again and the 1024 emptied most recently";
  EXPECT_EQ(st.timing.count("t0"), 0u) << "emptied longest ago, beyond the 1024";
  for (const char* kept : {"held", "again", "t1", "t1024"}) {
    ASSERT_EQ(st.timing.count(kept), 1u) << kept;
    EXPECT_EQ(st.timing.at(kept).first.count, 1u) << kept;
  }
  ASSERT_TRUE(q_->resume("held").ok());  // empty, resumed: emptied now
  st = q_->stats();
  EXPECT_EQ(st.timing.count("t1"), 0u);
  EXPECT_EQ(st.timing.count("held"), 1u);
  EXPECT_EQ(st.timing.size(), 1025u);
}

}  // namespace
}  // namespace delayq
