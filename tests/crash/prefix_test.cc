// The prefix search after a power loss (prefix.h) on its own, on hand-made reports.
#include <gtest/gtest.h>

#include "hand_made.h"
#include "job_state.h"
#include "prefix.h"

namespace delayq::crash {
namespace {

using namespace hand_made;

// explain_by_prefix() on hand-made reports: it accepts the latest calls lost and nothing else.
// Every call takes no time and the next starts 1 ms later; jobs are pushed with no delay.
class PrefixCheck : public ::testing::Test {
 protected:
  void start(uint8_t t, Kind intent, uint64_t job, int64_t arg = 0) {
    Record r = make_record(intent, job);
    r.thread = t;
    r.t0 = r.t1 = clock_;
    r.arg = arg;
    r.n = fence_[job];
    records_.push_back(r);
  }
  void finish(uint8_t t, Kind done) {
    Record r = records_.back();
    for (auto it = records_.rbegin(); it != records_.rend(); ++it)
      if (it->thread == t && is_intent(it->kind)) {
        r = *it;
        break;
      }
    r.kind = done;
    records_.push_back(r);
    clock_ += kMs;
  }
  void push(uint8_t t, uint64_t job) {
    due_[job] = clock_;
    start(t, Kind::push_intent, job);
    finish(t, Kind::push_done);
  }
  void deliver(uint8_t t, uint64_t job, uint32_t attempt) {
    start(t, Kind::reserve_intent, 0);
    Record r = records_.back();
    r.kind = Kind::reserved;
    r.job = job;
    r.attempt = attempt;
    r.due = due_[job];
    r.lease = clock_ + ttr_of(job).count();
    r.n = fence_[job] = ++fences_;
    records_.push_back(r);
    clock_ += kMs;
  }
  void ack(uint8_t t, uint64_t job) {
    start(t, Kind::ack_intent, job);
    finish(t, Kind::ack_done);
  }
  void reschedule(uint8_t t, uint64_t job, int64_t to) {
    start(t, Kind::resched_intent, job, to);
    finish(t, Kind::resched_done);
  }
  // As seen by a store reopened a moment after the calls.
  Obs waiting(uint64_t job, uint32_t attempts = 0, std::optional<int64_t> due = {}) const {
    return seen_at(clock_, JobState::ready, attempts, due.value_or(due_.at(job)));
  }
  Obs held(uint64_t job, uint32_t attempts) const {
    const Record* d = nullptr;
    for (const Record& r : records_)
      if (r.kind == Kind::reserved && r.job == job) d = &r;
    return seen_at(clock_, JobState::reserved, attempts, due_.at(job), d->lease);
  }
  void pause(uint8_t t, size_t topic, bool resume = false) {
    start(t, resume ? Kind::resume_intent : Kind::pause_intent, 0, static_cast<int64_t>(topic));
    finish(t, resume ? Kind::resume_done : Kind::pause_done);
  }
  // Thread 0's schedule calls (schedule_load.cc): `kind` on schedule n (a schedule() that
  // creates it with `rule`, or replaces it), and taking the occurrence of n at `instant`.
  void schedule_call(Kind kind, uint64_t n, bool create = false, uint64_t rule = 0) {
    start(0, kind, n, create ? 1 : 0);
    records_.back().n = rule;
    finish(0, done_of(kind));
  }
  void take_occurrence(uint64_t n, int64_t instant) {
    start(0, Kind::occ_intent, 0);
    Record got = make_record(Kind::occ_reserved, n);
    got.due = instant;
    records_.push_back(got);
    finish(0, Kind::occ_done);
  }
  PrefixVerdict verdict(size_t shards = 1) const {
    return explain_by_prefix(before_, records_, seen_, clock_, shards, 0, {0, paused_}, consumer_,
                             kDefaultThreads, sched_);
  }

