// The Redis backend against a private redis-server (tests/support/redis_server.h), in real time.
//
// Real time on a slow shared machine: delays are short, waits are generous, and nothing asserts
// how long something took. What is checked is order, "never early" (a job is never handed out
// before the due time the test computed: its own clock reading before the call that set it, plus
// the delay; server and test read the same system clock, the server after the test), and what
// each call returns.
//
// Kept whole over ~400 lines: most of it is one fixture, RedisQueueTest (a private redis-server and
// a queue), whose tests cover the calls; the standalone tests beside it (library, outage, consume,
// push batches, bad input) use its helpers.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "child_process.h"
#include "delayq/engine.h"
#include "delayq/redis.h"
#include "redis/connection.h"
#include "redis/lua_sources.h"
#include "redis/scripts.h"
#include "redis_cut_proxy.h"
#include "redis_server.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using testing::RedisServer;

constexpr Duration kLong = 30s;  // "surely by then", for waits that normally take milliseconds

TimePoint now() { return SystemClock::instance().now(); }

class RedisQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.started()) << server_.log();
    q_ = open().value();
  }
  void TearDown() override { q_.reset(); }

  Result<std::unique_ptr<Queue>> open(RedisOptions o = {}) {
    o.url = server_.url();
    if (o.queue == "default") o.queue = "t";
    if (o.seed == 0) o.seed = 7;
    return open_redis(o);
  }

  // q_->push(), remembering the job's due time as the test computes it: the clock read before
  // the call plus the delay, or due_at if that is later.
  Result<std::string> push_spec(JobSpec spec) {
    const TimePoint before = now();
    const TimePoint due =
        spec.due_at ? std::max(*spec.due_at, before) : before + spec.delay.value_or(0ms);
    Result<std::string> r = q_->push(std::move(spec));
    if (r.ok()) due_[*r] = due;
    return r;
  }
  std::string push(std::string topic, Duration delay, std::string id = "", std::string body = "",
                   std::optional<RetryPolicy> retry = std::nullopt, Duration ttr = 0ms) {
    Result<std::string> r = push_spec({.topic = std::move(topic),
                                       .id = std::move(id),
                                       .delay = delay,
                                       .ttr = ttr,
                                       .body = std::move(body),
                                       .retry = std::move(retry)});
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : std::string();
  }
  // From now on, the job `id` may not be delivered before `due` (an instant the test computed:
  // a nack's or a lease's, a reschedule's).
  void expect_due(const std::string& id, TimePoint due) { due_[id] = due; }

  // The next delivery of `topic`, waiting for it; fails the test if none comes or if it came
  // before the due time the test computed for it.
  Delivery take(const std::string& topic, Duration timeout = kLong) {
    Result<Delivery> d = q_->reserve(topic, timeout);
    EXPECT_TRUE(d.ok()) << d.status().to_string();
    if (d.ok()) expect_not_early(*d, now());
    return d.ok() ? *d : Delivery{};
  }
  // `d`, seen at `at`, came no earlier than the test's due time for it, and the server reports
  // no earlier one (give or take the microsecond that the server's clock truncates).
  void expect_not_early(const Delivery& d, TimePoint at) {
    auto it = due_.find(d.id);
    if (it == due_.end()) {
      ADD_FAILURE() << d.id << " was delivered, but the test computed no due time for it";
      return;
    }
    EXPECT_GE(at, it->second) << d.id << " was delivered " << (it->second - at).count()
                              << " ns before its due time";
    EXPECT_GE(d.due, it->second - 1us) << d.id << " reports a due time before the test's";
  }

  RedisServer server_;
  std::unique_ptr<Queue> q_;
  // Per job, the earliest instant of its next delivery, as the test computed it. Kept across
  // deliveries (a redelivery cannot come before it either) until expect_due() moves it.
  std::map<std::string, TimePoint> due_;
};

TEST_F(RedisQueueTest, PushReserveAck) {
  const std::string id = push("orders", 0ms, "o1", "two beans");
  EXPECT_EQ(id, "o1");
  Delivery d = take("orders");
  EXPECT_EQ(d.id, "o1");
  EXPECT_EQ(d.topic, "orders");
  EXPECT_EQ(d.body, "two beans");
  EXPECT_EQ(d.attempt, 1u);
  EXPECT_EQ(d.max_attempts, 10u);
  EXPECT_GT(d.lease_deadline, d.due);
  Result<JobInfo> j = q_->get("o1");
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ(j->state, JobState::reserved);
  EXPECT_TRUE(q_->ack(d.token).ok());
  EXPECT_TRUE(q_->get("o1").is(Errc::not_found));
  EXPECT_TRUE(q_->ack(d.token).is(Errc::not_found));
}


TEST_F(RedisQueueTest, NothingComesEarlyAndADueOrderTiesInPushOrder) {
  const TimePoint t0 = now();
  ASSERT_TRUE(push_spec({.topic = "t", .id = "late", .due_at = t0 + 600ms}).ok());
  ASSERT_TRUE(push_spec({.topic = "t", .id = "tie-1", .due_at = t0 + 300ms}).ok());
  ASSERT_TRUE(push_spec({.topic = "t", .id = "tie-2", .due_at = t0 + 300ms}).ok());
  push("t", 100ms, "early");
  EXPECT_EQ(q_->get("late")->state, JobState::delayed);
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) {
    Delivery d = take("t");
    order.push_back(d.id);
    EXPECT_TRUE(q_->ack(d.token).ok());
  }
  EXPECT_EQ(order, (std::vector<std::string>{"early", "tie-1", "tie-2", "late"}));
}

TEST_F(RedisQueueTest, DelayZeroAndDueAtInThePastAreReadyAtOnce) {
  push("t", 0ms, "a");
  ASSERT_TRUE(push_spec({.topic = "t", .id = "b", .due_at = now() - 1h}).ok());
  ASSERT_TRUE(push_spec({.topic = "t", .id = "c"}).ok());
  EXPECT_EQ(q_->get("b")->state, JobState::ready);
  EXPECT_EQ(take("t", 0ms).id, "a");
  EXPECT_EQ(take("t", 0ms).id, "b");
  EXPECT_EQ(take("t", 0ms).id, "c");
  EXPECT_TRUE(q_->reserve("t", 0ms).is(Errc::timeout));
}

TEST_F(RedisQueueTest, ReserveOverTopicsTakesTheEarliestDueTiesToTheFirstListed) {
  const TimePoint t0 = now() - 1s;
  ASSERT_TRUE(q_->push({.topic = "b", .id = "b1", .due_at = t0 + 10ms}).ok());
  ASSERT_TRUE(q_->push({.topic = "a", .id = "a1", .due_at = t0 + 20ms}).ok());
  const std::vector<std::string> topics{"a", "b"};
  EXPECT_EQ(q_->reserve(topics, 0ms)->id, "b1");
  EXPECT_EQ(q_->reserve(topics, 0ms)->id, "a1");
  EXPECT_TRUE(q_->reserve(std::vector<std::string>{"never-used"}, 0ms).is(Errc::timeout));
}

TEST_F(RedisQueueTest, AnExpiredLeaseRetriesPerPolicyAndTheOldTokenIsStale) {
  push("t", 0ms, "j", "", RetryPolicy::fixed(0ms, 3), 300ms);
  const TimePoint taken = now();
  Delivery first = take("t");
  // Not acknowledged: the lease runs out (300 ms after the reserve at the earliest) and the job
  // comes back (retry wait 0).
  expect_due("j", taken + 300ms);
  Delivery second = take("t");
  EXPECT_EQ(second.id, "j");
  EXPECT_EQ(second.attempt, 2u);
  EXPECT_GT(second.token.fence, first.token.fence);
  Status s = q_->ack(first.token);
  EXPECT_TRUE(s.is(Errc::stale_token)) << s.to_string();
  EXPECT_NE(s.message().find("was delivered again (attempt 2)"), std::string::npos) << s.message();
  EXPECT_TRUE(q_->touch(first.token).is(Errc::stale_token));
  EXPECT_TRUE(q_->ack(second.token).ok());
  Stats st = q_->stats();
  EXPECT_EQ(st.leases_expired, 1u);
  EXPECT_EQ(st.acked, 1u);
}

