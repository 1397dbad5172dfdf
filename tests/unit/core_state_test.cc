// The core keeps no state for topics and retry policies that nothing refers to any more: a
// client pushing to ever new topic names or retry lists does not grow it (docs/semantics.md,
// "Topics that are gone"). Plain `now` values, no clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/core.h"

namespace delayq::engine {
namespace {

using namespace std::chrono_literals;

const TimePoint kStart = TimePoint(std::chrono::sys_days(std::chrono::year{2026} / 3 / 1));

CoreOptions WithIdle(uint32_t idle) {
  CoreOptions o;
  o.idle_topics = idle;
  return o;
}

std::vector<std::string> one(const std::string& t) { return {t}; }

// Each job ends a different way; every one of them lets go of its topic and its policy.
void finish(Core& c, const std::string& topic, const std::string& id, int how, TimePoint now) {
  switch (how % 5) {
    case 0: {  // reserved and acked
      Result<Delivery> d = c.reserve(one(topic), now);
      ASSERT_TRUE(d.ok()) << id;
      ASSERT_TRUE(c.ack(d->token, now).ok());
      break;
    }
    case 1:  // cancelled while ready
      ASSERT_TRUE(c.cancel(id, now).ok());
      break;
    case 2: {  // dead-lettered, then purged
      Result<Delivery> d = c.reserve(one(topic), now);
      ASSERT_TRUE(d.ok()) << id;
      ASSERT_TRUE(c.dead_letter(d->token, now).ok());
      ASSERT_EQ(c.purge_dead(topic, now), 1u);
      break;
    }
    case 3:  // moved out (a disk tier's evict)
      ASSERT_TRUE(c.evict(id, now).ok());
      break;
    default: {  // its retries run out, then purged
      Result<Delivery> d = c.reserve(one(topic), now);
      ASSERT_TRUE(d.ok()) << id;
      ASSERT_TRUE(c.nack(d->token, 0ms, now).ok());
      d = c.reserve(one(topic), now);
      ASSERT_TRUE(d.ok()) << id;
      ASSERT_TRUE(c.nack(d->token, 0ms, now).ok());
      ASSERT_EQ(c.purge_dead(topic, now), 1u);
    }
  }
}

TEST(CoreState, FreshTopicsAndRetryPoliciesOfFinishedJobsAreNotKept) {
  EXPECT_EQ(CoreOptions{}.idle_topics, 1024u) << "the number docs/semantics.md gives";
  Core c(WithIdle(8), kStart);
  TimePoint now = kStart;
  for (int i = 0; i < 4000; ++i) {
    const std::string topic = "t" + std::to_string(i), id = "j" + std::to_string(i);
    JobSpec s{.topic = topic, .id = id};
    s.retry = RetryPolicy::list({std::chrono::milliseconds(1 + i)});  // a fresh policy each
    ASSERT_TRUE(c.push(std::move(s), now).ok());
    finish(c, topic, id, i, now);
    if (HasFatalFailure()) return;
    now += 1ms;
    ASSERT_LE(c.topic_slots(), 9u) << "after " << i + 1 << " topics";
    ASSERT_LE(c.policy_slots(), 2u) << "after " << i + 1 << " policies";
  }
  EXPECT_EQ(c.jobs(), 0u);
  Stats st;
  c.add_stats(st, now);
  EXPECT_TRUE(st.topics.empty());
  // The 8 topics emptied last are kept; 5 of them had deliveries (cancelled and evicted jobs
  // had none), so they show their lateness.
  EXPECT_EQ(st.timing.size(), 5u);
  for (const auto& [topic, t] : st.timing) EXPECT_EQ(t.first.count, 1u) << topic;
  EXPECT_EQ(st.pushed, 4000u) << "the queue-wide totals keep counting";
}

TEST(CoreState, ATopicEmptiedLongestAgoIsForgottenFirstAndOneInUseNever) {
  Core c(WithIdle(2), kStart);
  ASSERT_TRUE(c.push({.topic = "busy", .id = "busy", .delay = 1h}, kStart).ok());
  for (const char* t : {"a", "b", "c"}) {
    ASSERT_TRUE(c.push({.topic = t, .id = t}, kStart).ok());
    Result<Delivery> d = c.reserve(one(t), kStart + 5ms);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(c.ack(d->token, kStart + 5ms).ok());
  }
  Stats st;
  c.add_stats(st, kStart + 5ms);
  EXPECT_FALSE(st.timing.contains("a")) << "emptied first, beyond the 2 idle topics kept";
  ASSERT_TRUE(st.timing.contains("b"));
  ASSERT_TRUE(st.timing.contains("c"));
  EXPECT_EQ(st.timing["c"].first.count, 1u);
  ASSERT_TRUE(st.topics.contains("busy"));
  EXPECT_EQ(st.topics["busy"].delayed, 1u);
  EXPECT_EQ(st.timing["busy"].due.next_day, 1u);
  EXPECT_EQ(c.topic_slots(), 4u) << "busy, b and c, and a's slot, free for the next";
  // A topic used again leaves the idle ones: "b" is now the oldest idle and goes first.
  ASSERT_TRUE(c.push({.topic = "c", .id = "c2", .delay = 1h}, kStart + 5ms).ok());
  ASSERT_TRUE(c.push({.topic = "d", .id = "d"}, kStart + 5ms).ok());
  Result<Delivery> d = c.reserve(one("d"), kStart + 5ms);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(c.ack(d->token, kStart + 5ms).ok());
  ASSERT_TRUE(c.cancel("c2", kStart + 5ms).ok());
  Stats st2;
  c.add_stats(st2, kStart + 5ms);
  EXPECT_FALSE(st2.timing.contains("b"));
  EXPECT_TRUE(st2.timing.contains("c"));
  EXPECT_TRUE(st2.timing.contains("d"));
  EXPECT_EQ(st2.timing["c"].first.count, 1u) << "its lateness survived its second job";
  EXPECT_EQ(c.topic_slots(), 4u) << "d took a's slot";
}

TEST(CoreState, APausedTopicIsKeptWhilePausedAndGoesWhenResumedAndIdle) {
  Core c(WithIdle(0), kStart);
  c.set_paused("p", true, kStart);
  c.restore_paused("q");
  for (int i = 0; i < 100; ++i) {
    const std::string t = "t" + std::to_string(i);
    ASSERT_TRUE(c.push({.topic = t, .id = t}, kStart).ok());
    ASSERT_TRUE(c.cancel(t, kStart).ok());
  }
  EXPECT_LE(c.topic_slots(), 3u);
  Stats st;
  c.add_stats(st, kStart);
  ASSERT_EQ(st.topics.size(), 2u);
  EXPECT_TRUE(st.topics["p"].paused);
  EXPECT_TRUE(st.topics["q"].paused);
  // A job pushed to a paused topic and taken out again leaves it paused.
  ASSERT_TRUE(c.push({.topic = "p", .id = "x"}, kStart).ok());
  EXPECT_FALSE(c.reserve(one("p"), kStart).ok());
  ASSERT_TRUE(c.cancel("x", kStart).ok());
  Stats st2;
  c.add_stats(st2, kStart);
  EXPECT_TRUE(st2.topics["p"].paused);
  c.set_paused("p", false, kStart);
  c.set_paused("q", false, kStart);
  c.set_paused("never-paused", false, kStart);
  Stats st3;
  c.add_stats(st3, kStart);
  EXPECT_TRUE(st3.topics.empty());
  EXPECT_TRUE(st3.timing.empty());
  // Pausing again starts from scratch, and holds.
  c.set_paused("p", true, kStart);
  ASSERT_TRUE(c.push({.topic = "p", .id = "y"}, kStart).ok());
  EXPECT_FALSE(c.reserve(one("p"), kStart).ok());
}

// Random calls over many topics and policies against a model of what must be kept: the topics
// with a job or paused, and the policies of live jobs.
TEST(CoreState, SlotsStayWithinWhatLiveJobsAndPausesNeedUnderRandomCalls) {
  constexpr uint32_t kIdle = 3;
  std::mt19937_64 rng(7);
  Core c(WithIdle(kIdle), kStart);
  TimePoint now = kStart;
  std::map<std::string, std::pair<std::string, int>> jobs;  // id -> topic, policy
  std::set<std::string> paused;
  size_t peak_topics = 0, peak_policies = 0;
  uint64_t next = 0;
  for (int step = 0; step < 4000; ++step) {
    const std::string topic = "t" + std::to_string(rng() % 40);
    const int r = static_cast<int>(rng() % 10);
    if (r < 4) {
      const std::string id = "j" + std::to_string(++next);
      const int policy = static_cast<int>(rng() % 30);
      JobSpec s{.topic = topic, .id = id, .delay = std::chrono::milliseconds(rng() % 50)};
      if (policy > 0) s.retry = RetryPolicy::fixed(std::chrono::milliseconds(policy), 1);
      ASSERT_TRUE(c.push(std::move(s), now).ok());
      jobs[id] = {topic, policy};
    } else if (r < 6) {
      Result<Delivery> d = c.reserve(one(topic), now);
      if (d) {
        if (rng() % 2) ASSERT_TRUE(c.ack(d->token, now).ok());
        else ASSERT_TRUE(c.nack(d->token, std::nullopt, now).ok());  // 1 attempt: dead
        if (!c.get(d->id, now)) jobs.erase(d->id);
      }
    } else if (r < 7) {
      for (uint64_t n = c.purge_dead(topic, now); n > 0; --n) {
      }
      for (auto it = jobs.begin(); it != jobs.end();)
        it = it->second.first == topic && !c.get(it->first, now) ? jobs.erase(it) : std::next(it);
    } else if (r < 8 && !jobs.empty()) {
      auto it = jobs.lower_bound("j" + std::to_string(rng() % next));
      if (it == jobs.end()) it = jobs.begin();
      ASSERT_TRUE(c.cancel(it->first, now).ok());
      jobs.erase(it);
    } else if (r < 9) {
      const bool p = rng() % 2;
      c.set_paused(topic, p, now);
      if (p) paused.insert(topic);
      else paused.erase(topic);
    } else {
      now += std::chrono::milliseconds(rng() % 100);
    }
    std::set<std::string> topics = paused;
    std::set<int> policies{0};
    for (const auto& [id, tp] : jobs) {
      topics.insert(tp.first);
      policies.insert(tp.second);
    }
    peak_topics = std::max(peak_topics, topics.size() + kIdle);
    peak_policies = std::max(peak_policies, policies.size());
    ASSERT_EQ(c.jobs(), jobs.size()) << "step " << step;
    ASSERT_LE(c.topic_slots(), peak_topics) << "step " << step;
    ASSERT_LE(c.policy_slots(), peak_policies) << "step " << step;
    if (step % 500 == 0) {
      Stats st;
      c.advance(now);
      c.add_stats(st, now);
      for (const std::string& t : paused) EXPECT_TRUE(st.topics[t].paused) << t;
      for (const auto& [t, ts] : st.topics) EXPECT_EQ(ts.paused, paused.contains(t)) << t;
    }
  }
}

}  // namespace
}  // namespace delayq::engine