  int64_t clock_ = kT;
  uint64_t fences_ = 0;
  std::map<uint64_t, int64_t> due_;
  std::map<uint64_t, uint64_t> fence_;
  std::unordered_map<uint64_t, JobModel> before_;
  std::vector<Record> records_;
  std::map<uint64_t, Obs> seen_;
  uint32_t paused_ = 0;    // the topics the store shows paused (bit i: kTopics[i])
  PrefixSchedules sched_;  // the schedules before and in the store, the acks the store kept
  bool consumer_ = false;  // the consumer thread and consume() took topics 1 and 3
};

// Jobs 2, 4, 6 are thread 0's; 1, 3, 5 thread 1's (owner_of).
TEST_F(PrefixCheck, EverythingKeptLosesNothing) {
  push(0, 2);
  push(0, 4);
  deliver(0, 2, 1);
  seen_ = {{2, held(2, 1)}, {4, waiting(4)}};
  const PrefixVerdict v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 0u);
}

TEST_F(PrefixCheck, TheLatestCallsLostAreAPrefix) {
  push(0, 2);
  push(0, 4);
  deliver(0, 2, 1);
  ack(0, 2);
  seen_ = {{2, held(2, 1)}, {4, waiting(4)}};  // the ack is lost
  PrefixVerdict v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 1u);
  seen_ = {{2, waiting(2)}, {4, waiting(4)}};  // and the delivery
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 2u);
  seen_ = {{2, Obs{}}, {4, Obs{}}};  // everything
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 4u);
}

TEST_F(PrefixCheck, ALostCallBeforeAKeptOneIsNoPrefix) {
  push(0, 2);
  push(0, 4);
  push(0, 6);
  seen_ = {{2, waiting(2)}, {4, Obs{}}, {6, waiting(6)}};
  PrefixVerdict v = verdict();
  EXPECT_FALSE(v.explained);
  EXPECT_NE(v.why.find("job-4 should be waiting"), std::string::npos) << v.why;
  // An ack lost while a later push was kept: the acked job came back.
  records_.clear();
  push(0, 2);
  deliver(0, 2, 1);
  ack(0, 2);
  push(0, 4);
  seen_ = {{2, held(2, 1)}, {4, waiting(4)}};
  EXPECT_FALSE(verdict().explained);
  seen_ = {{2, Obs{}}, {4, waiting(4)}};
  EXPECT_TRUE(verdict().explained);
  // A reschedule lost while a later push was kept: the due time tells.
  records_.clear();
  push(0, 2);
  const int64_t to = clock_ + 100 * kMs;
  reschedule(0, 2, to);
  push(0, 4);
  seen_ = {{2, waiting(2)}, {4, waiting(4)}};
  EXPECT_FALSE(verdict().explained);
  seen_ = {{2, seen_at(clock_, JobState::delayed, 0, to)}, {4, waiting(4)}};
  EXPECT_TRUE(verdict().explained) << verdict().why;
}

TEST_F(PrefixCheck, PrefixesOfTwoThreadsMustFitTheOrderOfTheCalls) {
  push(1, 1);  // returned before thread 0's push began: written first
  push(0, 2);
  seen_ = {{1, Obs{}}, {2, waiting(2)}};
  PrefixVerdict v = verdict();
  EXPECT_FALSE(v.explained);
  EXPECT_NE(v.why.find("push of job-2 (returned ok) began after worker thread 1's push of job-1"),
            std::string::npos)
      << v.why;
  // Overlapping calls may be written in either order.
  records_.clear();
  due_[1] = due_[2] = clock_;
  start(1, Kind::push_intent, 1);
  start(0, Kind::push_intent, 2);
  finish(1, Kind::push_done);
  finish(0, Kind::push_done);
  seen_ = {{1, Obs{}}, {2, waiting(2)}};
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 1u);
}

