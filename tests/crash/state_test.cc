// The harness's comparisons on their own: the load's shape (load.h), what a store may show of
// a predicted record (job_state.h), and the arithmetic of a schedule's occurrences
// (schedule_accounting.cc). The prefix search's: prefix_test.cc.
#include <gtest/gtest.h>

#include <stdexcept>

#include "driver.h"
#include "hand_made.h"
#include "job_state.h"

namespace delayq::crash {
namespace {

using namespace hand_made;

// The load's shape in a run of 4 worker threads (load.h): job % 4 is the thread that pushes it,
// the consumers take the second topics of threads 0 and 1 only, threads 2 and 3 handle the jobs
// of both their topics; a model of 0 or more than kMaxThreads threads is refused.
TEST(LoadShape, FourThreadsSpreadJobsAndTopicsAsLoadHSays) {
  Model m = new_model(7, 4);
  m.consumer = true;
  EXPECT_EQ(m.owner(6), 2u);
  EXPECT_EQ(m.topic_index(6), 5u);  // 2 * 2 + (6 / 4) % 2
  EXPECT_EQ(m.handler_of(6), 2u);
  EXPECT_EQ(m.handler_of(5), kConsumeAcks);  // thread 1's second topic, 3: consume()'s
  EXPECT_EQ(m.handler_of(4), kConsumer);     // thread 0's second topic, 1: the consumer's
  for (size_t topic = 0; topic < 8; ++topic)
    EXPECT_EQ(m.consumed_topic(topic), topic == kConsumerTopic || topic == kConsumeTopic) << topic;
  EXPECT_EQ(spec_of(m.salt, 6, Duration::zero(), m.threads).topic, kTopics[5]);
  EXPECT_THROW(new_model(7, 0), std::out_of_range);
  EXPECT_THROW(new_model(7, kMaxThreads + 1), std::out_of_range);
  EXPECT_EQ(new_model(7).threads, kDefaultThreads);
}

// Jobs 2 and 4 have the long ttr (200 ms); see ttr_of().
TEST(JobStateCheck, AWaitingJobIsDelayedUntilItsDueTimeThenReady) {
  const Rec r{St::waiting, 0, Span{kT, kT + kMs}, {}, 0};
  EXPECT_TRUE(shows(r, 2, seen_at(kT - kMs, JobState::delayed, 0, kT)));
  EXPECT_FALSE(shows(r, 2, seen_at(kT + 2 * kMs, JobState::delayed, 0, kT)));  // late
  EXPECT_FALSE(shows(r, 2, seen_at(kT - kMs, JobState::ready, 0, kT)));        // early
  EXPECT_TRUE(shows(r, 2, seen_at(kT + 2 * kMs, JobState::ready, 0, kT + kMs)));
  EXPECT_FALSE(shows(r, 2, seen_at(kT + 2 * kMs, JobState::ready, 0, kT + 2 * kMs)));  // due
  EXPECT_FALSE(shows(r, 2, seen_at(kT + 2 * kMs, JobState::ready, 1, kT)));            // attempts
}

TEST(JobStateCheck, ALeaseThatRanOutIsRetriedOrDeadLettered) {
  const int64_t lease = kT + 200 * kMs;
  Rec r{St::reserved, 1, Span::at(kT), Span::at(lease), 7};
  EXPECT_TRUE(shows(r, 2, seen_at(lease - kMs, JobState::reserved, 1, kT, lease)));
  EXPECT_FALSE(shows(r, 2, seen_at(lease - kMs, JobState::reserved, 1, kT, lease + kMs)));
  EXPECT_FALSE(shows(r, 2, seen_at(lease + kMs, JobState::reserved, 1, kT, lease)));
  // Retried kRetryDelay after the lease ran out, or when a reopened store handled it.
  const int64_t retry = lease + kRetryDelay.count();
  EXPECT_TRUE(shows(r, 2, seen_at(lease + kMs, JobState::delayed, 1, retry)));
  EXPECT_TRUE(shows(r, 2, seen_at(retry + 50 * kMs, JobState::ready, 1, retry + 40 * kMs)));
  EXPECT_FALSE(shows(r, 2, seen_at(lease + kMs, JobState::delayed, 1, retry - kMs)));
  EXPECT_FALSE(shows(r, 2, seen_at(lease + kMs, JobState::dead, 1, kT)));
  r.attempts = kMaxAttempts;  // the last attempt: dead
  EXPECT_TRUE(shows(r, 2, seen_at(lease + kMs, JobState::dead, kMaxAttempts, kT)));
  EXPECT_FALSE(shows(r, 2, seen_at(lease + kMs, JobState::delayed, kMaxAttempts, retry)));
}

TEST(JobStateCheck, ALostNackOrRescheduleDoesNotMatch) {
  const int64_t lease = kT + 200 * kMs;
  const Rec held{St::reserved, 1, Span::at(kT), Span::at(lease), 7};
  Record nack = make_record(Kind::nack_intent, 2);
  nack.arg = 50 * kMs;
  const Rec nacked = after_call(held, 2, nack, nullptr, Span{kT + kMs, kT + 2 * kMs});
  EXPECT_EQ(nacked.st, St::waiting);
  EXPECT_FALSE(shows(nacked, 2, seen_at(kT + 3 * kMs, JobState::reserved, 1, kT, lease)));
  EXPECT_TRUE(shows(nacked, 2, seen_at(kT + 3 * kMs, JobState::delayed, 1, kT + 52 * kMs)));
  Record resched = make_record(Kind::resched_intent, 4);
  resched.arg = kT + 100 * kMs;
  const Rec waiting{St::waiting, 0, Span::at(kT + 10 * kMs), {}, 0};
  const Rec moved = after_call(waiting, 4, resched, nullptr, Span{kT, kT + kMs});
  EXPECT_FALSE(shows(moved, 4, seen_at(kT + 2 * kMs, JobState::delayed, 0, kT + 10 * kMs)));
  EXPECT_TRUE(shows(moved, 4, seen_at(kT + 2 * kMs, JobState::delayed, 0, kT + 100 * kMs)));
}

TEST(JobStateCheck, AnUnreportedDeliveryAddsOneAttemptAndALeaseFromTheCall) {
  const Rec r{St::waiting, 0, Span::at(kT), {}, 0};
  const Span call{kT + kMs, kT + 3 * kMs};
  const int64_t ttr = ttr_of(2).count();
  const Obs held = seen_at(kT + 4 * kMs, JobState::reserved, 1, kT, kT + 2 * kMs + ttr);
  EXPECT_FALSE(shows(r, 2, held));
  EXPECT_TRUE(shows_after_unreported_delivery(r, 2, held, call));
  const Obs late = seen_at(kT + 4 * kMs, JobState::reserved, 1, kT, kT + 5 * kMs + ttr);
  EXPECT_FALSE(shows_after_unreported_delivery(r, 2, late, call));
  const Obs twice = seen_at(kT + 4 * kMs, JobState::reserved, 2, kT, kT + 2 * kMs + ttr);
  EXPECT_FALSE(shows_after_unreported_delivery(r, 2, twice, call));
}

// ---- every occurrence of a schedule accounted for (schedule_accounting.cc) ----------------------

constexpr int64_t kSecond = 1000 * kMs;

// Schedule 1 (rule "every 1s") created by a schedule() called at kT that returned 1 ms later.
Model model_with_a_schedule() {
  Model m = new_model(7);
  Record create = make_record(Kind::sched_intent, 1);
  create.arg = 1;
  create.t0 = kT;
  EXPECT_TRUE(m.apply(create));
  EXPECT_TRUE(m.apply(done_record(Kind::sched_done, create, Status(), kT + kMs)));
  return m;
}

Observation::Schedule looked(uint64_t fired, uint64_t skipped_catch_up, int64_t next,
                             bool paused = false) {
  Observation::Schedule s;
  s.paused = paused;
  s.rule = 0;
  s.fired = fired;
  s.skipped_catch_up = skipped_catch_up;
  s.next = next;
  return s;
}

::testing::AssertionResult first_problem_says(const Model& m, const std::string& what) {
  if (!m.problems.empty() && m.problems.front().find(what) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the first problem does not say \"" << what
                                       << "\": " << ::testing::PrintToString(m.problems);
}

::testing::AssertionResult no_problem(const Model& m) {
  if (m.problems.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << m.problems.front();
}

// Anchored at its creation's instant A (kT + 500 us), and open 5.5 s later: fired at A, the
// catch-up (`one`) fired A + 5 s and skipped the 4 between, next A + 6 s.
TEST(ScheduleAccounting, EveryOccurrenceDueByTheOpenFiredOrSkippedOnce) {
  const int64_t a = kT + kMs / 2;
  Model m = model_with_a_schedule();
  check_occurrences_accounted(m, 1, looked(2, 4, a + 6 * kSecond), a + 5500 * kMs);
  EXPECT_TRUE(no_problem(m));
  EXPECT_EQ(m.counts.reach_checks, 1u);
  EXPECT_EQ(m.counts.caught_up, 1u);
  // Reopened again 3 s later: 3 more fired, on time or by catch-up.
  check_occurrences_accounted(m, 1, looked(5, 4, a + 9 * kSecond), a + 8500 * kMs);
  EXPECT_TRUE(no_problem(m));
  EXPECT_EQ(m.counts.reach_checks, 2u);
}

TEST(ScheduleAccounting, AnOccurrenceNeitherFiredNorSkippedIsCaught) {
  const int64_t a = kT + kMs / 2;
  {
    Model m = model_with_a_schedule();
    check_occurrences_accounted(m, 1, looked(2, 3, a + 6 * kSecond), a + 5500 * kMs);
    EXPECT_TRUE(first_problem_says(m, "sched-1 counts 2 fired"));
    EXPECT_TRUE(first_problem_says(m, "neither fired nor skipped"));
  }
  {
    Model m = model_with_a_schedule();
    check_occurrences_accounted(m, 1, looked(2, 4, a + 6 * kSecond), a + 5500 * kMs);
    check_occurrences_accounted(m, 1, looked(5, 4, a + 10 * kSecond), a + 9500 * kMs);
    EXPECT_TRUE(first_problem_says(m, "as when a reopened store last showed it"));
  }
  {  // one counted twice
    Model m = model_with_a_schedule();
    check_occurrences_accounted(m, 1, looked(3, 4, a + 6 * kSecond), a + 5500 * kMs);
    EXPECT_TRUE(first_problem_says(m, "counted twice"));
  }
}

// Running, its next occurrence at or before the instant the open began: left behind.
TEST(ScheduleAccounting, ARunningScheduleLeftBehindAtTheOpenIsCaught) {
  const int64_t a = kT + kMs / 2;
  Model m = model_with_a_schedule();
  check_occurrences_accounted(m, 1, looked(2, 4, a + 6 * kSecond), a + 6 * kSecond);
  EXPECT_TRUE(first_problem_says(m, "not after its open began"));
  // Paused, it may lag the open: what fell meanwhile goes by catch-up when it is resumed.
  Model p = model_with_a_schedule();
  check_occurrences_accounted(p, 1, looked(1, 0, a + kSecond, true), a + 6 * kSecond);
  EXPECT_TRUE(no_problem(p));
}

TEST(ScheduleAccounting, APausedScheduleFiresNothingUntilAResumeBegins) {
  const int64_t a = kT + kMs / 2;
  Model m = model_with_a_schedule();
  check_occurrences_accounted(m, 1, looked(1, 0, a + kSecond, true), a + 6 * kSecond);
  check_occurrences_accounted(m, 1, looked(1, 0, a + kSecond, true), a + 9 * kSecond);
  EXPECT_TRUE(no_problem(m));
  EXPECT_EQ(m.counts.paused_unchanged, 1u);
  Model fired = m;
  check_occurrences_accounted(fired, 1, looked(2, 0, a + 2 * kSecond, true), a + 12 * kSecond);
  EXPECT_TRUE(first_problem_says(fired, "while paused"));
  // A resume began (the worker was killed in it, or it returned): it may have fired.
  Record resume = make_record(Kind::sresume_intent, 1);
  resume.t0 = a + 10 * kSecond;
  ASSERT_TRUE(m.apply(resume));
  m.settle_in_flight(a + 11 * kSecond);
  // Resumed at A + 10 s: the catch-up fired A + 10 s and skipped the 9 before; paused again.
  check_occurrences_accounted(m, 1, looked(2, 9, a + 11 * kSecond, true), a + 12 * kSecond);
  EXPECT_TRUE(no_problem(m));
}

// A replacement starts its rule from its own instant: where the counters reach is not checked
// across it, and known again from the next look.
TEST(ScheduleAccounting, AReplacementIsNotCheckedAcrossThenFromItsNextLook) {
  const int64_t a = kT + kMs / 2;
  Model m = model_with_a_schedule();
  check_occurrences_accounted(m, 1, looked(2, 4, a + 6 * kSecond), a + 5500 * kMs);
  Record replace = make_record(Kind::sched_intent, 1);
  replace.n = 1;  // every 3s
  replace.t0 = a + 7 * kSecond + 123 * kMs;
  ASSERT_TRUE(m.apply(replace));
  ASSERT_TRUE(m.apply(done_record(Kind::sched_done, replace, Status(), replace.t0 + kMs)));
  Observation::Schedule now = looked(3, 4, replace.t0 + 3 * kSecond);
  now.rule = 1;
  check_occurrences_accounted(m, 1, now, replace.t0 + 2 * kSecond);
  EXPECT_TRUE(no_problem(m));
  EXPECT_EQ(m.counts.reach_checks, 1u);
  now.next = *now.next + 6 * kSecond;  // two occurrences lost
  check_occurrences_accounted(m, 1, now, replace.t0 + 8 * kSecond);
  EXPECT_TRUE(first_problem_says(m, "neither fired nor skipped"));
}

}  // namespace
}  // namespace delayq::crash
