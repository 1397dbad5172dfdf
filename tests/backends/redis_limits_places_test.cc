// Concurrency limits on the Redis backend (TopicLimits::max_in_flight: the topic's leases zset
// counted by the claim script), where Redis has its own (the rules every backend shares, release
// and reopening included, run in flow_limits_places_test.cc on Redis too). Here, on a ManualClock
// through RedisOptions::clock and with the waiters' sweep a minute, so that only a published
// wake-up wakes them: each way out of `reserved` and each change of the limits wakes a blocked
// reserve(); equal limits change nothing and clearing starts afresh; a batched claim
// (claim_batch > 1, and the ack that claims the next jobs) takes no more than the tokens and
// places allow, on one shard and on four; on four, touch moves the job's place on the home shard.
#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "redis_limits.h"

namespace delayq::redis_limits {
namespace {

std::string id_of(int i) { return "j" + std::to_string(10 + i); }  // sorts as pushed

// The batched claims' limits: 5 an hour, 3 at once.
const TopicLimits kBatched{.rate = TopicLimits::Rate{.count = 5, .per = 1h, .burst = 5},
                           .max_in_flight = 3};

TEST_F(RedisLimits, TheConcurrencyCapHoldsAndEveryExitFreesAPlace) {
  for (int i = 0; i < 12; ++i) push({.topic = "t", .id = id_of(i), .ttr = 1h});
  set_limits("t", TopicLimits{.max_in_flight = 2});
  std::deque<Delivery> held;  // oldest first
  for (int i = 0; i < 2; ++i) {
    auto d = q().reserve("t", 0ms);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    held.push_back(*d);
    advance(1s);
  }
  EXPECT_EQ(take("t"), "");
  const std::vector<std::pair<std::string, std::function<Status(const Delivery&)>>> exits = {
      {"ack", [&](const Delivery& d) { return q().ack(d.token); }},
      {"nack", [&](const Delivery& d) { return q().nack(d.token, 1h); }},
      {"release", [&](const Delivery& d) { return q().release(d.token); }},
      {"dead_letter", [&](const Delivery& d) { return q().dead_letter(d.token); }},
      {"cancel", [&](const Delivery& d) { return q().cancel(d.id); }},
  };
  for (const auto& [name, exit] : exits) {
    advance(1s);  // every lease ends at its own instant
    Blocked waiter(q(), "t");
    EXPECT_FALSE(waiter.returned_within(50ms)) << name << ": past the cap";
    const Status s = exit(held.front());
    ASSERT_TRUE(s.ok()) << name << ": " << s.to_string();
    held.pop_front();
    ASSERT_TRUE(waiter.returned_within(5s)) << name << " did not wake the waiting consumer";
    EXPECT_EQ(waiter.id().rfind("j", 0), 0u) << name;
    held.push_back(waiter.delivery());
    EXPECT_EQ(take("t"), "") << name << " let more than one through";
    EXPECT_EQ(flow_of("t").in_flight, 2u) << name;
  }
  // The oldest lease runs out; the other, a second younger at least, does not.
  Blocked waiter(q(), "t");
  EXPECT_FALSE(waiter.returned_within(50ms));
  advance(held.front().lease_deadline - now());
  EXPECT_EQ(waiter.id().rfind("j", 0), 0u) << "a lease that ran out did not wake the consumer";
  EXPECT_EQ(take("t"), "");
  EXPECT_EQ(flow_of("t").in_flight, 2u);
}

TEST_F(RedisLimits, LimitsCanBeChangedAndClearedAtRunTime) {
  for (int i = 0; i < 6; ++i) push({.topic = "t", .id = id_of(i), .ttr = 1h});
  set_limits("t", rate(1, 1h, 1));
  ASSERT_EQ(take("t"), id_of(0));
  {
    // Raised to one a second: the next token comes a second after the change, not an hour.
    Blocked waiter(q(), "t");
    EXPECT_FALSE(waiter.returned_within(50ms));
    set_limits("t", rate(1, 1s, 1));
    advance(999ms);
    EXPECT_FALSE(waiter.returned_within(50ms));
    advance(1ms);
    EXPECT_EQ(waiter.id(), id_of(1));
  }
  {
    // Spent again; clearing the limits lets the waiting consumer through at once.
    Blocked waiter(q(), "t");
    EXPECT_FALSE(waiter.returned_within(50ms));
    ASSERT_TRUE(q().clear_topic_limits("t").ok());
    ASSERT_TRUE(waiter.returned_within(5s)) << "clearing did not wake the waiter";
    EXPECT_EQ(waiter.id(), id_of(2));
  }
  EXPECT_FALSE(q().stats().flow.contains("t"));
  EXPECT_EQ(take("t"), id_of(3));
  EXPECT_EQ(take("t"), id_of(4));
  // A cap installed at run time counts the jobs already reserved: five, so it is full.
  set_limits("t", TopicLimits{.max_in_flight = 5});
  EXPECT_EQ(flow_of("t").in_flight, 5u);
  EXPECT_EQ(take("t"), "");
  Blocked waiter(q(), "t");
  EXPECT_FALSE(waiter.returned_within(50ms));
  set_limits("t", TopicLimits{.max_in_flight = 6});  // raised: the waiter goes
  ASSERT_TRUE(waiter.returned_within(5s)) << "raising the cap did not wake the waiter";
  EXPECT_EQ(waiter.id(), id_of(5));
  EXPECT_EQ(flow_of("t").in_flight, 6u);
}

// Setting the limits a topic has changes nothing (its next token stays where it was); other
// limits keep the throttled counts; clearing drops them and the bucket, so limits set again start
// with a full bucket and no counts.
TEST_F(RedisLimits, EqualLimitsChangeNothingAndClearingStartsAfresh) {
  for (int i = 0; i < 6; ++i) push({.topic = "t", .id = id_of(i), .ttr = 24h});
  set_limits("t", rate(1, 1h, 1));
  ASSERT_EQ(take("t"), id_of(0));
  EXPECT_EQ(take("t"), "");
  advance(30min);
  set_limits("t", rate(1, 1h, 1));  // a change would put the next token an hour from now
  advance(30min);
  EXPECT_EQ(take("t"), id_of(1));
  EXPECT_EQ(flow_of("t").throttled_rate, 1u);
  set_limits("t", rate(1, 1h, 2));
  EXPECT_EQ(flow_of("t"), (TopicFlow{.limits = rate(1, 1h, 2), .tokens = 1, .in_flight = 2,
                                     .throttled_rate = 1}));
  ASSERT_TRUE(q().clear_topic_limits("t").ok());
  set_limits("t", rate(1, 1h, 2));
  EXPECT_EQ(flow_of("t"), (TopicFlow{.limits = rate(1, 1h, 2), .tokens = 2, .in_flight = 2}));
}

// claim_batch = 8: a reserve() takes up to 8 jobs ahead, and an ack of a job of that topic takes
// the next ones in the same script run. Both take no more than the places (3) and tokens (5 an
// hour) allow, and the jobs kept ahead count as in flight and spent. On the server's clock (the
// client times the jobs it keeps on the real clock; an hour's rate does not refill meanwhile).
class BatchedLimits : public RedisLimits {
 protected:
  // The test's queue replaced by one of `shards` shards with claim_batch 8 on the server's clock
  // (the client times the jobs it keeps on the real clock), `jobs` jobs of topic t and kBatched.
  void batched_queue(uint32_t shards, const std::string& queue, int jobs) {
    q_->close();
    q_ = open(8, shards, queue, /*manual=*/false);
    ASSERT_TRUE(q_);
    for (int i = 0; i < jobs; ++i) push({.topic = "t", .id = id_of(i), .ttr = 1h});
    set_limits("t", kBatched);
  }
  const TopicLimits& limits = kBatched;
};

TEST_F(BatchedLimits, ABatchedClaimTakesNoMoreThanTheLimitsAllow) {
  batched_queue(1, "batched", 10);
  if (HasFatalFailure()) return;
  std::vector<Delivery> got;
  for (int i = 0; i < 3; ++i) {
    auto d = q().reserve("t", 0ms);
    ASSERT_TRUE(d.ok()) << i << ": " << d.status().to_string();
    got.push_back(*d);
  }
  EXPECT_EQ(command("ZCARD {dq:batched:0}:l:t"), ":3");
  EXPECT_EQ(take("t"), "");
  EXPECT_EQ(flow_of("t"), (TopicFlow{.limits = limits, .tokens = 2, .in_flight = 3,
                                     .throttled_concurrency = 2}));
  ASSERT_TRUE(q().ack(got[0].token).ok());  // takes one more ahead: one place
  EXPECT_EQ(flow_of("t").in_flight, 3u);
  EXPECT_EQ(flow_of("t").tokens, 1u);
  auto d = q().reserve("t", 0ms);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->id, id_of(3));
  ASSERT_TRUE(q().ack(got[1].token).ok());  // takes the last token ahead
  ASSERT_TRUE(q().ack(got[2].token).ok());  // a job kept ahead: no claim
  EXPECT_EQ(flow_of("t").in_flight, 2u);
  EXPECT_EQ(flow_of("t").tokens, 0u);
  EXPECT_EQ(take("t"), id_of(4));
  EXPECT_EQ(take("t"), "");
  EXPECT_EQ(command("ZCARD {dq:batched:0}:r:t"), ":5");
}

// Four shards: touch moves the job's place on the home shard to the new lease deadline, so the
// place outlives the first lease and frees itself at the second.
TEST_F(RedisLimits, OnFourShardsATouchMovesThePlace) {
  auto q = open(1, 4, "touched");
  ASSERT_TRUE(q);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(q->push({.topic = "t", .id = id_of(i), .ttr = 1min}).ok());
  ASSERT_TRUE(q->set_topic_limits("t", TopicLimits{.max_in_flight = 1}).ok());
  auto d = q->reserve("t", 0ms);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  advance(50s);
  ASSERT_TRUE(q->touch(d->token).ok());  // the lease ends 1 min from now
  advance(20s);
  EXPECT_FALSE(q->reserve("t", 0ms).ok()) << "the place freed at the first lease's deadline";
  advance(40s - 1us);
  EXPECT_FALSE(q->reserve("t", 0ms).ok());
  advance(1us);
  EXPECT_TRUE(q->reserve("t", 0ms).ok()) << "the touched lease ran out: its place frees itself";
  q->close();
}

// Four shards, claim_batch = 8: a reserve() takes ahead no more than the home shard admits, and
// an ack does not claim from a limited topic (its next reserve() asks the home shard): never more
// than the cap's 3 in flight, never more than the 5 tokens an hour.
TEST_F(BatchedLimits, OnFourShardsABatchedClaimTakesNoMoreThanTheLimitsAllow) {
  batched_queue(4, "batched4", 40);
  if (HasFatalFailure()) return;
  std::vector<Delivery> got;
  for (int i = 0; i < 6; ++i)
    if (auto d = q().reserve("t", 0ms); d.ok()) got.push_back(*d);
  EXPECT_EQ(got.size(), 3u);
  EXPECT_EQ(flow_of("t").in_flight, 3u);
  for (const Delivery& d : got) ASSERT_TRUE(q().ack(d.token).ok());
  EXPECT_EQ(flow_of("t").in_flight, 0u);
  int more = 0;
  for (int i = 0; i < 6; ++i) more += q().reserve("t", 0ms).ok() ? 1 : 0;
  EXPECT_EQ(more, 2) << "5 tokens in all";
  // Counted once per reserve call that held back a ready job, as on one shard: the first batch
  // (3 of 8 asked, by the cap) and the three refused after it; then the second batch (2 of 8, by
  // the rate) and the four refused after it.
  EXPECT_EQ(flow_of("t"), (TopicFlow{.limits = limits, .tokens = 0, .in_flight = 2,
                                     .throttled_rate = 5, .throttled_concurrency = 4}));
}

}  // namespace
}  // namespace delayq::redis_limits
