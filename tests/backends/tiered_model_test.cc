// The disk tier against a reference model (docs/tiered-store.md): thousands of random calls go
// to the store as it is without a disk tier (the model: every job in memory, checked against the
// in-memory engine by the conformance suite) and to a store whose horizon is a minute, on one
// ManualClock, with delays, nack delays and reschedules on both sides of the horizon and clock
// jumps of seconds to hours, so that jobs cross the boundary both ways. Every answer must be the
// model's, and so must every job and the counts after each step; both are reopened together now
// and then (a reopen puts ready jobs in due order, which the model must do too). Ids are the
// caller's (generated ones and fences come from the time of opening, which differs between the
// two); each queue's own tokens are used for its own deliveries. After every step each topic's
// delayed jobs are paged through on both (list_jobs), and at each reopen the store's per-topic
// index of its disk tier must list exactly its disk records.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "reports.h"
#include "tiered_fixture.h"

namespace delayq {
namespace {

constexpr const char* kTopics[] = {"a", "b"};
constexpr int kIds = 40;

class TieredModel : public TieredStore {
 protected:
  void SetUp() override {}
  void open_model() {
    model_.reset();
    auto m = open_named("model", Duration::max());
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
  }
  void TearDown() override {
    q_.reset();
    model_.reset();
  }

  std::string id() { return "j" + std::to_string(rng_() % kIds); }
  const char* topic() { return kTopics[rng_() % 2]; }
  // Seconds to days: both sides of a one-minute horizon.
  Duration delay() {
    switch (rng_() % 5) {
      case 0:
        return Duration(0);
      case 1:
        return std::chrono::milliseconds(rng_() % 20000);
      case 2:
        return std::chrono::seconds(30 + rng_() % 60);
      default:
        return std::chrono::minutes(rng_() % (24 * 60));
    }
  }

  // The same call on both; the answers must agree.
  void same(const char* what, const Status& a, const Status& b) {
    if (std::string(what) != "get")
      log_.push_back(std::to_string(step_) + " " + what + " " + last_ + " -> " + a.to_string());
    ASSERT_EQ(a.code(), b.code()) << what << ": model " << a.to_string() << ", store "
                                  << b.to_string() << " (seed " << seed_ << ", step " << step_
                                  << ")";
  }

  void push() {
    JobSpec s{.topic = topic(), .id = id(), .body = "body " + std::to_string(rng_() % 1000)};
    if (rng_() % 4 == 0)
      s.due_at = clock_.now() + delay() - std::chrono::seconds(5);
    else
      s.delay = delay();
    if (rng_() % 3 == 0) s.retry = RetryPolicy::list({2s, 2min, 3h});
    JobSpec t = s;
    last_ =
        s.id + " " + s.topic + " due " +
        std::to_string(((s.due_at ? *s.due_at : clock_.now() + *s.delay) - clock_.now()).count() /
                       1000000) +
        " ms";
    auto a = model_->push(std::move(s));
    auto b = q_->push(std::move(t));
    same("push", a.status(), b.status());
  }
  void reserve() {
    std::vector<std::string> topics = {topic()};
    if (rng_() % 2) topics.push_back(topic());
    auto a = model_->reserve(topics, Duration(0));
    auto b = q_->reserve(topics, Duration(0));
    last_ = a ? a->id + " " : std::string();
    same("reserve", a.status(), b.status());
    if (!a) return;
    ASSERT_EQ(a->id, b->id) << "seed " << seed_ << ", step " << step_ << ": " << describe(a->id)
                            << "; " << describe(b->id);
    EXPECT_EQ(a->attempt, b->attempt);
    EXPECT_EQ(a->due, b->due);
    EXPECT_EQ(a->lease_deadline, b->lease_deadline);
    EXPECT_EQ(a->body, b->body);
    held_[a->id] = {a->token, b->token};
  }
  void settle() {
    if (held_.empty()) return;
    auto it = held_.begin();
    std::advance(it, rng_() % held_.size());
    const auto [ta, tb] = it->second;
    last_ = it->first + " ";
    switch (rng_() % 6) {
      case 0:
        return same("ack", model_->ack(ta), q_->ack(tb));
      case 1: {
        const std::optional<Duration> d =
            rng_() % 2 ? std::optional<Duration>(delay()) : std::nullopt;
        return same("nack", model_->nack(ta, d), q_->nack(tb, d));
      }
      case 2:
        return same("touch", model_->touch(ta).status(), q_->touch(tb).status());
      case 3:
        return same("release", model_->release(ta), q_->release(tb));
      case 4:
        return same("dead_letter", model_->dead_letter(ta), q_->dead_letter(tb));
      default:
        held_.erase(it);  // forget it: its lease will run out
    }
  }
  void on_one_job() {
    const std::string j = id();
    last_ = j + " ";
    switch (rng_() % 4) {
      case 0:
        return same("cancel", model_->cancel(j), q_->cancel(j));
      case 1: {
        const TimePoint when = clock_.now() + delay() - std::chrono::seconds(10);
        last_ += std::to_string((when - clock_.now()).count() / 1000000) + " ms";
        return same("reschedule", model_->reschedule(j, when), q_->reschedule(j, when));
      }
      case 2:
        return same("requeue_dead", model_->requeue_dead(j), q_->requeue_dead(j));
      default: {
        const char* t = topic();
        const bool purge = rng_() % 2;
        auto a = purge ? model_->purge_dead(t) : model_->requeue_dead_topic(t);
        auto b = purge ? q_->purge_dead(t) : q_->requeue_dead_topic(t);
        same(purge ? "purge_dead" : "requeue_dead_topic", a.status(), b.status());
        if (a && b) {
          EXPECT_EQ(*a, *b);
        }
      }
    }
  }