TEST_F(PrefixCheck, APurgeOnSeveralShardsMayBeKeptInPart) {
  const Rec dead{St::dead, 1, Span::at(kT - kMs), {}, 0};
  before_[2].cands = before_[6].cands = {dead};  // jobs 2 and 6 share a topic (index 1)
  Record purge = make_record(Kind::purge_intent);
  purge.t0 = purge.t1 = clock_;
  purge.arg = 1;
  records_.push_back(purge);
  records_.push_back(make_record(Kind::purged, 2));
  records_.push_back(make_record(Kind::purged, 6));
  purge.kind = Kind::purge_done;
  purge.n = 2;
  records_.push_back(purge);
  clock_ += kMs;
  push(0, 4);
  // One shard's part of the purge kept, the other's and the push after it lost.
  seen_ = {{2, Obs{}}, {4, Obs{}}, {6, seen_at(clock_, JobState::dead, 1, kT - kMs)}};
  const PrefixVerdict v = verdict(2);
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 2u);
  EXPECT_FALSE(verdict(1).explained);  // one shard: one write
  seen_[4] = waiting(4);               // nor with a later call kept
  EXPECT_FALSE(verdict(2).explained);
}

TEST_F(PrefixCheck, CallsInFlightMayOrMayNotBeKept) {
  before_[2].cands = {Rec{St::waiting, 0, Span::at(kT - kMs), {}, 0}};
  before_[4].cands = {Rec{St::waiting, 0, Span::at(kT - kMs), {}, 0}};
  due_[2] = due_[4] = kT - kMs;
  start(0, Kind::reserve_intent, 0);  // in flight: any one job of thread 0's, one attempt more
  const Obs taken = seen_at(clock_, JobState::reserved, 1, kT - kMs, kT + ttr_of(4).count());
  seen_ = {{2, waiting(2)}, {4, taken}};
  PrefixVerdict v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 0u);
  seen_ = {{2, seen_at(clock_, JobState::reserved, 1, kT - kMs, kT + ttr_of(2).count())},
           {4, taken}};  // but not two
  EXPECT_FALSE(verdict().explained);
  before_[2].cands = {Rec{St::reserved, 1, Span::at(kT - kMs), Span::at(kT + 200 * kMs), 9}};
  fence_[2] = 9;
  records_.clear();
  start(0, Kind::ack_intent, 2);  // in flight: done or not
  seen_ = {{2, Obs{}}, {4, waiting(4)}};
  EXPECT_TRUE(verdict().explained);
  seen_ = {{2, seen_at(clock_, JobState::reserved, 1, kT - kMs, kT + 200 * kMs)}, {4, waiting(4)}};
  EXPECT_TRUE(verdict().explained);
  seen_[4] = Obs{};  // but it touched job 2 only
  EXPECT_FALSE(verdict().explained);
}

// Thread 0 pauses topic 0 (job 4's) between two pushes: whether the pause was kept is told by
// the topic's state, and it is kept or lost with the calls around it.
TEST_F(PrefixCheck, APauseIsKeptOrLostInItsPlaceAmongTheCalls) {
  push(0, 4);
  pause(0, 0);
  push(0, 8);
  seen_ = {{4, waiting(4)}, {8, waiting(8)}};
  paused_ = 0;  // the pause lost, the push after it kept
  PrefixVerdict v = verdict();
  EXPECT_FALSE(v.explained);
  EXPECT_NE(v.why.find("topic crash-a should be paused"), std::string::npos) << v.why;
  paused_ = 1;
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 0u);
  seen_[8] = Obs{};  // the last push lost
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 1u);
  paused_ = 0;  // and the pause before it
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 2u);
  paused_ = 2;  // a topic no call paused
  EXPECT_FALSE(verdict().explained);
}

