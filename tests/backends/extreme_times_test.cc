// Extreme times on the engine and the durable store (with and without the disk tier), on a
// ManualClock that a test can put at either end of representable time (int64 nanoseconds:
// September 1677 to April 2262), which the conformance suite's real clock cannot reach.
//
// The rules (docs/semantics.md, "Extreme times"): a time in the past means now; a delay, wait or
// due time beyond max_delay, or past the end of representable time, is refused with
// invalid_argument; what is accepted is kept exactly, or held at the end of time. Nothing wraps
// around into the past, so nothing is ever delivered early.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "delayq/clock.h"
#include "delayq/engine.h"
#include "delayq/store.h"
#include "temp_dir.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;

const TimePoint kEnd = TimePoint::max();

std::string show(TimePoint t) {
  return std::to_string(t.time_since_epoch().count()) + " ns";
}

// The three in-process backends on one ManualClock.
enum class Kind { memory, durable, tiered };
std::string name(Kind k) {
  return k == Kind::memory ? "memory" : k == Kind::durable ? "durable" : "tiered";
}

class ExtremeTimes : public ::testing::TestWithParam<Kind> {
 protected:
  // Opens the backend on a ManualClock that starts at `start`.
  void open(TimePoint start) {
    q_.reset();
    clock_ = std::make_unique<ManualClock>(start);
    reopen();
  }
  // Opens it again on the same clock (the stores: on the same directory).
  void reopen(const Limits& limits = Limits{}) {
    if (q_) q_->close();
    q_.reset();
    EngineOptions e;
    e.clock = clock_.get();
    e.limits = limits;
    e.seed = 3;
    if (GetParam() == Kind::memory) {
      auto r = Engine::open(e);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      q_ = std::move(r).value();
      return;
    }
    StoreOptions o;
    o.dir = dir_.path();
    o.sync = Sync::none;
    if (GetParam() == Kind::tiered) o.horizon = 20ms;
    o.engine = e;
    auto r = open_store(o);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    q_ = std::move(r).value();
  }
  void TearDown() override {
    if (q_) q_->close();
    q_.reset();
  }

  JobInfo get(const std::string& id) {
    auto j = q_->get(id);
    EXPECT_TRUE(j.ok()) << id << ": " << j.status().to_string();
    return j.ok() ? *j : JobInfo{};
  }

  testing::TempDir dir_{"delayq-extreme"};
  std::unique_ptr<ManualClock> clock_;  // declared before q_: outlives it
  std::unique_ptr<Queue> q_;
};

INSTANTIATE_TEST_SUITE_P(Backends, ExtremeTimes,
                         ::testing::Values(Kind::memory, Kind::durable, Kind::tiered),
                         [](const auto& info) { return name(info.param); });