TEST_F(RedisQueueTest, TwoConsumersRaceForOneJobOneWinsTheOthersAckIsRefused) {
  // The loser gives up (1 s) well before the winner's lease runs out (3 s).
  push("race", 200ms, "only", "", RetryPolicy::fixed(0ms, 5), 3s);
  std::promise<void> go;
  std::shared_future<void> start = go.get_future().share();
  auto consumer = [&] {
    start.wait();
    return q_->reserve("race", 1s);
  };
  auto a = std::async(std::launch::async, consumer);
  auto b = std::async(std::launch::async, consumer);
  const TimePoint started = now();  // the winner's lease runs out 3 s after this, at the earliest
  go.set_value();
  Result<Delivery> ra = a.get(), rb = b.get();
  ASSERT_NE(ra.ok(), rb.ok()) << "exactly one consumer gets the job: " << ra.status().to_string()
                              << " / " << rb.status().to_string();
  Delivery won = ra.ok() ? *ra : *rb;
  expect_not_early(won, now());
  expect_due("only", started + 3s);
  EXPECT_TRUE((ra.ok() ? rb : ra).is(Errc::timeout));
  // The winner stalls past its lease; the job goes to the other consumer; the winner's ack is
  // refused and the new holder's is not.
  Delivery again = take("race");
  EXPECT_EQ(again.attempt, 2u);
  EXPECT_TRUE(q_->ack(won.token).is(Errc::stale_token));
  EXPECT_TRUE(q_->ack(again.token).ok());
}

TEST_F(RedisQueueTest, AConsumerKilledWhileHoldingALeaseLosesTheJobToAnother) {
  push("work", 0ms, "job", "payload", RetryPolicy::fixed(0ms, 5), 500ms);
  const TimePoint taken = now();  // the other's lease runs out 500 ms after this, at the earliest
  {
    // Another process, as far as the queue can tell: its own connections, gone without a word.
    auto other = open().value();
    Result<Delivery> d = other->reserve("work", kLong);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
  }
  std::atomic<int> seen{0}, early{0};
  std::atomic<uint32_t> attempt{0};
  Consumer c = q_->consume("work", [&](const Delivery& d) {
    if (now() < taken + 500ms) early.fetch_add(1);
    attempt = d.attempt;
    seen.fetch_add(1);
    return HandlerResult::ack();
  });
  const auto until = std::chrono::steady_clock::now() + kLong;
  while (seen.load() == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  c.stop();
  EXPECT_EQ(seen.load(), 1);
  EXPECT_EQ(early.load(), 0) << "delivered again before the first lease ran out";
  EXPECT_EQ(attempt.load(), 2u);
  EXPECT_TRUE(q_->get("job").is(Errc::not_found));
}

TEST_F(RedisQueueTest, NackFollowsThePolicyThenDeadLettersAndRequeueAndPurgeWork) {
  push("p", 0ms, "j", "b", RetryPolicy::fixed(150ms, 2));
  Delivery d1 = take("p");
  const TimePoint before = now();
  ASSERT_TRUE(q_->nack(d1.token).ok());
  const TimePoint after = now();
  Result<JobInfo> j = q_->get("j");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->state, JobState::delayed);
  EXPECT_GE(j->due, before + 150ms - 1us);
  EXPECT_LE(j->due, after + 150ms + 1us);
  expect_due("j", before + 150ms);
  Delivery d2 = take("p");
  EXPECT_EQ(d2.attempt, 2u);
  ASSERT_TRUE(q_->nack(d2.token, 0ms).ok());  // the last attempt: dead, the delay ignored
  EXPECT_EQ(q_->get("j")->state, JobState::dead);
  Result<std::vector<JobInfo>> dead = q_->list_dead("p", 10);
  ASSERT_TRUE(dead.ok());
  ASSERT_EQ(dead->size(), 1u);
  EXPECT_EQ((*dead)[0].id, "j");
  EXPECT_EQ((*dead)[0].body, "b");
  EXPECT_EQ((*dead)[0].topic, "p");
  EXPECT_TRUE(q_->requeue_dead("j").ok());
  j = q_->get("j");
  EXPECT_EQ(j->state, JobState::ready);
  EXPECT_EQ(j->attempts, 0u);
  Delivery d3 = take("p", 0ms);
  EXPECT_TRUE(q_->dead_letter(d3.token).ok());
  push("p", 0ms, "k", "", RetryPolicy::fixed(0ms, 1));
  ASSERT_TRUE(q_->nack(take("p", 0ms).token).ok());
  EXPECT_EQ(q_->list_dead("p", 10)->size(), 2u);
  EXPECT_EQ(*q_->requeue_dead_topic("p"), 2u);
  EXPECT_EQ(q_->stats().topics["p"].ready, 2u);
  ASSERT_TRUE(q_->dead_letter(take("p", 0ms).token).ok());
  ASSERT_TRUE(q_->dead_letter(take("p", 0ms).token).ok());
  EXPECT_EQ(*q_->purge_dead("p"), 2u);
  EXPECT_TRUE(q_->get("j").is(Errc::not_found));
  EXPECT_EQ(*q_->purge_dead("no-such-topic"), 0u);
  EXPECT_TRUE(q_->list_dead("no-such-topic", 10)->empty());
}

TEST_F(RedisQueueTest, ListAndExponentialWaitsFollowTheirSchedules) {
  // Each failed delivery's wait, read from the job's new due time: bounded by the instants
  // just before and after the nack, so nothing here depends on speed.
  auto wait_after_nack = [&](const std::string& id) -> std::pair<Duration, Duration> {
    Delivery d = take("w", 0ms);
    EXPECT_EQ(d.id, id);
    const TimePoint before = now();
    EXPECT_TRUE(q_->nack(d.token).ok());
    const TimePoint after = now();
    const TimePoint due = q_->get(id)->due;
    EXPECT_TRUE(q_->reschedule(id, now() - 1s).ok());  // skip the wait
    return {due - after, due - before};
  };
  auto expect_wait = [&](const std::string& id, Duration want) {
    auto [lo, hi] = wait_after_nack(id);
    EXPECT_LE(lo, want + 1us) << id;
    EXPECT_GE(hi, want - 1us) << id;
  };
  push("w", 0ms, "list", "", RetryPolicy::list({2min, 10min}));
  expect_wait("list", 2min);
  expect_wait("list", 10min);
  ASSERT_TRUE(q_->cancel("list").ok());
  push("w", 0ms, "exp", "", RetryPolicy::exponential(1s, 2.0, 3s, 0.0, 10));
  expect_wait("exp", 1s);
  expect_wait("exp", 2s);
  expect_wait("exp", 3s);  // capped
  ASSERT_TRUE(q_->cancel("exp").ok());
  push("w", 0ms, "jit", "", RetryPolicy::exponential(10s, 2.0, 1h, 0.5, 10));
  for (Duration base : {10s, 20s}) {
    auto [lo, hi] = wait_after_nack("jit");
    EXPECT_LE(lo, base + 1us);
    EXPECT_GE(hi, base / 2 - 1us);
  }
}

TEST_F(RedisQueueTest, TouchExtendsTheLease) {
  push("t", 0ms, "j", "", std::nullopt, 10s);
  Delivery d = take("t", 0ms);
  std::this_thread::sleep_for(20ms);
  Result<TimePoint> lease = q_->touch(d.token);
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  EXPECT_GT(*lease, d.lease_deadline);
  EXPECT_EQ(q_->get("j")->lease_deadline, *lease);
  EXPECT_EQ(q_->get("j")->attempts, 1u);
}

