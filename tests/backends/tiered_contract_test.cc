// The contract kept by jobs that live only on disk (docs/tiered-store.md, "Calls on disk-only
// jobs"): get, cancel, reschedule across the horizon both ways, duplicate ids, tokens, dead
// letters and the counts of stats(), each checked again after a reopen. ManualClock, a horizon of
// a minute: a job due in hours is on disk until the clock comes within the minute.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tiered_fixture.h"

namespace delayq {
namespace {

TEST_F(TieredStore, GetCancelAndStatsSeeADiskOnlyJob) {
  open();
  ASSERT_TRUE(q_->push({.topic = "a",
                        .id = "x",
                        .delay = 5h,
                        .ttr = 42s,
                        .body = "payload",
                        .retry = RetryPolicy::fixed(1s, 4)})
                  .ok());
  push("y", 6h, "b");
  EXPECT_EQ(in_memory(), 0u);
  for (int reopen = 0; reopen < 2; ++reopen) {
    auto x = q_->get("x");
    ASSERT_TRUE(x.ok()) << x.status().to_string();
    EXPECT_EQ(x->topic, "a");
    EXPECT_EQ(x->state, JobState::delayed);
    EXPECT_EQ(x->attempts, 0u);
    EXPECT_EQ(x->max_attempts, 4u);
    EXPECT_EQ(x->ttr, 42s);
    EXPECT_EQ(x->body, "payload");
    EXPECT_EQ(x->due, clock_.now() + 5h);
    const Stats st = q_->stats();
    EXPECT_EQ(st.topics.at("a"), (TopicStats{.delayed = 1}));
    EXPECT_EQ(st.topics.at("b"), (TopicStats{.delayed = 1}));
    open();
  }
  ASSERT_TRUE(q_->cancel("x").ok());
  EXPECT_TRUE(q_->get("x").is(Errc::not_found));
  EXPECT_TRUE(q_->cancel("x").is(Errc::not_found));
  for (int reopen = 0; reopen < 2; ++reopen) {
    const Stats st = q_->stats();
    EXPECT_EQ(st.topics.count("a"), 0u);
    EXPECT_EQ(st.topics.at("b"), (TopicStats{.delayed = 1}));
    EXPECT_EQ(st.pushed, 2u);
    EXPECT_EQ(st.cancelled, 1u);
    EXPECT_TRUE(q_->get("x").is(Errc::not_found));
    open();
  }
}

TEST_F(TieredStore, AnIdIsTakenInEitherTierUntilItsJobIsGone) {
  open();
  push("far", 5h);
  push("near", 10s);
  for (int reopen = 0; reopen < 2; ++reopen) {
    for (Duration delay : {Duration(0s), Duration(10s), Duration(5h)}) {
      EXPECT_TRUE(q_->push({.topic = "t", .id = "far", .delay = delay}).is(Errc::duplicate_id));
      EXPECT_TRUE(q_->push({.topic = "t", .id = "near", .delay = delay}).is(Errc::duplicate_id));
    }
    open();
  }
  ASSERT_TRUE(q_->cancel("far").ok());
  push("far", 10s);  // free again, now in memory
  EXPECT_EQ(in_memory(), 2u);
  // Generated ids on disk are found like any other.
  auto id = q_->push({.topic = "t", .delay = 9h});
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(q_->get(*id)->state, JobState::delayed);
  EXPECT_EQ(in_memory(), 2u);
}

TEST_F(TieredStore, RescheduleMovesJobsAcrossTheHorizonBothWays) {
  open();
  push("in", 5h);     // disk, then memory
  push("now", 5h);    // disk, then ready at once
  push("out", 10s);   // memory, then disk
  push("along", 5h);  // disk, then further on disk
  const TimePoint t0 = clock_.now();
  ASSERT_TRUE(q_->reschedule("in", t0 + 30s).ok());
  ASSERT_TRUE(q_->reschedule("now", t0 - 1s).ok());
  ASSERT_TRUE(q_->reschedule("out", t0 + 3h).ok());
  ASSERT_TRUE(q_->reschedule("along", t0 + 7h).ok());
  EXPECT_EQ(in_memory(), 2u);  // "in" and "now"
  open();
  EXPECT_EQ(q_->get("now")->state, JobState::ready);
  EXPECT_EQ(q_->get("in")->due, t0 + 30s);
  EXPECT_EQ(q_->get("out")->due, t0 + 3h);
  EXPECT_EQ(q_->get("along")->due, t0 + 7h);
  EXPECT_EQ(drain(), std::vector<std::string>{"now"});
  clock_.set(t0 + 30s);
  EXPECT_EQ(drain(), std::vector<std::string>{"in"});
  clock_.set(t0 + 3h - 1ns);
  EXPECT_TRUE(drain().empty());
  clock_.set(t0 + 3h);
  EXPECT_EQ(drain(), std::vector<std::string>{"out"});
  clock_.set(t0 + 5h);
  EXPECT_TRUE(drain().empty()) << "'along' kept its old due time";
  clock_.set(t0 + 7h);
  EXPECT_EQ(drain(), std::vector<std::string>{"along"});
}

TEST_F(TieredStore, RescheduleRefusesReservedAndDeadJobsAndBadTimesWhateverTheTier) {
  open();
  ASSERT_TRUE(q_->push({.topic = "t", .id = "held", .retry = RetryPolicy::fixed(1s, 1)}).ok());
  auto d = q_->reserve("t", 0ms);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(q_->reschedule("held", clock_.now() + 5h).is(Errc::invalid_state));
  ASSERT_TRUE(q_->nack(d->token).ok());  // its only attempt: dead
  EXPECT_TRUE(q_->reschedule("held", clock_.now() + 5h).is(Errc::invalid_state));
  push("far", 5h);
  EXPECT_TRUE(q_->reschedule("far", clock_.now() + 3651 * std::chrono::hours(24))
                  .is(Errc::invalid_argument));
  EXPECT_TRUE(q_->requeue_dead("far").is(Errc::invalid_state));
  EXPECT_TRUE(q_->reschedule("gone", clock_.now() + 5h).is(Errc::not_found));
  EXPECT_EQ(q_->get("far")->due, clock_.now() + 5h);
}

TEST_F(TieredStore, ATokenOfAJobNowOnDiskIsStaleAndTheJobKeepsItsAttempts) {
  open();
  push("j", 0s);
  auto d = q_->reserve("t", 0ms);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(q_->nack(d->token, 10s).ok());
  ASSERT_TRUE(q_->reschedule("j", clock_.now() + 5h).ok());  // now on disk only
  EXPECT_EQ(in_memory(), 0u);
  for (int reopen = 0; reopen < 2; ++reopen) {
    EXPECT_TRUE(q_->ack(d->token).is(Errc::stale_token));
    EXPECT_TRUE(q_->nack(d->token).is(Errc::stale_token));
    EXPECT_TRUE(q_->touch(d->token).is(Errc::stale_token));
    EXPECT_TRUE(q_->release(d->token).is(Errc::stale_token));
    EXPECT_TRUE(q_->dead_letter(d->token).is(Errc::stale_token));
    EXPECT_TRUE(q_->ack(Token{"nobody", 1}).is(Errc::not_found));
    EXPECT_EQ(q_->get("j")->attempts, 1u);
    open();
  }
  clock_.advance(5h);
  auto again = q_->reserve("t", 0ms);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->attempt, 2u);
  EXPECT_GT(again->token.fence, d->token.fence);
}

TEST_F(TieredStore, AJobLoadedFromDiskIsDeadLetteredAndRequeuedLikeAnyOther) {
  open();
  ASSERT_TRUE(
      q_->push({.topic = "t", .id = "d", .delay = 5h, .retry = RetryPolicy::fixed(1s, 1)}).ok());
  clock_.advance(5h);
  auto d = q_->reserve("t", 0ms);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(q_->nack(d->token).ok());
  open();
  auto dead = q_->list_dead("t", 10);
  ASSERT_TRUE(dead.ok());
  ASSERT_EQ(dead->size(), 1u);
  EXPECT_EQ(dead->front().id, "d");
  EXPECT_EQ(q_->stats().topics.at("t"), (TopicStats{.dead = 1}));
  ASSERT_TRUE(q_->requeue_dead("d").ok());
  EXPECT_EQ(drain(), std::vector<std::string>{"d"});
  EXPECT_EQ(q_->stats().acked, 1u);
}

}  // namespace
}  // namespace delayq