// An hour before the end of time: what fits is kept exactly, what does not is refused; leases
// and waits that would run past the end are held at it; nothing is delivered early.
TEST_P(ExtremeTimes, AnHourBeforeTheEndOfTime) {
  ASSERT_NO_FATAL_FAILURE(open(kEnd - 1h));
  ManualClock& clock = *clock_;
  const TimePoint t0 = clock.now();

  ASSERT_TRUE(q_->push({.topic = "t", .id = "half-hour", .delay = 30min}).ok());
  EXPECT_EQ(get("half-hour").due, t0 + 30min);
  auto late = q_->push({.topic = "t", .id = "two-hours", .delay = 2h});
  EXPECT_TRUE(late.is(Errc::invalid_argument)) << late.status().to_string();
  EXPECT_NE(late.status().message().find("end of representable time"), std::string::npos)
      << late.status().to_string();
  auto at_end = q_->push({.topic = "t", .id = "at-end", .due_at = kEnd});
  ASSERT_TRUE(at_end.ok()) << at_end.status().to_string();
  EXPECT_EQ(get("at-end").due, kEnd);
  EXPECT_EQ(get("at-end").state, JobState::delayed);

  // A ttr that runs past the end: the lease is held at the end of time.
  ASSERT_TRUE(
      q_->push({.topic = "l", .id = "lease", .ttr = 2h, .retry = RetryPolicy::fixed(2h, 3)}).ok());
  auto d = q_->reserve("l", 0ms);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->lease_deadline, kEnd) << show(d->lease_deadline);
  auto touched = q_->touch(d->token);
  ASSERT_TRUE(touched.ok());
  EXPECT_EQ(*touched, kEnd);
  // Waits that run past the end, the policy's and a nack's own: due at the end of time, not
  // wrapped into the past.
  ASSERT_TRUE(q_->nack(d->token).ok());
  EXPECT_EQ(get("lease").state, JobState::delayed);
  EXPECT_EQ(get("lease").due, kEnd) << show(get("lease").due);
  ASSERT_TRUE(q_->reschedule("lease", t0).ok());
  d = q_->reserve("l", 0ms);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  ASSERT_TRUE(q_->nack(d->token, 2h).ok());
  EXPECT_EQ(get("lease").state, JobState::delayed);
  EXPECT_EQ(get("lease").due, kEnd) << show(get("lease").due);
  // Rescheduled to the end of time itself: fine (within max_delay of now).
  EXPECT_TRUE(q_->reschedule("lease", kEnd).ok());
  EXPECT_EQ(get("lease").due, kEnd);

  // A store keeps them across a reopen.
  if (GetParam() != Kind::memory) {
    ASSERT_NO_FATAL_FAILURE(reopen());
    for (const char* id : {"half-hour", "at-end", "lease"})
      EXPECT_EQ(get(id).state, JobState::delayed) << id;
    EXPECT_EQ(get("at-end").due, kEnd);
    EXPECT_EQ(get("lease").due, kEnd);
  }
  EXPECT_FALSE(q_->reserve(std::vector<std::string>{"t", "l"}, 0ms).ok()) << "delivered early";
  clock.advance(30min);
  auto half = q_->reserve("t", 0ms);
  ASSERT_TRUE(half.ok()) << half.status().to_string();
  EXPECT_EQ(half->id, "half-hour");
  ASSERT_TRUE(q_->ack(half->token).ok());
  EXPECT_FALSE(q_->reserve(std::vector<std::string>{"t", "l"}, 0ms).ok()) << "delivered early";
  clock.advance(30min - 1ns);
  EXPECT_FALSE(q_->reserve(std::vector<std::string>{"t", "l"}, 0ms).ok()) << "delivered early";
  // The last instant (the clock held there by advance(Duration::max())): the jobs due at the end
  // of time come due, the disk tier's included, and the clock's listeners return.
  clock.advance(Duration::max());
  ASSERT_EQ(clock.now(), kEnd);
  for (const char* id : {"at-end", "lease"}) {
    EXPECT_EQ(get(id).state, JobState::ready) << id;
    EXPECT_EQ(get(id).due, kEnd) << id;
  }
  auto last = q_->reserve("t", 0ms);
  ASSERT_TRUE(last.ok()) << last.status().to_string();
  EXPECT_EQ(last->id, "at-end");
}

