// Wall-clock steps of the process's own clock (docs/semantics.md, "Time"), for what reads the
// default SystemClock: the store reopened after the wall clock stepped back, and the Redis
// client's jobs taken ahead (claim_batch).
//
// This file defines clock_gettime(): every CLOCK_REALTIME read in this process (SystemClock,
// std::chrono::system_clock, RocksDB) goes through it, and the test sets what it returns. That
// is the wall clock stepping as the queue sees it, without touching the machine's clock.
// (Sleeps are on CLOCK_MONOTONIC, which passes through unchanged.)
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <set>

#include "delayq/redis.h"
#include "delayq/store.h"
#include "redis_server.h"
#include "temp_dir.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;

// The process's wall clock: the real time plus a shift, or standing still at an instant.
std::atomic<int64_t> g_wall_shift{0};
std::atomic<int64_t> g_wall_frozen{0};  // ns since the epoch; 0: not frozen

int64_t real_ns(clockid_t id) {
  timespec ts{};
  syscall(SYS_clock_gettime, id, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The wall clock reads `t` until run() is called, then moves on from `t` with the real time.
void freeze_wall(TimePoint t) {
  g_wall_frozen.store(t.time_since_epoch().count());
}
void run_wall() {
  const int64_t at = g_wall_frozen.exchange(0);
  if (at != 0) g_wall_shift.store(at - real_ns(CLOCK_REALTIME));
}
void step_wall(Duration d) {
  g_wall_shift.fetch_add(d.count());
}
void reset_wall() {
  g_wall_frozen.store(0);
  g_wall_shift.store(0);
}

}  // namespace
}  // namespace delayq

extern "C" int clock_gettime(clockid_t id, struct timespec* ts) noexcept {
  const long r = syscall(SYS_clock_gettime, id, ts);
  if (r != 0 || id != CLOCK_REALTIME) return static_cast<int>(r);
  const int64_t frozen = delayq::g_wall_frozen.load();
  const int64_t ns =
      frozen != 0 ? frozen
                  : int64_t{ts->tv_sec} * 1'000'000'000 + ts->tv_nsec + delayq::g_wall_shift.load();
  ts->tv_sec = ns / 1'000'000'000;
  ts->tv_nsec = ns % 1'000'000'000;
  return 0;
}

namespace delayq {
namespace {

using testing::TempDir;

class WallStep : public ::testing::Test {
 protected:
  void TearDown() override { reset_wall(); }

  // Opens the store with the wall clock standing at `at` (so the engine reads exactly that
  // when it opens), then lets the clock run on from there.
  std::unique_ptr<Engine> open_at(TimePoint at) {
    freeze_wall(at);
    StoreOptions o;
    o.dir = dir.path();
    o.engine.shards = 2;  // the default SystemClock: the process's wall clock
    Result<std::unique_ptr<Engine>> q = open_store(o);
    run_wall();
    EXPECT_TRUE(q.ok()) << q.status().to_string();
    return q.ok() ? std::move(q).value() : nullptr;
  }

  // Pushes `n` jobs with generated ids and reserves them; every id and fence handed out must be
  // new to this store. Returns the deliveries, lowest fence first.
  std::vector<Delivery> push_and_reserve(Engine& q, int n) {
    for (int i = 0; i < n; ++i) {
      Result<std::string> id = q.push({.topic = "t", .body = "b"});
      EXPECT_TRUE(id.ok()) << id.status().to_string();
      if (id) {
        EXPECT_TRUE(ids.insert(*id).second) << "generated id " << *id << " again";
      }
    }
    std::vector<Delivery> out;
    for (int i = 0; i < n; ++i) {
      Result<Delivery> d = q.reserve("t", 5s);
      EXPECT_TRUE(d.ok()) << d.status().to_string();
      if (!d) break;
      EXPECT_TRUE(fences.insert(d->token.fence).second) << "fence " << d->token.fence << " again";
      EXPECT_GT(d->token.fence, highest_fence) << "fences went back";
      out.push_back(*d);
    }
    std::sort(out.begin(), out.end(),
              [](const Delivery& a, const Delivery& b) { return a.token.fence < b.token.fence; });
    if (!out.empty()) highest_fence = std::max(highest_fence, out.back().token.fence);
    return out;
  }