namespace delayq::engine {
namespace {

// What the engine's stats() reads without the shard's lock (Core::publish into the core's view,
// then TopicView::add_to) is what add_stats() computes from the whole core, whatever changed
// in between: topics made, emptied, forgotten and made again, paused, jobs falling due.
// Random calls on 30 topics that come and go (3 idle kept), paused and resumed, jobs due up to a
// day ahead, time moving on.
class RandomCalls {
 public:
  explicit RandomCalls(uint64_t seed) : rng_(seed) {}
  Core c{WithIdle(3), kStart};
  TimePoint now = kStart;

  void step() {
    const std::string topic = "t" + std::to_string(rng_() % 30);
    const int r = static_cast<int>(rng_() % 12);
    if (r < 3) {
      const auto delay = rng_() % 3 ? std::chrono::milliseconds(rng_() % 5000)
                                    : std::chrono::milliseconds(rng_() % 100'000'000);
      (void)c.push({.topic = topic, .id = "j" + std::to_string(++next_), .delay = delay}, now);
    } else if (r < 6) {
      if (Result<Delivery> d = c.reserve(one(topic), now)) held_.push_back(d->token);
    } else if (r < 8 && !held_.empty()) {
      const size_t k = rng_() % held_.size();
      switch (rng_() % 4) {
        case 0: (void)c.ack(held_[k], now); break;
        case 1: (void)c.nack(held_[k], std::nullopt, now); break;
        case 2: (void)c.release(held_[k], now); break;
        default: (void)c.dead_letter(held_[k], now); break;
      }
      held_[k] = held_.back();
      held_.pop_back();
    } else if (r < 9) {
      // Mostly one of the last jobs pushed, so that topics empty often.
      (void)c.cancel("j" + std::to_string(next_ - std::min<uint64_t>(next_, rng_() % 8)), now);
      (void)c.purge_dead(topic, now);
    } else if (r < 10) {
      c.set_paused(topic, rng_() % 2, now);
    } else {
      now += std::chrono::milliseconds(rng_() % (rng_() % 8 ? 2000 : 4'000'000));
    }
  }
  uint64_t draw() { return rng_(); }