  std::string describe(const std::string& j) {
    auto a = model_->get(j), b = q_->get(j);
    auto show = [&](const Result<JobInfo>& r) {
      if (!r) return r.status().to_string();
      return std::string(to_string(r->state)) + " due " +
             std::to_string((r->due - clock_.now()).count()) + " ns from now, attempts " +
             std::to_string(r->attempts);
    };
    std::string h;
    for (const std::string& l : log_)
      if (l.find(" " + j + " ") != std::string::npos || l.find(" advance ") != std::string::npos ||
          l.find(" reopen ") != std::string::npos || l.find(" reserve ") != std::string::npos)
        h += "\n    " + l;
    return j + " model: " + show(a) + ", store: " + show(b) + h;
  }

  void advance(Duration d) {
    log_.push_back(std::to_string(step_) + " advance " + std::to_string(d.count() / 1000000) +
                   " ms");
    clock_.advance(d);
  }
  void reopen() {
    log_.push_back(std::to_string(step_) + " reopen ");
    open_model();
    if (q_) {
      q_.reset();
      expect_index_in_step();
    }
    open(1min);
  }

  // Every page of `topic`'s delayed jobs, `limit` at a time, as (due, id) in listing order; every
  // page but the last must be full.
  std::vector<std::pair<TimePoint, std::string>> pages(Engine& q, const char* topic, size_t limit) {
    std::vector<std::pair<TimePoint, std::string>> out;
    std::string cursor;
    for (int n = 0; n < 1000; ++n) {
      auto page = q.list_jobs(topic, JobState::delayed, limit, cursor);
      EXPECT_TRUE(page.ok()) << page.status().to_string();
      if (!page.ok()) break;
      for (const JobInfo& j : page->jobs) out.emplace_back(j.due, j.id);
      if (page->cursor.empty()) break;
      EXPECT_EQ(page->jobs.size(), limit) << "a page before the last is short (seed " << seed_
                                          << ", step " << step_ << ")";
      cursor = page->cursor;
    }
    return out;
  }
  // The delayed jobs of each topic, paged, as the model pages them: the same jobs in the same
  // due order (jobs due at the same moment in either order: the two stores' seqs may differ
  // after a reopen).
  void compare_pages() {
    for (const char* t : kTopics) {
      const size_t limit = 1 + rng_() % 5;
      auto a = pages(*model_, t, limit), b = pages(*q_, t, limit);
      for (size_t i = 1; i < b.size(); ++i) EXPECT_LE(b[i - 1].first, b[i].first);
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      EXPECT_EQ(a, b) << "topic " << t << ", seed " << seed_ << ", step " << step_;
    }
  }

  // Every job and the counts, as the model has them.
  void compare() {
    for (int i = 0; i < kIds; ++i) {
      const std::string j = "j" + std::to_string(i);
      auto a = model_->get(j);
      auto b = q_->get(j);
      same("get", a.status(), b.status());
      if (!a || !b) continue;
      SCOPED_TRACE("job " + j + ", seed " + std::to_string(seed_) + ", step " +
                   std::to_string(step_));
      testing::expect_same_fields(*b, *a);
      EXPECT_EQ(a->due, b->due);
      if (a->state == JobState::reserved) {
        EXPECT_EQ(a->lease_deadline, b->lease_deadline);
      }
    }
    const Stats a = model_->stats(), b = q_->stats();
    EXPECT_EQ(a.topics, b.topics) << "seed " << seed_ << ", step " << step_;
    for (const char* t : kTopics) {
      auto da = model_->list_dead(t, 100), db = q_->list_dead(t, 100);
      ASSERT_EQ(da->size(), db->size());
      for (size_t i = 0; i < da->size(); ++i) EXPECT_EQ((*da)[i].id, (*db)[i].id);
    }
  }

  void run(uint64_t seed, int steps) {
    if (!model_) reopen();
    seed_ = seed;
    rng_.seed(seed);
    for (step_ = 0; step_ < steps && !HasFatalFailure(); ++step_) {
      const int r = static_cast<int>(rng_() % 100);
      if (r < 30)
        push();
      else if (r < 45)
        reserve();
      else if (r < 65)
        settle();
      else if (r < 80)
        on_one_job();
      else if (r < 99)
        advance(r < 96 ? std::chrono::milliseconds(rng_() % 30000) : delay());
      else
        reopen();
      if (HasFatalFailure()) return;
      compare();
      compare_pages();
    }
  }

  std::unique_ptr<Engine> model_;
  std::mt19937_64 rng_;
  uint64_t seed_ = 0;
  int step_ = 0;
  std::map<std::string, std::pair<Token, Token>> held_;  // id -> (model's, store's) token
  std::vector<std::string> log_;
  std::string last_;
};

// DELAYQ_TIERED_SEEDS=N runs seeds 1 to N (a soak); 3 by default.
TEST_F(TieredModel, RandomCallsAcrossTheHorizonAnswerAsTheModelDoes) {
  const char* env = std::getenv("DELAYQ_TIERED_SEEDS");
  const uint64_t seeds = env ? std::strtoull(env, nullptr, 10) : 3;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    run(seed, 1000);
    if (HasFailure()) return;
  }
}

// Two shards: each job's calls on its own shard, reserve() visiting them in turn, the refill
// loading into both at once.
TEST_F(TieredModel, OnTwoShardsToo) {
  shards_ = 2;
  for (uint64_t seed = 11; seed <= 13 && !HasFailure(); ++seed) run(seed, 1000);
}

}  // namespace
}  // namespace delayq