TEST_F(RedisQueueTest, CancelRemovesAJobInAnyState) {
  push("c", 1h, "delayed");
  push("c", 0ms, "reserved");
  Delivery d = take("c", 0ms);
  push("c", 0ms, "ready");
  push("c", 0ms, "dead", "", RetryPolicy::fixed(0ms, 1));
  push("other", 0ms, "x");
  for (const char* id : {"delayed", "reserved", "ready"}) {
    Status s = q_->cancel(id);
    EXPECT_TRUE(s.ok()) << id << ": " << s.to_string();
  }
  ASSERT_TRUE(q_->dead_letter(take("c", 0ms).token).ok());
  EXPECT_TRUE(q_->cancel("dead").ok());
  EXPECT_TRUE(q_->ack(d.token).is(Errc::not_found));
  EXPECT_TRUE(q_->cancel("delayed").is(Errc::not_found));
  Stats st = q_->stats();
  EXPECT_EQ(st.topics.count("c"), 0u);
  EXPECT_EQ(st.topics["other"].ready, 1u);
  EXPECT_EQ(st.cancelled, 4u);
}

TEST_F(RedisQueueTest, RescheduleMovesDelayedAndReadyJobsOnly) {
  push("r", 1h, "d");
  ASSERT_TRUE(q_->reschedule("d", now() - 1s).ok());
  EXPECT_EQ(q_->get("d")->state, JobState::ready);
  ASSERT_TRUE(q_->reschedule("d", now() + 1h).ok());
  EXPECT_EQ(q_->get("d")->state, JobState::delayed);
  const TimePoint soon = now() + 200ms;
  ASSERT_TRUE(q_->reschedule("d", soon).ok());
  expect_due("d", soon);
  EXPECT_EQ(take("r").id, "d");
  Status s = q_->reschedule("d", now());
  EXPECT_TRUE(s.is(Errc::invalid_state)) << s.to_string();
  EXPECT_TRUE(q_->reschedule("nope", now()).is(Errc::not_found));
}

TEST_F(RedisQueueTest, GetReportsEverything) {
  const TimePoint before = now();
  push("g", 1h, "j", "body", RetryPolicy::fixed(1s, 4), 7s);
  Result<JobInfo> j = q_->get("j");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->id, "j");
  EXPECT_EQ(j->topic, "g");
  EXPECT_EQ(j->state, JobState::delayed);
  EXPECT_EQ(j->attempts, 0u);
  EXPECT_EQ(j->max_attempts, 4u);
  EXPECT_EQ(j->ttr, 7s);
  EXPECT_EQ(j->body, "body");
  EXPECT_GE(j->due, before + 1h);
  EXPECT_LE(j->due, now() + 1h + 1us);
}

TEST_F(RedisQueueTest, GeneratedIdsAreUnique) {
  std::set<std::string> ids;
  for (int i = 0; i < 50; ++i) ids.insert(push("gen", 1h));
  EXPECT_EQ(ids.size(), 50u);
  EXPECT_EQ(q_->stats().topics["gen"].delayed, 50u);
}

TEST_F(RedisQueueTest, PushBatchReportsEachSpec) {
  std::vector<JobSpec> specs;
  specs.push_back({.topic = "b", .id = "one"});
  specs.push_back({.topic = "", .id = "bad"});
  specs.push_back({.topic = "b", .id = "one"});
  specs.push_back({.topic = "b"});
  auto r = q_->push_batch(std::move(specs));
  ASSERT_EQ(r.size(), 4u);
  EXPECT_TRUE(r[0].ok());
  EXPECT_TRUE(r[1].is(Errc::invalid_argument));
  EXPECT_TRUE(r[2].is(Errc::duplicate_id));
  EXPECT_TRUE(r[3].ok());
}

// ---- push_batch: one true result per job ----

// Whether the server holds a job `id` of queue `queue` (one shard), asked of it directly.
std::string stored(const RedisServer& server, const std::string& queue, const std::string& id) {
  return server.command("HEXISTS {dq:" + queue + ":0}:jobs " + id);
}