  TempDir dir{"delayq-wall"};
  std::set<std::string> ids;
  std::set<uint64_t> fences;
  uint64_t highest_fence = 0;
};

// A store written "in the future" (the wall clock an hour ahead), reopened "in the past": first
// at the instant the first run opened (a step back of a second or so), then an hour before it.
// The first run leaves its lowest fences on reserved jobs and acks the rest, so that the records
// left behind do not hold the highest fence, and its generated ids are gone from the queue.
TEST_F(WallStep, AReopenAfterAStepBackRepeatsNoFenceAndNoGeneratedId) {
  const TimePoint ahead = SystemClock::instance().now() + 1h;
  std::vector<std::string> kept;  // reserved in run 1, never settled
  TimePoint later_due;
  {
    auto q = open_at(ahead);
    ASSERT_TRUE(q);
    ASSERT_TRUE(q->push({.topic = "later", .id = "later", .delay = 10min}).ok());
    later_due = q->get("later")->due;
    std::vector<Delivery> got = push_and_reserve(*q, 20);
    ASSERT_EQ(got.size(), 20u);
    for (size_t i = 0; i < got.size(); ++i) {
      if (i < 5)
        kept.push_back(got[i].id);
      else
        ASSERT_TRUE(q->ack(got[i].token).ok());
    }
  }
  for (TimePoint reopen : {ahead, ahead - 1h}) {
    SCOPED_TRACE(reopen == ahead ? "reopened where run 1 opened" : "reopened an hour before");
    auto q = open_at(reopen);
    ASSERT_TRUE(q);
    // Due times and leases are instants of the wall clock: nothing comes due earlier.
    EXPECT_TRUE(q->reserve("later", 0ms).is(Errc::timeout));
    EXPECT_EQ(q->get("later")->due, later_due);
    for (const std::string& id : kept) EXPECT_EQ(q->get(id)->state, JobState::reserved) << id;
    for (const Delivery& d : push_and_reserve(*q, 20)) ASSERT_TRUE(q->ack(d.token).ok());
  }
}

// The Redis backend times due dates and leases on the server's clock, and its waits on the steady
// clock; the client's wall clock is used for one decision only: whether a job taken ahead
// (claim_batch) still has half of its lease left. That age is steady time, so a step of the
// client's clock neither gives back (and so spends the attempt of) a fresh job, nor hands out
// one whose lease ran out.
class RedisWallStep : public WallStep {
 protected:
  void SetUp() override { ASSERT_TRUE(server.started()) << server.log(); }

  // A client that takes 4 jobs per claim, and four ready jobs of topic "t" with a 2 s lease and
  // the given number of attempts; returns the first delivery (the other three are kept).
  std::unique_ptr<Queue> client_with_three_kept(uint32_t attempts, Delivery& first) {
    RedisOptions o;
    o.url = server.url();
    o.queue = "wall";
    o.claim_batch = 4;
    std::unique_ptr<Queue> q = open_redis(o).value();
    for (int i = 0; i < 4; ++i) {
      RetryPolicy p = RetryPolicy::fixed(0ms, attempts);
      EXPECT_TRUE(
          q->push({.topic = "t", .id = "k" + std::to_string(i), .ttr = 2s, .retry = p}).ok());
    }
    Result<Delivery> d = q->reserve("t", 5s);
    EXPECT_TRUE(d.ok()) << d.status().to_string();
    if (d) first = *d;
    return q;
  }

  testing::RedisServer server;
};

TEST_F(RedisWallStep, AStepForwardDoesNotSpendTheAttemptsOfJobsTakenAhead) {
  Delivery first;
  auto q = client_with_three_kept(1, first);
  ASSERT_TRUE(q->ack(first.token).ok());
  step_wall(1h);
  for (int i = 1; i < 4; ++i) {
    Result<Delivery> d = q->reserve("t", 0ms);
    ASSERT_TRUE(d.ok()) << "a kept job was given back: " << d.status().to_string();
    EXPECT_TRUE(q->ack(d->token).ok());
  }
  EXPECT_EQ(q->stats().dead_lettered, 0u);
}

TEST_F(RedisWallStep, AStepBackDoesNotHandOutJobsTakenAheadWhoseLeaseRanOut) {
  Delivery first;
  auto q = client_with_three_kept(5, first);
  ASSERT_TRUE(q->ack(first.token).ok());
  step_wall(-1h);
  std::this_thread::sleep_for(2500ms);  // the kept jobs' leases (2 s) ran out on the server
  for (int i = 1; i < 4; ++i) {
    Result<Delivery> d = q->reserve("t", 5s);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_TRUE(q->ack(d->token).ok()) << "handed out after its lease ran out: " << d->id;
  }
}

// Generated ids of the Redis backend are drawn by the client. Reopened with its wall clock back
// where it stood at the first opening, a client draws ids that no opening before it drew. (The
// seed is fixed, as a user who wants the same retry jitter on every run sets it.)
TEST_F(RedisWallStep, GeneratedIdsDoNotRepeatAcrossReopensAfterAStepBack) {
  const TimePoint ahead = SystemClock::instance().now() + 1h;
  for (TimePoint at : {ahead, ahead, ahead - 1h}) {
    freeze_wall(at);
    RedisOptions o;
    o.url = server.url();
    o.queue = "ids";
    o.seed = 7;
    std::unique_ptr<Queue> q = open_redis(o).value();
    run_wall();
    for (int i = 0; i < 5; ++i) {
      Result<std::string> id = q->push({.topic = "g"});
      ASSERT_TRUE(id.ok()) << id.status().to_string();
      EXPECT_TRUE(ids.insert(*id).second) << "generated id " << *id << " again";
      Result<Delivery> d = q->reserve("g", 5s);  // gone from the queue again
      ASSERT_TRUE(d.ok()) << d.status().to_string();
      ASSERT_TRUE(q->ack(d->token).ok());
    }
  }
}

}  // namespace
}  // namespace delayq
