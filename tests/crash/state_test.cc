// The harness's comparisons on their own: the load's shape (load.h) and what a store may show of
// a predicted record (job_state.h). The prefix search's: prefix_test.cc.
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

}  // namespace
}  // namespace delayq::crash
