// Priorities in the core (core.h: Topic::ready for the default priority, PriorityLines for the
// others), on plain `now` values: every reserve() hands out the most urgent ready job of the
// listed topics by (priority, due time), ties to the first listed topic, whatever moved the jobs
// before (retries, release(), dead letters requeued, pauses, cancels); stats() shows the oldest
// ready job across the lines; a resume wakes consumers for any priority.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/core.h"

namespace delayq::engine {
namespace {

using namespace std::chrono_literals;

const TimePoint kStart = TimePoint(std::chrono::sys_days(std::chrono::year{2026} / 3 / 1));

// A few priorities on both sides of the default, as a client would use them.
constexpr uint32_t kPriorities[] = {0, 5, 1023, kDefaultPriority, kDefaultPriority,
                                    kDefaultPriority, 1025, 2000, UINT32_MAX};

class Model {
 public:
  explicit Model(uint64_t seed) : rng_(seed) {}
  Core c{CoreOptions{}, kStart};
  TimePoint now = kStart;

  std::string topic() { return "t" + std::to_string(rng_() % 4); }
  uint64_t draw() { return rng_(); }

  void push() {
    const std::string id = "j" + std::to_string(++next_);
    const uint32_t priority = kPriorities[rng_() % std::size(kPriorities)];
    JobSpec s{.topic = topic(), .id = id, .delay = std::chrono::milliseconds(rng_() % 40),
              .retry = RetryPolicy::fixed(std::chrono::milliseconds(rng_() % 30), 3),
              .priority = priority};
    ASSERT_TRUE(c.push(std::move(s), now).ok());
    live_[id] = priority;
  }

  // reserve() over 1 to 3 topics, checked against what get() says of every live job.
  void reserve() {
    std::vector<std::string> topics;
    for (uint64_t n = 1 + rng_() % 3; n > 0; --n) topics.push_back(topic());
    // The candidates: ready jobs of listed, unpaused topics; the best by (priority, due), then
    // the first listed topic.
    std::optional<std::pair<uint32_t, TimePoint>> best;
    size_t best_rank = SIZE_MAX;
    for (const auto& [id, priority] : live_) {
      Result<JobInfo> info = c.get(id, now);
      ASSERT_TRUE(info.ok()) << id;
      ASSERT_EQ(info->priority, priority) << id;
      const auto listed = std::find(topics.begin(), topics.end(), info->topic);
      if (info->state != JobState::ready || listed == topics.end() || paused_[info->topic]) continue;
      const std::pair<uint32_t, TimePoint> key{priority, info->due};
      const size_t rank = static_cast<size_t>(listed - topics.begin());
      if (!best || key < *best || (key == *best && rank < best_rank)) {
        best = key;
        best_rank = rank;
      }
    }
    Result<Delivery> d = c.reserve(topics, now);
    if (!best) {
      ASSERT_TRUE(d.is(Errc::timeout)) << d.status().to_string();
      return;
    }
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_EQ(std::make_pair(d->priority, d->due), *best) << d->id;
    EXPECT_EQ(d->topic, topics[best_rank]) << d->id;
    EXPECT_EQ(d->priority, live_.at(d->id));
    held_.push_back(d->token);
  }

  // Ends or returns one held delivery, in any of the ways a consumer can.
  void settle() {
    if (held_.empty()) return;
    const size_t k = rng_() % held_.size();
    const Token t = held_[k];
    held_[k] = held_.back();
    held_.pop_back();
    switch (rng_() % 4) {
      case 0:  // refused when the job was cancelled meanwhile
        if (c.ack(t, now).ok()) live_.erase(t.id);
        return;
      case 1:
        (void)c.nack(t, rng_() % 2 ? std::optional<Duration>(std::chrono::milliseconds(rng_() % 20))
                                   : std::nullopt,
                     now);
        return;
      case 2:
        (void)c.release(t, now);
        return;
      default:
        (void)c.dead_letter(t, now);
    }
  }