bool mentions(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

// A shard's push_many runs go in one pipeline. Here the server refuses the middle one (an ACL
// denies the keys of its topic): its jobs fail with the server's reason, and the runs before and
// after it stored their jobs and say so. A client that pushes the batch again duplicates nothing.
TEST_F(RedisQueueTest, PushBatchReportsEachJobWhenTheServerRefusesOneRunOfThePipeline) {
  ASSERT_EQ(server_.command("ACL SETUSER default resetkeys ~{dq:t:0}:jobs ~{dq:t:0}:body "
                            "~{dq:t:0}:seq ~{dq:t:0}:fence ~{dq:t:0}:topics ~{dq:t:0}:stats "
                            "~{dq:t:0}:paused ~{dq:t:0}:emptied ~{dq:t:0}:limits ~{dq:t:0}:flow "
                            "~{dq:t:0}:meta ~{dq:t:0}:?:ok-*"),
            "+OK");
  // Three runs, in the order of their topics' first jobs: ok-a, denied, ok-b.
  const std::vector<JobSpec> batch{
      {.topic = "ok-a", .id = "a1"},
      {.topic = "denied", .id = "d1"},
      {.topic = "ok-a", .id = "a2", .delay = 1h},
      {.topic = "ok-b", .id = "b1"},
      {.topic = "denied", .id = "d2"},
      {.topic = "ok-b", .id = "a1"},  // stored by the first run: a duplicate
  };
  std::vector<Result<std::string>> r = q_->push_batch(batch);
  ASSERT_EQ(r.size(), 6u);
  for (size_t i : {0, 2, 3})
    EXPECT_TRUE(r[i].ok() && *r[i] == batch[i].id) << r[i].status().to_string();
  EXPECT_TRUE(r[5].is(Errc::duplicate_id)) << r[5].status().to_string();
  for (size_t i : {1, 4}) {
    EXPECT_TRUE(r[i].is(Errc::io_error)) << r[i].status().to_string();
    EXPECT_TRUE(mentions(r[i].status(), "NOPERM")) << r[i].status().to_string();
    EXPECT_TRUE(mentions(r[i].status(), "the call was not run")) << r[i].status().to_string();
  }
  // The server holds exactly what was reported stored.
  for (const char* id : {"a1", "a2", "b1"}) EXPECT_EQ(stored(server_, "t", id), ":1") << id;
  for (const char* id : {"d1", "d2"}) EXPECT_EQ(stored(server_, "t", id), ":0") << id;

  // The same batch again: the stored jobs answer duplicate_id, the refused ones are refused.
  r = q_->push_batch(batch);
  for (size_t i : {0, 2, 3, 5})
    EXPECT_TRUE(r[i].is(Errc::duplicate_id)) << r[i].status().to_string();
  for (size_t i : {1, 4}) EXPECT_TRUE(r[i].is(Errc::io_error)) << r[i].status().to_string();
  // Once the server allows the keys, the refused jobs go in, and nothing else.
  ASSERT_EQ(server_.command("ACL SETUSER default allkeys"), "+OK");
  r = q_->push_batch(batch);
  for (size_t i : {1, 4}) EXPECT_TRUE(r[i].ok()) << r[i].status().to_string();
  for (size_t i : {0, 2, 3, 5})
    EXPECT_TRUE(r[i].is(Errc::duplicate_id)) << r[i].status().to_string();
  EXPECT_EQ(q_->stats().pushed, 5u);
}

// push_many packs a batch's records its own way (a policy packed once for the jobs that share
// it, no table for a job of the default priority): each job of a batch is stored as push() stores
// the same spec, whatever its policy, priority, ttr and due time, and its policy works (a nack
// waits the policy's first delay).
TEST_F(RedisQueueTest, PushBatchStoresEachJobAsPushDoes) {
  const TimePoint later = now() + 1h;
  const RetryPolicy list = RetryPolicy::list({1s, 2500ms, 0ms});
  const RetryPolicy other_list = RetryPolicy::list({1s, 2500ms, 1ms});  // as long, one value differs
  const RetryPolicy exp = RetryPolicy::exponential(3ms, 1.5, 2min, 0.25, 4);
  std::vector<JobSpec> specs{
      {.topic = "pb", .body = "ready"},
      {.topic = "pb", .due_at = later, .body = "later"},
      {.topic = "pb", .ttr = 7s, .retry = list, .priority = 5},
      {.topic = "pb", .due_at = later, .retry = exp, .priority = 2000},
      {.topic = "pb", .due_at = later, .ttr = 9s, .retry = list},
      {.topic = "pb", .retry = list},
      {.topic = "pb", .due_at = later, .retry = other_list},
      {.topic = "pb", .retry = RetryPolicy::fixed(20ms, 2), .priority = 0},
  };
  for (size_t i = 0; i < specs.size(); ++i) {
    specs[i].id = "p" + std::to_string(i);
    ASSERT_TRUE(q_->push(specs[i]).ok()) << i;
    specs[i].id = "b" + std::to_string(i);
  }
  for (const Result<std::string>& r : q_->push_batch(specs)) ASSERT_TRUE(r.ok()) << r.status().to_string();
  for (size_t i = 0; i < specs.size(); ++i) {
    Result<JobInfo> p = q_->get("p" + std::to_string(i)), b = q_->get("b" + std::to_string(i));
    ASSERT_TRUE(p.ok() && b.ok()) << i;
    EXPECT_EQ(b->state, p->state) << i;
    EXPECT_EQ(b->attempts, p->attempts) << i;
    EXPECT_EQ(b->max_attempts, p->max_attempts) << i;
    EXPECT_EQ(b->ttr, p->ttr) << i;
    EXPECT_EQ(b->retry, p->retry) << i;
    EXPECT_EQ(b->priority, p->priority) << i;
    EXPECT_EQ(b->body, p->body) << i;
    if (specs[i].due_at) EXPECT_EQ(b->due, p->due) << i;
  }
  // The ready jobs in line: priority 0 first, then 5, then the default's in push order (the
  // pushes' then the batch's).
  std::vector<std::string> order;
  for (int i = 0; i < 8; ++i) {
    Result<Delivery> d = q_->reserve("pb", 0ms);
    if (!d) break;
    order.push_back(d->id);
    if (d->id == "b5") {  // a list policy's first wait, after a nack
      const TimePoint before = now();
      ASSERT_TRUE(q_->nack(d->token).ok());
      Result<JobInfo> info = q_->get("b5");
      ASSERT_TRUE(info.ok());
      EXPECT_EQ(info->state, JobState::delayed);
      EXPECT_GE(info->due, before + 1s - 1us);
      EXPECT_LE(info->due, now() + 1s);
    } else {
      ASSERT_TRUE(q_->ack(d->token).ok());
    }
  }
  EXPECT_EQ(order, (std::vector<std::string>{"p7", "b7", "p2", "b2", "p0", "p5", "b0", "b5"}));
}

// A full server (maxmemory reached, noeviction) refuses every run: each job says why, and none
// is stored.
TEST_F(RedisQueueTest, PushBatchOnAFullServerRefusesEachJobWithTheReason) {
  ASSERT_EQ(server_.command("CONFIG SET maxmemory 1"), "+OK");
  const std::vector<JobSpec> batch{
      {.topic = "x", .id = "x1"}, {.topic = "y", .id = "y1"}, {.topic = "x", .id = "x2"}};
  std::vector<Result<std::string>> r = q_->push_batch(batch);
  ASSERT_EQ(r.size(), 3u);
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_TRUE(r[i].is(Errc::io_error)) << r[i].status().to_string();
    EXPECT_TRUE(mentions(r[i].status(), "OOM")) << r[i].status().to_string();
    EXPECT_TRUE(mentions(r[i].status(), "the call was not run")) << r[i].status().to_string();
    EXPECT_EQ(stored(server_, "t", batch[i].id), ":0") << batch[i].id;
  }
  ASSERT_EQ(server_.command("CONFIG SET maxmemory 0"), "+OK");
  for (const Result<std::string>& one : q_->push_batch(batch))
    EXPECT_TRUE(one.ok()) << one.status().to_string();
}

// The shards of a batch are independent: a shard whose keys the server refuses fails its own jobs
// and no other.
TEST_F(RedisQueueTest, PushBatchShardsAreIndependent) {
  RedisOptions o;
  o.queue = "two";
  o.shards = 2;
  auto q = open(o).value();
  ASSERT_EQ(server_.command("ACL SETUSER default resetkeys ~{dq:two:0}:*"), "+OK");
  auto shard_of = [](const std::string& id) {  // docs/redis.md: FNV-1a 32, modulo the shards
    uint32_t h = 2166136261u;
    for (unsigned char c : id) h = (h ^ c) * 16777619u;
    return h % 2;
  };
  std::vector<JobSpec> specs;
  for (int i = 0; i < 10; ++i) specs.push_back({.topic = "s", .id = "j" + std::to_string(i)});
  std::vector<Result<std::string>> r = q->push_batch(specs);
  ASSERT_EQ(r.size(), specs.size());
  std::set<uint32_t> shards;
  for (size_t i = 0; i < r.size(); ++i) {
    shards.insert(shard_of(specs[i].id));
    if (shard_of(specs[i].id) == 0) {
      EXPECT_TRUE(r[i].ok()) << specs[i].id << ": " << r[i].status().to_string();
    } else {
      EXPECT_TRUE(r[i].is(Errc::io_error)) << specs[i].id << ": " << r[i].status().to_string();
      EXPECT_TRUE(mentions(r[i].status(), "NOPERM")) << r[i].status().to_string();
    }
  }
  EXPECT_EQ(shards.size(), 2u) << "the ids should fall in both shards";
}

// An error raised inside a script (here: something else wrote a string where the topic's ready
// line goes) stops it part-way, and Redis rolls nothing back: the message says so, unlike the
// refusals above, and the run's jobs alone fail.
TEST_F(RedisQueueTest, PushBatchSaysWhenAScriptStoppedPartWay) {
  ASSERT_EQ(server_.command("SET {dq:t:0}:r:clobbered not-a-zset"), "+OK");
  std::vector<Result<std::string>> r =
      q_->push_batch({{.topic = "fine", .id = "f1"}, {.topic = "clobbered", .id = "c1"}});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].ok()) << r[0].status().to_string();
  EXPECT_TRUE(r[1].is(Errc::io_error)) << r[1].status().to_string();
  EXPECT_TRUE(mentions(r[1].status(), "WRONGTYPE")) << r[1].status().to_string();
  EXPECT_TRUE(mentions(r[1].status(), "the script stopped at this error"))
      << r[1].status().to_string();
  EXPECT_EQ(stored(server_, "t", "f1"), ":1");
}

TEST_F(RedisQueueTest, BatchedClaimsKeepOrderAndCloseGivesKeptJobsBack) {
  std::vector<JobSpec> specs;
  for (int i = 0; i < 6; ++i) specs.push_back({.topic = "cb", .id = "c" + std::to_string(i)});
  const TimePoint before = now();
  for (auto& r : q_->push_batch(std::move(specs))) {
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    expect_due(*r, before);
  }
  RedisOptions o;
  o.claim_batch = 4;
  auto q = open(o).value();
  for (int i = 0; i < 3; ++i) {
    Delivery d = *q->reserve("cb", kLong);
    EXPECT_EQ(d.id, "c" + std::to_string(i));
    EXPECT_TRUE(q->ack(d.token).ok());
  }
  // c3 is kept by `q` (taken with c0..c2); closing gives it back as a failed attempt (a nack
  // of delay 0), so it joins the back of the line.
  q.reset();
  std::vector<std::string> rest;
  for (int i = 3; i < 6; ++i) {
    Delivery d = take("cb");
    rest.push_back(d.id);
    EXPECT_EQ(d.attempt, d.id == "c3" ? 2u : 1u) << d.id;
    EXPECT_TRUE(q_->ack(d.token).ok());
  }
  EXPECT_EQ(rest, (std::vector<std::string>{"c4", "c5", "c3"}));
}