// Thread 0 creates sched-1, takes and acks its occurrence at kT, pauses it, then pushes job 4:
// the schedule's state and whether the ack was kept are told by the store, and each call is
// kept or lost in its place among the calls.
TEST_F(PrefixCheck, ScheduleCallsAreKeptOrLostInTheirPlaceAmongTheCalls) {
  schedule_call(Kind::sched_intent, 1, /*create=*/true, /*rule=*/1);
  take_occurrence(1, kT);
  schedule_call(Kind::spause_intent, 1);
  schedule_call(Kind::spause_intent, 1);  // paused already: writes nothing
  push(0, 4);
  const std::pair<uint64_t, int64_t> occ{1, kT};
  sched_.seen = {{1, SchedState{true, 1}}};
  sched_.acks = {{occ, true}};
  seen_ = {{4, waiting(4)}};
  PrefixVerdict v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 0u);
  EXPECT_EQ(v.answered, 4u);  // the second pause_schedule is no write
  sched_.seen[1].paused = false;  // the pause lost, the push after it kept
  v = verdict();
  EXPECT_FALSE(v.explained);
  EXPECT_NE(v.why.find("sched-1 should be paused with rule every 3s, the store has it running"),
            std::string::npos)
      << v.why;
  seen_[4] = Obs{};  // and the push: the latest calls lost
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 2u);
  EXPECT_EQ(v.lost_schedule_calls, 1u);
  sched_.acks[occ] = false;  // and the ack before them
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 3u);
  EXPECT_EQ(v.lost_schedule_calls, 2u);
  sched_.seen[1].paused = true;  // but not the ack lost with the pause after it kept
  EXPECT_FALSE(verdict().explained);
  sched_.seen = {{1, SchedState{false, 0}}};  // nor a rule no call set
  EXPECT_FALSE(verdict().explained);
  sched_.seen = {{1, SchedState{false, 1}}, {2, SchedState{false, 1}}};  // nor one no call made
  EXPECT_FALSE(verdict().explained);
  sched_.seen = {};  // everything lost, the schedule's creation included
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 4u);
  // A schedule there before the cycle and never unscheduled in it cannot be gone.
  records_.clear();
  sched_.before = {{3, SchedState{false, 0}}};
  sched_.acks.clear();
  push(0, 4);
  seen_ = {{4, Obs{}}};
  v = verdict();
  EXPECT_FALSE(v.explained);
  EXPECT_NE(v.why.find("sched-3 should be running with rule every 1s, the store has it gone"),
            std::string::npos)
      << v.why;
  sched_.seen = {{3, SchedState{false, 0}}};
  EXPECT_TRUE(verdict().explained);
}

// With the consumers, topic 1 (jobs 2, 6) is the consumer thread's, pushed by thread 0; topic 3
// (jobs 3, 7) is consume()'s, pushed by thread 1.
TEST_F(PrefixCheck, AJobAConsumerTookKeepsItsPushAndEveryCallBeforeIt) {
  consumer_ = true;
  push(0, 2);
  push(0, 6);
  deliver(kConsumer, 6, 1);
  seen_ = {{2, waiting(2)}, {6, held(6, 1)}};
  PrefixVerdict v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 0u);
  seen_[6] = waiting(6);  // the delivery lost
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 1u);
  EXPECT_EQ(v.lost_in[kConsumerLane], 1u);
  // The delivery kept, the push of job 2 (before job 6's) lost: no prefix.
  seen_ = {{2, Obs{}}, {6, held(6, 1)}};
  v = verdict();
  EXPECT_FALSE(v.explained);
  EXPECT_NE(v.why.find("took a job whose push is lost"), std::string::npos) << v.why;
  // A pushed job the consumer never took is in the store exactly when its push was kept.
  seen_ = {{2, Obs{}}, {6, Obs{}}};
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 3u);
}

TEST_F(PrefixCheck, TheConsumeLoopsReservesAndAcksAreOneLane) {
  consumer_ = true;
  push(1, 3);
  push(1, 7);
  deliver(kConsumeReserves, 3, 1);
  ack(kConsumeAcks, 3);
  deliver(kConsumeReserves, 7, 1);
  seen_ = {{3, Obs{}}, {7, held(7, 1)}};
  PrefixVerdict v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 0u);
  seen_[3] = held(3, 1);  // the ack lost, the delivery after it kept
  EXPECT_FALSE(verdict().explained);
  seen_[7] = waiting(7);  // both lost
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost_in[kConsumeLane], 2u);
  // A call of thread 1 that began after the consume() loop's delivery returned: kept, it keeps
  // the delivery.
  push(1, 5);
  seen_[5] = waiting(5);
  v = verdict();
  EXPECT_FALSE(v.explained);
  EXPECT_NE(v.why.find("began after the consume() loop's reserve that delivered job-7"),
            std::string::npos)
      << v.why;
}

}  // namespace
}  // namespace delayq::crash