  // The view (its lock held) against add_stats() of the whole core, both as of `now`.
  void expect_view_agrees(int step) {
    Stats from_view, whole;
    c.view().add_to(from_view, now);
    c.add_stats(whole, now);
    ASSERT_EQ(from_view.topics, whole.topics) << "step " << step;
    ASSERT_EQ(from_view.timing, whole.timing) << "step " << step;
  }

 private:
  std::mt19937_64 rng_;
  uint64_t next_ = 0;
  std::vector<Token> held_;
};

TEST(CoreState, TheViewThatStatsReadsAgreesWithTheWholeCoreUnderRandomCalls) {
  RandomCalls calls(11);
  for (int step = 0; step < 6000; ++step) {
    calls.step();
    if (calls.draw() % 40 == 0) {  // a stats() call
      calls.c.advance(calls.now);
      const std::unique_lock l = calls.c.view().lock();
      EXPECT_TRUE(calls.c.publish());
      calls.expect_view_agrees(step);
      if (HasFatalFailure()) return;
    }
  }
}

// stats() publishes a few topics at a time, the shard's lock released in between (so that no
// push waits for all of them), and reads the view after the piece that left nothing to publish:
// topics copied in earlier pieces that changed since were listed again, so the view agrees with
// the core as of that last piece, whatever the calls in between did.
TEST(CoreState, AViewPublishedPieceByPieceAgreesAsOfTheLastPiece) {
  RandomCalls calls(13);
  int pieces = 0;
  for (int step = 0; step < 6000; ++step) {
    calls.step();
    if (calls.draw() % 40 != 0) continue;
    const std::unique_lock l = calls.c.view().lock();
    for (;;) {
      calls.c.advance(calls.now);
      ++pieces;
      if (calls.c.publish(1 + calls.draw() % 4)) break;
      for (uint64_t k = calls.draw() % 4; k > 0; --k) calls.step();  // calls between pieces
    }
    calls.expect_view_agrees(step);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(pieces, 300) << "most stats() calls took several pieces";
}

}  // namespace
}  // namespace delayq::engine

namespace delayq::engine {
namespace {

// The view holds a fitted copy of each topic's due bins (DueBins::fitted): it answers as the
// bins it was copied from, at any `now`, whatever their tables went through before.
TEST(CoreState, FittedDueBinsAnswerAsTheBinsTheyCopy) {
  std::mt19937_64 rng(5);
  DueBins bins;
  std::vector<TimePoint> due;
  for (int round = 0; round < 40; ++round) {
    const int adds = static_cast<int>(rng() % 400), removes = static_cast<int>(rng() % 400);
    for (int i = 0; i < adds; ++i) {
      due.push_back(kStart + std::chrono::milliseconds(rng() % (rng() % 2 ? 120'000 : 900'000'000)));
      bins.add(due.back());
    }
    for (int i = 0; i < removes && !due.empty(); ++i) {
      const size_t k = rng() % due.size();
      bins.remove(due[k]);
      due[k] = due.back();
      due.pop_back();
    }
    const DueBins copy = bins.fitted();
    for (const TimePoint now : {kStart - 1s, kStart, kStart + 59s, kStart + 3h, kStart + 200h}) {
      const uint64_t later = static_cast<uint64_t>(
          std::count_if(due.begin(), due.end(), [&](TimePoint d) { return d > now; }));
      if (later != due.size()) continue;  // windows() expects no job due by `now`
      ASSERT_EQ(copy.windows(now, due.size()), bins.windows(now, due.size())) << round;
    }
  }
}

}  // namespace
}  // namespace delayq::engine