TEST_F(RedisQueueTest, WithClaimBatchAnAckTakesTheNextJobsWhenNoneAreKept) {
  std::vector<JobSpec> specs;
  for (int i = 0; i < 5; ++i) specs.push_back({.topic = "ac", .id = "a" + std::to_string(i)});
  specs.push_back({.topic = "other", .id = "o"});
  for (auto& r : q_->push_batch(std::move(specs))) ASSERT_TRUE(r.ok()) << r.status().to_string();
  RedisOptions o;
  o.claim_batch = 2;
  auto q = open(o).value();
  auto leased = [&] { return q_->stats().topics["ac"].reserved; };
  Delivery d0 = *q->reserve("ac", kLong);  // takes a0 and keeps a1
  EXPECT_EQ(d0.id, "a0");
  EXPECT_TRUE(q->ack(d0.token).ok());  // a1 is kept: a plain ack
  EXPECT_EQ(leased(), 1u);
  Delivery d1 = *q->reserve("ac", kLong);
  EXPECT_EQ(d1.id, "a1");
  EXPECT_TRUE(q->ack(d1.token).ok());  // nothing kept: a2 and a3 come with the ack
  EXPECT_EQ(leased(), 2u);
  EXPECT_EQ(q_->stats().topics["ac"].ready, 1u);
  for (const char* id : {"a2", "a3", "a4"}) {
    Delivery d = *q->reserve("ac", kLong);
    EXPECT_EQ(d.id, id);
    EXPECT_EQ(d.attempt, 1u);
    EXPECT_TRUE(q->ack(d.token).ok());
    // A token acked already is refused as the engine refuses it, claim or not.
    EXPECT_TRUE(q->ack(d.token).is(Errc::not_found)) << id;
  }
  EXPECT_EQ(q_->stats().topics["ac"], TopicStats{});
  // A topic this client never reserved on its own is not taken along.
  Delivery other = *q->reserve(std::vector<std::string>{"other", "ac"}, kLong);
  push("ac", 0ms, "a5");
  EXPECT_TRUE(q->ack(other.token).ok());
  EXPECT_EQ(q_->stats().topics["ac"].ready, 1u);
  Stats st = q_->stats();
  EXPECT_EQ(st.delivered, 6u);
  EXPECT_EQ(st.acked, 6u);
}

TEST_F(RedisQueueTest, AnEarlierPushWakesAConsumerSleepingUntilALaterDeadline) {
  // No sweep to speak of: only the wake message can end this wait early.
  RedisOptions o;
  o.sweep = 1h;
  auto q = open(o).value();
  push("wake", 1h, "far");
  auto waiting = std::async(std::launch::async, [&] { return q->reserve("wake", kLong); });
  std::this_thread::sleep_for(200ms);  // (the wake must also work if the consumer is not asleep)
  push("wake", 0ms, "near");
  Result<Delivery> d = waiting.get();
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, "near");
}

