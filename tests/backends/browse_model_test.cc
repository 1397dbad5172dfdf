// Browsing (Queue::list_jobs) under random calls on the in-memory engine (one shard and three) and
// the durable store (reopened at the end), on a ManualClock: after each burst of pushes, reserves,
// acks, nacks, releases, dead letters, requeues, cancels, reschedules, touches and clock moves,
// each state's listing holds exactly the jobs get() says are in it, each once, in the state's
// order (delayed by due time, reserved by lease deadline, dead by dead_since), and pages of 3
// list what one page of 1000 does. At the end, the ready listing is the order
// reserve() hands the jobs out (one shard). And one case on two shards, made to order.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "delayq/clock.h"
#include "delayq/engine.h"
#include "delayq/store.h"
#include "temp_dir.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;

std::vector<JobInfo> listing(Queue& q, JobState s, size_t limit) {
  std::vector<JobInfo> out;
  std::string cursor;
  for (int pages = 0; pages < 100000; ++pages) {
    auto page = q.list_jobs("t", s, limit, cursor);
    EXPECT_TRUE(page.ok()) << page.status().to_string();
    if (!page.ok()) break;
    out.insert(out.end(), page->jobs.begin(), page->jobs.end());
    if (page->cursor.empty()) break;
    cursor = page->cursor;
  }
  return out;
}

std::vector<std::string> ids_of(const std::vector<JobInfo>& jobs) {
  std::vector<std::string> ids;
  for (const JobInfo& j : jobs) ids.push_back(j.id);
  return ids;
}

// The instant a state is ordered by.
TimePoint order_of(const JobInfo& j) {
  switch (j.state) {
    case JobState::reserved:
      return j.lease_deadline;
    case JobState::dead:
      return j.dead_since;
    default:
      return j.due;
  }
}

class BrowseModel {
 public:
  BrowseModel(Queue& q, ManualClock& clock, uint64_t seed) : q_(&q), clock_(clock), rng_(seed) {}
  void set_queue(Queue& q) { q_ = &q; }

  void burst(int calls) {
    for (int c = 0; c < calls; ++c) step();
  }

  // Every state's listing against get() of every live job.
  void check() {
    std::map<JobState, std::set<std::string>> want;
    for (const std::string& id : live_) {
      auto j = q_->get(id);
      ASSERT_TRUE(j.ok()) << id << ": " << j.status().to_string();
      want[j->state].insert(id);
      EXPECT_EQ(j->dead_since != TimePoint{}, j->state == JobState::dead) << id;
    }
    for (JobState s : {JobState::delayed, JobState::ready, JobState::reserved, JobState::dead}) {
      const std::vector<JobInfo> one = listing(*q_, s, 1000);
      const std::vector<JobInfo> small = listing(*q_, s, 3);
      const std::vector<std::string> ids = ids_of(one);
      EXPECT_EQ(ids_of(small), ids) << to_string(s);
      EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size()) << to_string(s);
      EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()), want[s]) << to_string(s);
      // Ready jobs come in hand-out order, which is not always due order (a retry that falls due
      // during a catch-up joins the line with `now` as its due time): drain_matches_listing().
      if (s == JobState::ready) continue;
      EXPECT_TRUE(std::is_sorted(one.begin(), one.end(), [](const JobInfo& a, const JobInfo& b) {
        return order_of(a) < order_of(b);
      })) << to_string(s);
    }
  }

  // Hands out every ready job; they must come in the ready listing's order (one shard).
  void drain_matches_listing() {
    const std::vector<std::string> listed = ids_of(listing(*q_, JobState::ready, 7));
    std::vector<std::string> handed;
    for (auto d = q_->reserve("t", 0ms); d.ok(); d = q_->reserve("t", 0ms)) handed.push_back(d->id);
    EXPECT_EQ(handed, listed);
  }

 private:
  std::string pick() {
    if (live_.empty()) return "none";
    auto it = live_.begin();
    std::advance(it, static_cast<long>(rng_() % live_.size()));
    return *it;
  }
  void step() {
    const uint64_t r = rng_() % 100;
    if (r < 30) {
      const std::string id = "j" + std::to_string(next_++);
      const Duration delay = std::chrono::milliseconds(rng_() % 4 == 0 ? 0 : rng_() % 5000);
      RetryPolicy p{.kind = RetryPolicy::Kind::fixed, .max_attempts = 2, .base = 300ms};
      if (q_->push({.topic = "t", .id = id, .delay = delay, .ttr = std::chrono::seconds(1 + rng_() % 5),
                    .retry = p})
              .ok())
        live_.insert(id);
    } else if (r < 50) {
      if (auto d = q_->reserve("t", 0ms); d.ok()) held_.push_back(d->token);
    } else if (r < 75 && !held_.empty()) {
      const size_t i = rng_() % held_.size();
      const Token t = held_[i];
      held_.erase(held_.begin() + static_cast<long>(i));
      switch (rng_() % 5) {
        case 0:
          if (q_->ack(t).ok()) live_.erase(t.id);
          break;
        case 1:
          (void)q_->nack(t, rng_() % 2 ? std::optional<Duration>(0ms) : std::nullopt);
          break;
        case 2:
          (void)q_->release(t);
          break;
        case 3:
          (void)q_->dead_letter(t);
          break;
        default:
          (void)q_->touch(t);
          held_.push_back(t);
      }
    } else if (r < 80) {
      const std::string id = pick();
      if (q_->cancel(id).ok()) live_.erase(id);
    } else if (r < 85) {
      (void)q_->reschedule(pick(), clock_.now() + std::chrono::milliseconds(rng_() % 3000));
    } else if (r < 88) {
      (void)q_->requeue_dead(pick());
    } else {
      clock_.advance(std::chrono::milliseconds(rng_() % 700));
    }
  }

  Queue* q_;
  ManualClock& clock_;
  std::mt19937_64 rng_;
  std::set<std::string> live_;
  std::vector<Token> held_;
  int next_ = 0;
};

