// Pause and resume against a reference model: thousands of random calls (push, reserve over one
// or several topics, ack, nack, pause, resume, moves of a ManualClock) on the in-memory engine,
// each answer checked against a small model that knows what docs/semantics.md promises: a paused
// topic hands out nothing, its jobs keep falling due, and on resume they come out in due order
// (ties in the order their timers were set); reserve over several topics takes the earliest due
// head among the running ones (ties to the topic listed first). After every call the counts per
// topic and state, and the paused marks, of stats() must be the model's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "delayq/engine.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;

const std::vector<std::string> kTopics = {"a", "b", "c"};

// What the queue should hold: per job its topic, due time and state; per topic its ready line.
class Model {
 public:
  struct Job {
    std::string topic;
    TimePoint due;
    uint64_t armed = 0;  // when its timer was set (ties of equal due times)
    JobState state = JobState::delayed;
  };

  // A job pushed (or failed) at `now`, due after `delay`: ready at once when the delay is 0.
  void schedule(const std::string& id, const std::string& topic, Duration delay, TimePoint now) {
    Job& j = jobs_[id];
    j.topic = topic;
    j.due = now + delay;
    j.armed = ++armed_;
    j.state = JobState::delayed;
    if (delay == Duration::zero()) make_ready(id);
  }

  // Every delayed job due by `now` joins its line, in (due, armed) order.
  void advance(TimePoint now) {
    std::vector<std::string> due;
    for (const auto& [id, j] : jobs_)
      if (j.state == JobState::delayed && j.due <= now) due.push_back(id);
    std::sort(due.begin(), due.end(), [&](const std::string& x, const std::string& y) {
      const Job &a = jobs_[x], &b = jobs_[y];
      return a.due != b.due ? a.due < b.due : a.armed < b.armed;
    });
    for (const std::string& id : due) make_ready(id);
  }

  // What reserve(topics) takes: the earliest due head of the running topics, ties to the first.
  std::optional<std::string> reserve(const std::vector<std::string>& topics) {
    std::optional<std::string> best;
    for (const std::string& t : topics) {
      if (paused_.contains(t) || lines_[t].empty()) continue;
      const std::string& head = lines_[t].front();
      if (!best || jobs_[head].due < jobs_[*best].due) best = head;
    }
    if (best) {
      lines_[jobs_[*best].topic].pop_front();
      jobs_[*best].state = JobState::reserved;
    }
    return best;
  }

  void ack(const std::string& id) { jobs_.erase(id); }
  void set_paused(const std::string& topic, bool paused) {
    if (paused)
      paused_.insert(topic);
    else
      paused_.erase(topic);
  }

  // The topics as stats() should list them.
  std::map<std::string, TopicStats> topics() const {
    std::map<std::string, TopicStats> out;
    for (const auto& [id, j] : jobs_) {
      TopicStats& t = out[j.topic];
      if (j.state == JobState::delayed) ++t.delayed;
      if (j.state == JobState::ready) ++t.ready;
      if (j.state == JobState::reserved) ++t.reserved;
    }
    for (const std::string& t : paused_) out[t].paused = true;
    return out;
  }

 private:
  void make_ready(const std::string& id) {
    Job& j = jobs_[id];
    j.state = JobState::ready;
    lines_[j.topic].push_back(id);
  }

  std::map<std::string, Job> jobs_;
  std::map<std::string, std::deque<std::string>> lines_;
  std::set<std::string> paused_;
  uint64_t armed_ = 0;
};

class PauseModel : public ::testing::TestWithParam<uint64_t> {};

TEST_P(PauseModel, RandomCallsWithPausesMatchTheModel) {
  std::mt19937_64 rng(GetParam());
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  ManualClock clock;
  EngineOptions o;
  o.clock = &clock;
  o.seed = 1;
  auto q = Engine::open(o).value();
  Model model;
  std::map<std::string, Token> held;  // reserved jobs and their tokens
  const RetryPolicy retry = RetryPolicy::fixed(1s, 1000);
  int next_id = 0;
  for (int step = 0; step < 4000; ++step) {
    const size_t op = pick(100);
    const TimePoint now = clock.now();
    model.advance(now);
    if (op < 30) {
      const std::string id = "j" + std::to_string(next_id++);
      const std::string& topic = kTopics[pick(kTopics.size())];
      const Duration delay = std::chrono::milliseconds(pick(4) * 5);
      ASSERT_TRUE(
          q->push({.topic = topic, .id = id, .delay = delay, .ttr = 1h, .retry = retry}).ok());
      model.schedule(id, topic, delay, now);
    } else if (op < 55) {
      std::vector<std::string> topics = kTopics;
      std::shuffle(topics.begin(), topics.end(), rng);
      topics.resize(1 + pick(topics.size()));
      Result<Delivery> got = q->reserve(topics, 0ms);
      const std::optional<std::string> want = model.reserve(topics);
      ASSERT_EQ(got.ok() ? got->id : "(none)", want.value_or("(none)")) << "step " << step;
      if (got.ok()) held.emplace(got->id, got->token);
    } else if (op < 70 && !held.empty()) {
      auto it = std::next(held.begin(), static_cast<long>(pick(held.size())));
      if (pick(2) == 0) {
        ASSERT_TRUE(q->ack(it->second).ok());
        model.ack(it->first);
      } else {
        const Duration delay = std::chrono::milliseconds(pick(3) * 5);
        ASSERT_TRUE(q->nack(it->second, delay).ok());
        model.schedule(it->first, q->get(it->first)->topic, delay, now);
      }
      held.erase(it);
    } else if (op < 82) {
      const std::string& topic = kTopics[pick(kTopics.size())];
      const bool pause = pick(2) == 0;
      ASSERT_TRUE((pause ? q->pause(topic) : q->resume(topic)).ok());
      model.set_paused(topic, pause);
    } else {
      clock.advance(std::chrono::milliseconds(pick(12)));
      model.advance(clock.now());
    }
    ASSERT_EQ(q->stats().topics, model.topics()) << "step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, PauseModel, ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8));

}  // namespace
}  // namespace delayq