TEST_F(RedisQueueTest, ConsumeActsOnTheHandlersResult) {
  push("cons", 0ms, "ack");
  push("cons", 0ms, "retry", "", RetryPolicy::fixed(0ms, 5));
  push("cons", 0ms, "dead");
  push("cons", 0ms, "throw", "", RetryPolicy::fixed(0ms, 5));
  std::mutex mu;
  std::map<std::string, int> calls;
  Consumer c = q_->consume(
      "cons",
      [&](const Delivery& d) -> HandlerResult {
        int n;
        {
          std::lock_guard lock(mu);
          n = ++calls[d.id];
        }
        if (d.id == "retry" && n == 1) return HandlerResult::retry(0ms);
        if (d.id == "throw" && n == 1) throw std::runtime_error("boom");
        if (d.id == "dead") return HandlerResult::dead_letter();
        return HandlerResult::ack();
      },
      2);
  const auto until = std::chrono::steady_clock::now() + kLong;
  while (c.handled() < 6 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
  c.stop();
  EXPECT_EQ(c.handled(), 6u);
  EXPECT_EQ(q_->get("dead")->state, JobState::dead);
  for (const char* id : {"ack", "retry", "throw"}) EXPECT_TRUE(q_->get(id).is(Errc::not_found)) << id;
}

// A consume() process killed (SIGKILL) while it holds a batch of jobs, one of them in its
// handler and the rest waiting for their turn: each job's lease runs out, the job comes back
// as a failed attempt (attempt 2), never before its lease deadline, exactly once to another
// consumer; the dead process's tokens are stale by then. The child is forked before this
// process starts any thread of its own.
TEST(RedisConsume, AConsumerKilledWhileHoldingABatchLosesItsJobsToAnother) {
  RedisServer server;
  ASSERT_TRUE(server.started()) << server.log();
  RedisOptions o;
  o.url = server.url();
  o.queue = "killed";
  // Acks the "fast" jobs, then writes the token of the first "held" job it gets and hangs.
  testing::ChildProcess child([&](int report) {
    auto q = open_redis(o);
    if (!q) _exit(2);
    Consumer c = (*q)->consume("work", [&](const Delivery& d) {
      if (d.id.starts_with("fast")) return HandlerResult::ack();
      const std::string line = d.id + " " + std::to_string(d.token.fence) + "\n";
      (void)!write(report, line.data(), line.size());
      for (;;) pause();
    });
    for (;;) pause();
  });
  ASSERT_TRUE(child.started()) << "pipe or fork failed";
  auto q = open_redis(o).value();
  // Fast jobs first, so that the child's handler is timed as fast and its batches grow.
  for (int i = 0; i < 50; ++i)
    ASSERT_TRUE(q->push({.topic = "work", .id = "fast" + std::to_string(i)}).ok());
  const auto until = std::chrono::steady_clock::now() + kLong;
  while (q->stats().acked < 50 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(q->stats().acked, 50u);
  constexpr int kHeld = 30;
  std::vector<JobSpec> specs;
  for (int i = 0; i < kHeld; ++i)
    specs.push_back({.topic = "work",
                     .id = "held" + std::to_string(i),
                     .ttr = 1s,
                     .retry = RetryPolicy::fixed(0ms, 5)});
  for (const Result<std::string>& r : q->push_batch(std::move(specs))) ASSERT_TRUE(r.ok());
  // The child's handler has the first one; what it took with it stays reserved.
  std::string line;
  char ch;
  while (read(child.reports(), &ch, 1) == 1 && ch != '\n') line += ch;
  ASSERT_FALSE(line.empty()) << "the child reported no held job";
  std::map<std::string, TimePoint> lease_end;
  for (int i = 0; i < kHeld; ++i) {
    const std::string id = "held" + std::to_string(i);
    Result<JobInfo> j = q->get(id);
    ASSERT_TRUE(j.ok()) << j.status().to_string();
    if (j->state == JobState::reserved) lease_end[id] = j->lease_deadline;
  }
  EXPECT_GT(lease_end.size(), 1u) << "the child held no batch, only the job in its handler";
  child.kill_and_wait();

  const std::string held_id = line.substr(0, line.find(' '));
  const Token held{held_id, std::stoull(line.substr(line.find(' ') + 1))};
  std::mutex mu;
  std::map<std::string, std::vector<uint32_t>> attempts;
  std::vector<std::string> early;
  Consumer c = q->consume("work", [&](const Delivery& d) {
    std::lock_guard lock(mu);
    auto it = lease_end.find(d.id);
    if (it != lease_end.end() && now() < it->second) early.push_back(d.id);
    attempts[d.id].push_back(d.attempt);
    return HandlerResult::ack();
  });
  while (q->stats().acked < 50 + kHeld && std::chrono::steady_clock::now() < until + kLong)
    std::this_thread::sleep_for(10ms);
  c.stop();
  EXPECT_EQ(q->stats().acked, uint64_t{50 + kHeld});
  std::lock_guard lock(mu);
  EXPECT_TRUE(early.empty()) << early.front() << " came back before its lease ran out";
  EXPECT_EQ(attempts.size(), size_t{kHeld});
  for (const auto& [id, a] : attempts) {
    const std::vector<uint32_t> want{lease_end.count(id) ? 2u : 1u};
    EXPECT_EQ(a, want) << id;
  }
  // The killed holder's token: its job was redelivered and acked since.
  EXPECT_TRUE(q->ack_batch(std::vector<Token>{held})[0].is(Errc::not_found));
}

TEST_F(RedisQueueTest, ReserveAsyncCompletesTimesOutAndIsFailedByClose) {
  std::promise<Result<Delivery>> got;
  q_->reserve_async({"as"}, kLong, [&](Result<Delivery> d) { got.set_value(std::move(d)); });
  push("as", 100ms, "x");
  Result<Delivery> d = got.get_future().get();
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, "x");
  expect_not_early(*d, now());

  std::promise<Result<Delivery>> timed_out;
  q_->reserve_async({"as"}, 50ms, [&](Result<Delivery> d) { timed_out.set_value(std::move(d)); });
  EXPECT_TRUE(timed_out.get_future().get().is(Errc::timeout));

  std::promise<Result<Delivery>> closed;
  q_->reserve_async({"as"}, kLong, [&](Result<Delivery> d) { closed.set_value(std::move(d)); });
  q_->close();
  EXPECT_TRUE(closed.get_future().get().is(Errc::closed));
  EXPECT_TRUE(q_->push({.topic = "as"}).is(Errc::closed));
  EXPECT_TRUE(q_->reserve("as", 0ms).is(Errc::closed));
  std::promise<Result<Delivery>> after;
  q_->reserve_async({"as"}, kLong, [&](Result<Delivery> d) { after.set_value(std::move(d)); });
  EXPECT_TRUE(after.get_future().get().is(Errc::closed));
}

TEST_F(RedisQueueTest, ShardedQueueSpreadsJobsAndKeepsItsShardCount) {
  RedisOptions o;
  o.queue = "sharded";
  o.shards = 4;
  auto q = open(o).value();
  std::set<std::string> pushed, got;
  std::vector<JobSpec> specs;
  for (int i = 0; i < 40; ++i) specs.push_back({.topic = "s", .id = i % 2 ? "j" + std::to_string(i) : ""});
  for (Result<std::string>& r : q->push_batch(std::move(specs))) {
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    pushed.insert(*r);
  }
  ASSERT_EQ(pushed.size(), 40u);
  for (int i = 0; i < 40; ++i) {
    Result<Delivery> d = q->reserve("s", 0ms);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    got.insert(d->id);
    ASSERT_TRUE(q->ack(d->token).ok());
  }
  EXPECT_EQ(got, pushed);
  EXPECT_TRUE(q->reserve("s", 0ms).is(Errc::timeout));
  EXPECT_EQ(q->stats().acked, 40u);
  o.shards = 2;
  Result<std::unique_ptr<Queue>> wrong = open(o);
  EXPECT_TRUE(wrong.is(Errc::invalid_argument));
  EXPECT_NE(wrong.status().message().find("shards = 4"), std::string::npos)
      << wrong.status().to_string();
}

TEST_F(RedisQueueTest, AFlushedFunctionLibraryIsReloaded) {
  push("f", 0ms, "i");  // the pooled connections have loaded the library
  ASSERT_EQ(server_.command("FUNCTION FLUSH"), "+OK");
  ASSERT_EQ(server_.command("SCRIPT FLUSH"), "+OK");
  push("f", 0ms, "j");
  EXPECT_EQ(take("f", 0ms).id, "i");
  EXPECT_EQ(take("f", 0ms).id, "j");
}

// Whether `r` or any element within it is the string `s` (a FUNCTION LIST reply names each
// library's functions).
bool holds_string(const redis::Reply& r, const std::string& s) {
  if (r.str == s) return true;
  return std::any_of(r.elements.begin(), r.elements.end(),
                     [&](const redis::Reply& e) { return holds_string(e, s); });
}

// The server's own Lua checks every file of the function library (src/redis/lua/): each is
// loaded on its own after the prelude and the two files of helpers (flow, take), so that a
// syntax error names its file, and must register the function it is named after; the scripts
// and the other files are the same set.
TEST(RedisLibrary, EveryLuaFileLoadsOnItsOwnAfterThePrelude) {
  RedisServer server;
  ASSERT_TRUE(server.started()) << server.log();
  Result<redis::Endpoint> ep = redis::parse_url(server.url());
  ASSERT_TRUE(ep.ok());
  Result<std::unique_ptr<redis::Connection>> c = redis::Connection::open(*ep, 5s, kLong);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const std::span<const redis::lua::File> files = redis::lua::files();
  ASSERT_FALSE(files.empty());
  ASSERT_EQ(files[0].name, "prelude");
  ASSERT_GE(files.size(), 3u);
  ASSERT_EQ(files[1].name, "flow");
  ASSERT_EQ(files[2].name, "take");
  std::string base(files[0].text);
  for (const redis::lua::File& helper : files.subspan(1, 2)) (base += '\n') += helper.text;
  std::set<std::string_view> scripts;
  for (const redis::Script& s : redis::library().scripts) scripts.insert(s.name);
  for (const redis::lua::File& f : files.subspan(3)) {
    const std::string name(f.name), lib = "check_" + name;
    EXPECT_TRUE(scripts.erase(f.name)) << name << ".lua is no script of the library";
    const std::string source = "#!lua name=" + lib + "\nlocal TAG = '" + lib + "_'\n" + base +
                               "\n" + std::string(f.text);
    Result<redis::Reply> loaded = (*c)->call({"FUNCTION", "LOAD", source});
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    // The file's lines follow the header's two, the prelude's and the helpers' with the line
    // breaks between.
    const size_t offset = 3 + static_cast<size_t>(std::count(base.begin(), base.end(), '\n'));
    EXPECT_EQ(loaded->str, lib) << name << ".lua (its line 1 is line " << offset + 1
                                << " of the source): " << loaded->str;
    Result<redis::Reply> listed = (*c)->call({"FUNCTION", "LIST", "LIBRARYNAME", lib});
    ASSERT_TRUE(listed.ok());
    EXPECT_TRUE(holds_string(*listed, lib + "_" + name))
        << name << ".lua registers no function '" << name << "'";
  }
  EXPECT_TRUE(scripts.empty()) << scripts.size() << " scripts of the library have no .lua file";
}

TEST_F(RedisQueueTest, BadOptionsAreRefusedNamingTheOption) {
  RedisOptions o;
  o.url = "http://x";
  EXPECT_TRUE(open_redis(o).is(Errc::invalid_argument));
  o = {};
  o.shards = 0;
  EXPECT_TRUE(open(o).is(Errc::invalid_argument));
  o = {};
  o.queue = "a:b";
  EXPECT_TRUE(open(o).is(Errc::invalid_argument));
  o = {};
  o.limits.default_ttr = 0s;
  Result<std::unique_ptr<Queue>> r = open(o);
  EXPECT_TRUE(r.is(Errc::invalid_argument));
  EXPECT_NE(r.status().message().find("default_ttr"), std::string::npos);
  o = {};
  o.url = "unix:///nonexistent/redis.sock";
  o.reconnect_min = 10ms;
  EXPECT_TRUE(open_redis(o).is(Errc::unavailable));
}

// ---- the connection breaks in the middle of a pipeline ----

// The server runs all four push_many runs of a shard's pipeline, but the connection breaks after
// two replies (tests/support/redis_cut_proxy.h). The jobs of the runs answered are reported as they are;
// the others fail with unavailable, "may or may not have taken effect" (a generated id is named,
// since it is the only handle on such a job); and pushing the same specs again tells which were
// stored: duplicate_id, here for every one of them.
TEST(RedisPushBatch, AConnectionLostMidPipelineFailsOnlyTheRunsLeftWithoutAReply) {
  RedisServer server;
  ASSERT_TRUE(server.started()) << server.log();
  testing::CuttingProxy proxy(server.socket());
  ASSERT_TRUE(proxy.started());
  RedisOptions o;
  o.url = proxy.url();
  o.queue = "cut";
  o.seed = 7;
  o.reconnect_min = 20ms;
  o.reconnect_max = 200ms;
  auto q = open_redis(o).value();
  std::vector<JobSpec> specs;
  for (int t = 0; t < 4; ++t)
    for (int k = 0; k < 3; ++k)
      specs.push_back({.topic = "w" + std::to_string(t),
                       .id = "w" + std::to_string(t) + "-" + std::to_string(k)});
  specs.push_back({.topic = "w3"});  // a generated id, in the last run
  proxy.cut_next("_push_many", /*total=*/4, /*pass=*/2);
  std::vector<Result<std::string>> r = q->push_batch(specs);
  ASSERT_TRUE(proxy.cut_done());
  ASSERT_EQ(r.size(), 13u);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_TRUE(r[i].ok() && *r[i] == specs[i].id) << i << ": " << r[i].status().to_string();
  for (size_t i = 6; i < 13; ++i) {
    EXPECT_TRUE(r[i].is(Errc::unavailable)) << i << ": " << r[i].status().to_string();
    EXPECT_TRUE(mentions(r[i].status(), "may or may not have taken effect"))
        << r[i].status().to_string();
  }
  const std::string msg = r[12].status().message();
  const std::string named = "generated id was '";
  const size_t at = msg.find(named);
  ASSERT_NE(at, std::string::npos) << msg;
  specs[12].id =
      msg.substr(at + named.size(), msg.find('\'', at + named.size()) - at - named.size());
  // The server ran every run.
  for (const JobSpec& s : specs) EXPECT_EQ(stored(server, "cut", s.id), ":1") << s.id;
  // Pushed again (once the client has reconnected): every one was stored already.
  const auto until = std::chrono::steady_clock::now() + kLong;
  auto any_unavailable = [](const std::vector<Result<std::string>>& rs) {
    return std::any_of(rs.begin(), rs.end(), [](const auto& x) { return x.is(Errc::unavailable); });
  };
  for (;;) {
    r = q->push_batch(specs);
    if (!any_unavailable(r) || std::chrono::steady_clock::now() >= until) break;
    std::this_thread::sleep_for(10ms);
  }
  for (size_t i = 0; i < r.size(); ++i)
    EXPECT_TRUE(r[i].is(Errc::duplicate_id)) << i << ": " << r[i].status().to_string();
  EXPECT_EQ(q->stats().pushed, 13u);
}

// ---- the same errors as the in-memory engine ----

class RedisBadInput : public RedisQueueTest {
 protected:
  void SetUp() override {
    RedisQueueTest::SetUp();
    RedisOptions o;
    o.limits.max_delay = 1h;
    o.limits.max_body_bytes = 64;
    q_ = open(o).value();
    EngineOptions e;
    e.limits.max_delay = 1h;
    e.limits.max_body_bytes = 64;
    e.seed = 7;
    engine_ = Engine::open(e).value();
  }

  // Runs `call` on both queues; both must fail alike: same Errc, same message.
  template <class F>
  void ExpectSameError(F&& call, Errc want) {
    auto a = call(*q_);
    auto b = call(*engine_);
    const Status sa = to_status(a), sb = to_status(b);
    EXPECT_TRUE(sb.is(want)) << "engine: " << sb.to_string();
    EXPECT_TRUE(sa.is(want)) << "redis: " << sa.to_string();
    EXPECT_EQ(sa.message(), sb.message());
  }
  template <class R>
  static Status to_status(const R& r) {
    if constexpr (std::is_same_v<R, Status>) return r;
    else return r.status();
  }

  std::unique_ptr<Engine> engine_;
};

TEST_F(RedisBadInput, PushRefusalsMatchTheEngine) {
  std::vector<JobSpec> bad{
      {.topic = ""},
      {.topic = std::string(256, 't')},
      {.topic = "t", .id = std::string(256, 'i')},
      {.topic = "t", .delay = -5s},
      {.topic = "t", .delay = 2h},
      {.topic = "t", .delay = 1s, .due_at = now()},
      {.topic = "t", .ttr = -1s},
      {.topic = "t", .ttr = 2h},
      {.topic = "t", .body = std::string(65, 'b')},
      {.topic = "t", .retry = RetryPolicy::fixed(1s, 0)},
      {.topic = "t", .retry = RetryPolicy::list({})},
      {.topic = "t", .retry = RetryPolicy::exponential(1s, 0.5, 1h, 0, 3)},
      {.topic = "t", .retry = RetryPolicy::exponential(1s, 2, 1h, 1.5, 3)},
      {.topic = "t", .retry = RetryPolicy::fixed(2h, 3)},
  };
  for (const JobSpec& spec : bad)
    ExpectSameError([&](Queue& q) { return q.push(spec); }, Errc::invalid_argument);
  // due_at beyond max_delay: the message names how far away, which differs by the call's instant.
  const TimePoint far = now() + 2h;
  EXPECT_TRUE(q_->push({.topic = "t", .due_at = far}).is(Errc::invalid_argument));
  EXPECT_TRUE(q_->stats().topics.empty());
}

TEST_F(RedisBadInput, StateRefusalsMatchTheEngine) {
  for (Queue* q : {static_cast<Queue*>(q_.get()), static_cast<Queue*>(engine_.get())}) {
    ASSERT_TRUE(q->push({.topic = "t", .id = "delayed", .delay = 10min}).ok());
    ASSERT_TRUE(q->push({.topic = "t", .id = "reserved"}).ok());
    ASSERT_TRUE(q->reserve("t", 0ms).ok());
    ASSERT_TRUE(q->push({.topic = "t", .id = "dead", .retry = RetryPolicy::fixed(1s, 1)}).ok());
    ASSERT_TRUE(q->nack(q->reserve("t", 0ms)->token).ok());
    ASSERT_TRUE(q->push({.topic = "t", .id = "ready"}).ok());
  }
  for (const char* id : {"delayed", "reserved", "dead", "ready"})
    ExpectSameError([&](Queue& q) { return q.push({.topic = "t", .id = id}); }, Errc::duplicate_id);
  ExpectSameError([](Queue& q) { return q.get("nope"); }, Errc::not_found);
  ExpectSameError([](Queue& q) { return q.cancel("nope"); }, Errc::not_found);
  ExpectSameError([](Queue& q) { return q.ack(Token{"nope", 1}); }, Errc::not_found);
  for (const char* id : {"delayed", "dead", "ready"})
    ExpectSameError([&](Queue& q) { return q.ack(Token{id, 12345}); }, Errc::stale_token);
  ExpectSameError([&](Queue& q) { return q.touch(Token{"reserved", 0}); }, Errc::stale_token);
  ExpectSameError([](Queue& q) { return q.reschedule("reserved", now()); }, Errc::invalid_state);
  ExpectSameError([](Queue& q) { return q.reschedule("dead", now()); }, Errc::invalid_state);
  ExpectSameError([](Queue& q) { return q.requeue_dead("ready"); }, Errc::invalid_state);
  ExpectSameError([](Queue& q) { return q.requeue_dead("nope"); }, Errc::not_found);
  ExpectSameError([](Queue& q) { return q.nack(Token{"reserved", 0}, -1s); },
                  Errc::invalid_argument);
  ExpectSameError([](Queue& q) { return q.nack(Token{"reserved", 0}, 2h); },
                  Errc::invalid_argument);
  ExpectSameError([](Queue& q) { return q.reserve(std::vector<std::string>{}, 0ms); },
                  Errc::invalid_argument);
  Status far = q_->reschedule("delayed", now() + 2h);
  EXPECT_TRUE(far.is(Errc::invalid_argument)) << far.to_string();
  EXPECT_NE(far.message().find("beyond max_delay (1h)"), std::string::npos) << far.message();
  EXPECT_EQ(q_->get("delayed")->state, JobState::delayed);
}

// ---- the server goes away ----

TEST(RedisOutage, CallsFailWithUnavailableAndWorkAgainOnceTheServerIsBack) {
  RedisServer server;
  ASSERT_TRUE(server.started()) << server.log();
  auto q = open_redis({.url = server.url(), .reconnect_min = 20ms, .reconnect_max = 200ms}).value();
  ASSERT_TRUE(q->push({.topic = "t", .id = "before"}).ok());
  server.kill_now();
  Result<std::string> r = q->push({.topic = "t", .id = "during"});
  EXPECT_TRUE(r.is(Errc::unavailable)) << r.status().to_string();
  EXPECT_NE(r.status().message().find("redis"), std::string::npos);
  // A generated id is named: the only handle on a push that may or may not have been stored.
  r = q->push({.topic = "t"});
  EXPECT_TRUE(r.is(Errc::unavailable)) << r.status().to_string();
  EXPECT_NE(r.status().message().find("generated id was '"), std::string::npos)
      << r.status().to_string();
  EXPECT_TRUE(q->reserve("t", 0ms).is(Errc::unavailable));
  ASSERT_TRUE(server.start()) << server.log();  // appendonly no: the data is gone
  const auto until = std::chrono::steady_clock::now() + kLong;
  Result<std::string> again = Status(Errc::unavailable, "");
  while (again.is(Errc::unavailable) && std::chrono::steady_clock::now() < until) {
    again = q->push({.topic = "t", .id = "after"});
    if (again.is(Errc::unavailable)) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(q->reserve("t", kLong)->id, "after");
}

// The server is killed (SIGKILL) in the middle of a workload and restarted on its append-only
// file (appendfsync always). What must hold: every push that was answered (ok, or duplicate_id
// on a retry) is delivered; no delivery comes before the due time the test computed; and no job
// is delivered again after an ack that succeeded. Deliveries are told apart by their fences,
// which grow with every delivery of the shard (the counter is in the same file), so the last
// check does not depend on when each thread recorded what it saw.
TEST(RedisOutage, NothingAcknowledgedIsLostOrDeliveredAgainAcrossAServerCrash) {
  RedisServer server({"--appendonly", "yes", "--appendfsync", "always"});
  ASSERT_TRUE(server.started()) << server.log();
  RedisOptions o;
  o.url = server.url();
  o.queue = "crash";
  o.reconnect_min = 20ms;
  o.reconnect_max = 200ms;
  o.limits.default_ttr = 1s;  // an ack lost in the crash comes back soon
  o.limits.default_retry = RetryPolicy::fixed(0ms, 1000);
  auto producer = open_redis(o).value();
  auto consumer_q = open_redis(o).value();

  struct Job {
    TimePoint due;                 // the test's: before the first push attempt, plus the delay
    std::vector<uint64_t> fences;  // of each delivery
    std::vector<uint64_t> acked;   // the fences whose ack succeeded
  };
  std::mutex mu;
  std::map<std::string, Job> jobs;  // pushed and answered
  std::vector<std::string> problems;
  auto problem = [&](std::string what) {
    std::lock_guard lock(mu);
    problems.push_back(std::move(what));
  };

  // Two consumers that reserve, record and ack. An ack that fails with unavailable may or may
  // not have been applied: the job may come back, and that is fine.
  std::atomic<bool> stop{false};
  std::vector<std::thread> consumers;
  for (int c = 0; c < 2; ++c)
    consumers.emplace_back([&] {
      while (!stop.load()) {
        Result<Delivery> d = consumer_q->reserve("w", 200ms);
        if (d.is(Errc::timeout) || d.is(Errc::unavailable)) continue;
        if (!d.ok()) return problem("reserve: " + d.status().to_string());
        const TimePoint at = now();
        {
          std::lock_guard lock(mu);
          Job& j = jobs[d->id];
          if (j.due == TimePoint{} || at < j.due)
            problems.push_back(d->id + " was delivered before its due time");
          j.fences.push_back(d->token.fence);
        }
        const Status s = consumer_q->ack(d->token);
        if (s.ok()) {
          std::lock_guard lock(mu);
          jobs[d->id].acked.push_back(d->token.fence);
        } else if (!s.is(Errc::unavailable) && !s.is(Errc::stale_token) &&
                   !s.is(Errc::not_found)) {  // (refused: its lease had run out)
          problem("ack of " + d->id + ": " + s.to_string());
        }
      }
    });

  constexpr int kJobs = 300;
  std::thread restarter;
  int refused = 0;  // pushes that met the outage
  for (int i = 0; i < kJobs; ++i) {
    if (i == kJobs / 3) {
      // The crash, with consumers busy and jobs still delayed (up to 900 ms) in the server.
      server.kill_now();
      restarter = std::thread([&] {
        std::this_thread::sleep_for(300ms);
        EXPECT_TRUE(server.start()) << server.log();
      });
    }
    const std::string id = "job-" + std::to_string(i);
    const Duration delay = (i % 4) * 300ms;
    {
      std::lock_guard lock(mu);  // before the push: a consumer may see the job at once
      jobs[id].due = now() + delay;
    }
    // A push that failed with unavailable may or may not have been stored: push again until the
    // answer is clear (duplicate_id: it was).
    const auto until = std::chrono::steady_clock::now() + 60s;
    for (;;) {
      Result<std::string> r = producer->push({.topic = "w", .id = id, .delay = delay, .body = id});
      if (r.ok() || r.is(Errc::duplicate_id)) break;
      ASSERT_TRUE(r.is(Errc::unavailable)) << r.status().to_string();
      ++refused;
      ASSERT_LT(std::chrono::steady_clock::now(), until) << "the server did not come back";
      std::this_thread::sleep_for(10ms);
    }
  }
  restarter.join();
  EXPECT_GT(refused, 0) << "the crash happened in the middle of the pushes";

  // Until every job was delivered and the queue is empty (every job acked at last).
  auto undelivered = [&] {
    std::lock_guard lock(mu);
    return std::count_if(jobs.begin(), jobs.end(),
                         [](const auto& j) { return j.second.fences.empty(); });
  };
  const auto until = std::chrono::steady_clock::now() + 120s;
  while ((undelivered() > 0 || !producer->stats().topics.empty()) &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  stop = true;
  for (std::thread& t : consumers) t.join();

  std::lock_guard lock(mu);
  EXPECT_TRUE(problems.empty()) << problems.size()
                                << " problem(s), the first: " << problems.front();
  EXPECT_EQ(jobs.size(), static_cast<size_t>(kJobs));
  int lost = 0, again = 0, twice = 0;
  for (const auto& [id, j] : jobs) {
    lost += j.fences.empty();
    twice += j.acked.size() > 1;
    // A delivery with a fence above the acked one came after the ack.
    if (!j.acked.empty())
      again += std::any_of(j.fences.begin(), j.fences.end(),
                           [&](uint64_t f) { return f > j.acked.front(); });
  }
  EXPECT_EQ(lost, 0) << "jobs pushed but never delivered";
  EXPECT_EQ(twice, 0) << "jobs whose ack succeeded twice";
  EXPECT_EQ(again, 0) << "jobs delivered again after an ack that succeeded";
  EXPECT_TRUE(producer->stats().topics.empty()) << "jobs left in the queue";
}

}  // namespace
}  // namespace delayq