void run_in_memory(size_t shards, uint64_t seed) {
  ManualClock clock(TimePoint(1767225600s));
  EngineOptions o;
  o.clock = &clock;
  o.shards = shards;
  auto q = Engine::open(o);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  BrowseModel m(**q, clock, seed);
  for (int round = 0; round < 40; ++round) {
    m.burst(25);
    m.check();
    if (::testing::Test::HasFailure()) return;
  }
  if (shards == 1) m.drain_matches_listing();
}

TEST(BrowseModel, OneShard) {
  for (uint64_t seed = 1; seed <= 3; ++seed) run_in_memory(1, seed);
}

TEST(BrowseModel, ThreeShards) {
  for (uint64_t seed = 1; seed <= 3; ++seed) run_in_memory(3, seed);
}

TEST(BrowseModel, DurableStoreBeforeAndAfterAReopen) {
  testing::TempDir dir("delayq-browse-model");
  ManualClock clock(TimePoint(1767225600s));
  StoreOptions o;
  o.dir = dir.path() + "/store";
  o.sync = Sync::none;
  o.engine.clock = &clock;
  auto q = open_store(o);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  BrowseModel m(**q, clock, 5);
  for (int round = 0; round < 15; ++round) {
    m.burst(25);
    m.check();
  }
  q->reset();  // closes the store: it can be open once at a time
  q = open_store(o);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  m.set_queue(**q);
  m.check();
  m.drain_matches_listing();
}

// Two shards, the first page all from one of them: a job that becomes ready since on the other
// shard, at a place before the cursor's (a higher priority), is not listed by the next pages,
// which go on with the rest in order (docs/semantics.md, "Pages while jobs move"). The ids are
// picked by the engine's rule for a job's shard (a hash of the id, engine/shard.h).
TEST(BrowseShards, AShardThatGaveNothingYetResumesAtTheCursorToo) {
  ManualClock clock(TimePoint(1767225600s));
  EngineOptions o;
  o.clock = &clock;
  o.shards = 2;
  auto opened = Engine::open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  Queue& q = **opened;
  const auto shard = [](const std::string& id) { return std::hash<std::string_view>()(id) % 2; };
  std::vector<std::string> on0, on1;
  for (int i = 0; on0.size() < 5 || on1.empty(); ++i) {
    const std::string id = "j" + std::to_string(i);
    (shard(id) == 0 ? on0 : on1).push_back(id);
  }
  on0.resize(5);
  for (const std::string& id : on0) ASSERT_TRUE(q.push({.topic = "t", .id = id}).ok());
  auto first = q.list_jobs("t", JobState::ready, 2);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  ASSERT_EQ(first->jobs.size(), 2u);
  EXPECT_EQ(first->jobs[0].id, on0[0]);
  EXPECT_EQ(first->jobs[1].id, on0[1]);
  // Ready at once, and handed out before every job of the first shard.
  ASSERT_TRUE(q.push({.topic = "t", .id = on1[0], .priority = 0}).ok());
  std::vector<std::string> rest;
  std::string cursor = first->cursor;
  while (!cursor.empty()) {
    auto page = q.list_jobs("t", JobState::ready, 2, cursor);
    ASSERT_TRUE(page.ok()) << page.status().to_string();
    for (const JobInfo& j : page->jobs) rest.push_back(j.id);
    cursor = page->cursor;
  }
  EXPECT_EQ(rest, (std::vector<std::string>{on0[2], on0[3], on0[4]}));
  // A listing from the start shows it first.
  auto again = q.list_jobs("t", JobState::ready, 1);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->jobs.size(), 1u);
  EXPECT_EQ(again->jobs[0].id, on1[0]);
}

}  // namespace
}  // namespace delayq