// A clock that reads before 1970 (a ManualClock started there, or a Clock of the program's own):
// every backend takes calls and keeps what it took. The stores keep instants as nanoseconds since
// 1970 and read such a clock as 1970-01-01T00:00:00Z (before, they wrote records that their next
// open refused as damage, and the store did not open again): late by the clock's lag, never early.
TEST_P(ExtremeTimes, AClockBefore1970LosesNothing) {
  const TimePoint epoch{};
  ASSERT_NO_FATAL_FAILURE(open(epoch - 1h));
  const bool store = GetParam() != Kind::memory;
  const TimePoint t0 = store ? epoch : epoch - 1h;  // the time the queue goes by
  ASSERT_TRUE(q_->push({.topic = "t", .id = "soon", .delay = 30min}).ok());
  ASSERT_TRUE(q_->push({.topic = "t", .id = "now"}).ok());
  ASSERT_TRUE(q_->push({.topic = "t", .id = "far", .delay = 2h}).ok());  // beyond the tier's horizon
  EXPECT_EQ(get("soon").due, t0 + 30min) << show(get("soon").due);
  auto d = q_->reserve("t", 0ms);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, "now");
  EXPECT_EQ(d->lease_deadline, t0 + 30s) << show(d->lease_deadline);
  ASSERT_TRUE(q_->release(d->token).ok());
  if (store) {
    ASSERT_NO_FATAL_FAILURE(reopen());  // opens again: every record it wrote is one it takes
    for (const char* id : {"soon", "far"}) EXPECT_EQ(get(id).state, JobState::delayed) << id;
    EXPECT_EQ(get("now").state, JobState::ready);
    EXPECT_EQ(get("far").due, epoch + 2h) << show(get("far").due);
  }
  d = q_->reserve("t", 0ms);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, "now");
  ASSERT_TRUE(q_->ack(d->token).ok());
  clock_->set(epoch - 1ns);  // 59 min 59.999999999 s on: the engine's "soon" is due, not a store's
  auto soon = q_->reserve("t", 0ms);
  EXPECT_EQ(soon.ok(), !store) << soon.status().to_string();
  if (store) {
    clock_->set(epoch + 30min);
    soon = q_->reserve("t", 0ms);
  }
  ASSERT_TRUE(soon.ok()) << soon.status().to_string();
  EXPECT_EQ(soon->id, "soon");
  ASSERT_TRUE(q_->ack(soon->token).ok());
  clock_->set(epoch + 1h - 1ns);  // the engine's "far" is due an hour after 1970, a store's at 2 h
  EXPECT_FALSE(q_->reserve("t", 0ms).ok()) << "far delivered early";
}

// The start of representable time, on the in-memory engine: due times in the past (before 1970,
// down to the first instant) all mean now. (Only in memory: the durable store reads a clock before
// 1970 as 1970, AClockBefore1970LosesNothing above.)
TEST(EngineExtremeTimes, NearTheStartOfTimeThePastMeansNow) {
  ManualClock clock(TimePoint::min() + 1h);  // declared before q: outlives it
  EngineOptions o;
  o.clock = &clock;
  auto opened = Engine::open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  std::unique_ptr<Engine> q = std::move(opened).value();
  const TimePoint t0 = clock.now();
  std::vector<std::string> ids;
  for (const TimePoint past : {TimePoint::min(), TimePoint::min() + 1ns, t0 - 1ns, t0}) {
    auto r = q->push({.topic = "s", .due_at = past});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    auto j = q->get(*r);
    ASSERT_TRUE(j.ok());
    EXPECT_EQ(j->state, JobState::ready);
    EXPECT_EQ(j->due, t0) << show(j->due);
    ids.push_back(*r);
  }
  ASSERT_TRUE(q->push({.topic = "s", .id = "later", .delay = 30min}).ok());
  ASSERT_EQ(q->get("later")->due, t0 + 30min);
  const Status back = q->reschedule("later", TimePoint::min());
  ASSERT_TRUE(back.ok()) << back.to_string();
  EXPECT_EQ(q->get("later")->state, JobState::ready);
  EXPECT_EQ(q->get("later")->due, t0);
  ids.push_back("later");
  for (const std::string& id : ids) {
    auto d = q->reserve("s", 0ms);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_EQ(d->id, id) << "pushed or rescheduled due now: in that order";
    ASSERT_TRUE(q->ack(d->token).ok());
  }
}

// A clock moved by Duration::max() stops at the end of time instead of wrapping into the past.
TEST(ManualClockExtremes, AdvanceByDurationMaxStopsAtTheEndOfTime) {
  ManualClock clock(kEnd - 1h);
  clock.advance(Duration::max());
  EXPECT_EQ(clock.now(), kEnd) << show(clock.now());
  clock.advance(1ns);
  EXPECT_EQ(clock.now(), kEnd);
  ManualClock from_now;
  from_now.advance(Duration::max());
  EXPECT_EQ(from_now.now(), kEnd);
  from_now.advance(Duration::min());  // negative: no move
  EXPECT_EQ(from_now.now(), kEnd);
  EXPECT_FALSE(from_now.set(TimePoint::min()));
}

}  // namespace
}  // namespace delayq
