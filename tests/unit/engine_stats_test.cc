// The engine's stats() beside calls on other threads (docs/semantics.md, "Topics that are gone"):
// pushes, deliveries and acks on topics that come and go, on two shards, while threads call
// stats() back to back. stats() reads each shard's topics from a view copied under the shard's
// lock (src/engine/core_view.h); this checks that the two locks are taken in an order that
// cannot deadlock, that the totals only grow, and that the topics that went are not listed.
// Bounded: a few thousand calls on a ManualClock that does not move.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "delayq/clock.h"
#include "delayq/engine.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;

TEST(EngineStats, StatsBesidePushesOnTopicsThatComeAndGoListsOnlyWhatRemains) {
  ManualClock clock(TimePoint(std::chrono::sys_days(std::chrono::year{2026} / 3 / 1)));
  EngineOptions o;
  o.clock = &clock;
  o.shards = 2;
  auto opened = Engine::open(o);
  ASSERT_TRUE(opened.ok());
  Engine& e = **opened;
  ASSERT_TRUE(e.pause("p").ok());

  constexpr int kWriters = 2, kJobs = 1500;
  std::atomic<int> writers_left{kWriters};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w)
    threads.emplace_back([&, w] {
      for (int i = 0; i < kJobs; ++i) {
        const std::string topic = "w" + std::to_string(w) + "-" + std::to_string(i);
        if (!e.push({.topic = topic, .id = topic}).ok()) failed = true;
        Result<Delivery> d = e.reserve(topic, 0ms);
        if (!d || !e.ack(d->token).ok()) failed = true;
        if (i % 10 == 0 && !e.push({.topic = "keep", .delay = 1h}).ok()) failed = true;
      }
      writers_left.fetch_sub(1);
    });
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&] {
      uint64_t last_pushed = 0;
      while (writers_left.load() > 0) {
        const Stats st = e.stats();
        if (st.pushed < last_pushed || st.acked > st.delivered) failed = true;
        last_pushed = st.pushed;
        if (!st.topics.contains("p") || !st.topics.at("p").paused) failed = true;
      }
    });
  for (std::thread& t : threads) t.join();
  ASSERT_FALSE(failed.load());

  const Stats st = e.stats();
  EXPECT_EQ(st.pushed, uint64_t{kWriters} * (kJobs + kJobs / 10));
  EXPECT_EQ(st.acked, uint64_t{kWriters} * kJobs);
  ASSERT_EQ(st.topics.size(), 2u) << "the paused topic and the one still holding jobs";
  EXPECT_TRUE(st.topics.at("p").paused);
  EXPECT_EQ(st.topics.at("keep").delayed, uint64_t{kWriters} * (kJobs / 10));
  // Each shard keeps the 1024 topics emptied last for their lateness, and no more.
  EXPECT_LE(st.timing.size(), 2u * 1024 + 1);
  EXPECT_GE(st.timing.size(), 1024u);
}

// More topics changed than stats() copies under one hold of a shard's lock (4096): it takes
// several, and lists every topic as of the last.
TEST(EngineStats, StatsListsEveryTopicWhenMoreChangedThanOnePieceHolds) {
  ManualClock clock(TimePoint(std::chrono::sys_days(std::chrono::year{2026} / 3 / 1)));
  EngineOptions o;
  o.clock = &clock;
  auto opened = Engine::open(o);
  ASSERT_TRUE(opened.ok());
  Engine& e = **opened;
  constexpr int kTopics = 10000;
  for (int i = 0; i < kTopics; ++i)
    ASSERT_TRUE(e.push({.topic = "t" + std::to_string(i), .delay = i % 2 ? 1h : 0ms}).ok());
  Stats st = e.stats();
  ASSERT_EQ(st.topics.size(), size_t{kTopics});
  EXPECT_EQ(st.topics["t1"].delayed, 1u);
  EXPECT_EQ(st.topics["t2"].ready, 1u);
  EXPECT_EQ(st.timing["t9999"].due.next_day, 1u);
  // Every ready one handed out and acked: 5000 topics emptied, 1024 of them kept for their
  // lateness; and an hour later the delayed ones are ready.
  for (int i = 0; i < kTopics; i += 2) {
    Result<Delivery> d = e.reserve("t" + std::to_string(i), 0ms);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(e.ack(d->token).ok());
  }
  clock.advance(1h);
  st = e.stats();
  ASSERT_EQ(st.topics.size(), size_t{kTopics / 2});
  EXPECT_EQ(st.topics["t1"].ready, 1u);
  EXPECT_EQ(st.timing.size(), size_t{kTopics / 2 + 1024});
  EXPECT_EQ(st.timing["t9998"].first.count, 1u) << "emptied last: kept";
  EXPECT_EQ(st.timing["t9999"].oldest_ready, 0ms);
  EXPECT_EQ(st.pushed, uint64_t{kTopics});
}

}  // namespace
}  // namespace delayq