  void other() {
    const std::string t = topic();
    switch (rng_() % 5) {
      case 0:
        c.set_paused(t, !paused_[t], now);
        paused_[t] = !paused_[t];
        return;
      case 1:
        (void)c.requeue_dead_topic(t, now);
        return;
      case 2:
        if (!live_.empty()) {
          auto it = live_.lower_bound("j" + std::to_string(rng_() % (next_ + 1)));
          if (it == live_.end()) it = live_.begin();
          ASSERT_TRUE(c.cancel(it->first, now).ok());
          live_.erase(it);
        }
        return;
      default:
        now += std::chrono::milliseconds(rng_() % 25);
    }
  }

  // stats()' oldest ready job of each topic: the earliest due time among its ready jobs, at
  // whatever priority.
  void expect_oldest_ready() {
    std::map<std::string, TimePoint> oldest;
    for (const auto& [id, priority] : live_) {
      Result<JobInfo> info = c.get(id, now);
      if (info->state != JobState::ready) continue;
      auto [it, fresh] = oldest.emplace(info->topic, info->due);
      if (!fresh) it->second = std::min(it->second, info->due);
    }
    Stats st;
    c.advance(now);
    c.add_stats(st, now);
    for (const auto& [t, timing] : st.timing) {
      const auto o = oldest.find(t);
      EXPECT_EQ(timing.oldest_ready, o == oldest.end() ? Duration::zero() : now - o->second) << t;
    }
  }

 private:
  std::mt19937_64 rng_;
  uint64_t next_ = 0;
  std::map<std::string, uint32_t> live_;  // id -> priority
  std::map<std::string, bool> paused_;
  std::vector<Token> held_;
};

TEST(CorePriority, EveryReserveTakesTheMostUrgentReadyJobUnderRandomCalls) {
  for (const uint64_t seed : {1, 2, 3}) {
    Model m(seed);
    int delivered = 0;
    for (int step = 0; step < 3000; ++step) {
      const uint64_t r = m.draw() % 10;
      if (r < 3) {
        m.push();
      } else if (r < 6) {
        m.reserve();
        ++delivered;
      } else if (r < 8) {
        m.settle();
      } else {
        m.other();
      }
      if (step % 100 == 0) m.expect_oldest_ready();
      if (HasFailure()) return;
    }
    EXPECT_GT(delivered, 500);
  }
}

// A topic whose only ready jobs have other priorities than the default wakes consumers when it
// is resumed (Effects::made_ready), as one with default-priority jobs does.
TEST(CorePriority, AResumeWakesConsumersForJobsOfAnyPriority) {
  for (const uint32_t priority : {0u, kDefaultPriority, UINT32_MAX}) {
    Core c(CoreOptions{}, kStart);
    c.set_paused("t", true, kStart);
    ASSERT_TRUE(c.push({.topic = "t", .id = "a", .priority = priority}, kStart).ok());
    (void)c.take_effects();
    c.set_paused("t", false, kStart);
    EXPECT_TRUE(c.take_effects().made_ready) << priority;
    Result<Delivery> d = c.reserve(std::vector<std::string>{"t"}, kStart);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->priority, priority);
  }
}

// A priority line that empties is taken out and its place reused: a topic that sees one new
// priority after another keeps handing out in order.
TEST(CorePriority, LinesComeAndGoAsPrioritiesDo) {
  Core c(CoreOptions{}, kStart);
  const std::vector<std::string> t{"t"};
  for (uint32_t p = 0; p < 3000; p += 7) {
    ASSERT_TRUE(c.push({.topic = "t", .id = "a" + std::to_string(p), .priority = p}, kStart).ok());
    ASSERT_TRUE(c.push({.topic = "t", .id = "b" + std::to_string(p), .priority = p + 1}, kStart).ok());
    EXPECT_EQ(c.reserve(t, kStart)->id, "a" + std::to_string(p));
    EXPECT_EQ(c.reserve(t, kStart)->id, "b" + std::to_string(p));
    EXPECT_TRUE(c.reserve(t, kStart).is(Errc::timeout));
  }
}

}  // namespace
}  // namespace delayq::engine
