// Schedules on Redis (docs/redis.md, "Schedules"): each client's thread fires them on the system
// clock, also after every client closed and one opened again; and several clients fire at once: two clients
// of one queue, each with its own connections and its own ManualClock moved second by second on
// its own thread, fire the same schedules concurrently, while a consumer takes and acks every job
// as it comes. Each occurrence must reach the consumer exactly once: a client that lost the
// compare-and-set and pushed anyway would push a job already acked again, and it would arrive
// twice. And a client that dies between firing an occurrence and pushing its job, or between
// pushing it and recording the push: another client pushes the occurrence, at most once.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "redis/redis_queue.h"
#include "schedule_fixture.h"

namespace delayq::schedule_test {
namespace {

TEST(RedisScheduleSystemClock, OccurrencesFireWithoutAManualClock) {
  ASSERT_TRUE(redis_server().started()) << redis_server().log();
  RedisOptions o;
  o.url = redis_server().url();
  o.queue = "sched-sys" + std::to_string(next_redis_queue());
  o.limits = limits();
  ScheduleSpec s;
  s.id = "sys";
  s.rule = "every 1s";
  s.job.topic = "t";
  for (int round = 0; round < 2; ++round) {
    const TimePoint opened = SystemClock::instance().now();
    auto q = open_redis(o);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    if (round == 0) {
      ASSERT_TRUE((*q)->schedule(s).ok());
    }
    // Jobs of occurrences after the open: the client's thread fired them.
    std::set<std::string> seen;
    while (seen.size() < 2) {
      auto d = (*q)->reserve("t", 30s);
      ASSERT_TRUE(d.ok()) << d.status().to_string();
      EXPECT_EQ(d->id.rfind("sys@", 0), 0u) << d->id;
      if (d->due > opened) {
        EXPECT_TRUE(seen.insert(d->id).second) << d->id;
      }
      ASSERT_TRUE((*q)->ack(d->token).ok());
    }
  }
}

class RedisSchedulesRace : public ScheduleEngine {};

TEST_P(RedisSchedulesRace, TwoClientsFiringTheSameSchedulesMakeOneJobPerOccurrence) {
  constexpr int kSchedules = 4, kSeconds = 300;
  const TimePoint t0 = clock.now();
  ManualClock other;
  ASSERT_TRUE(other.set(t0));
  auto b = open_redis(redis_options(other));
  ASSERT_TRUE(b.ok()) << b.status().message();
  for (int i = 0; i < kSchedules; ++i) {
    ScheduleSpec s = spec("s" + std::to_string(i), "every 1s");
    // Created by either client: both read the same records.
    ASSERT_TRUE(((i % 2 == 0) ? q : *b)->schedule(s).ok());
  }
  std::map<std::string, int> delivered;
  std::atomic<bool> stepped{false};
  auto take_all = [&] {
    for (;;) {
      auto d = q->reserve("t", 0s);
      if (!d.ok()) return;
      ++delivered[d->id];
      EXPECT_TRUE(q->ack(d->token).ok());
    }
  };
  std::thread consumer([&] {
    while (!stepped.load()) {
      take_all();
      std::this_thread::yield();
    }
    take_all();
  });
  auto step = [t0](ManualClock& c) {
    for (int k = 1; k <= kSeconds; ++k) c.set(t0 + 1s * k);
  };
  std::thread ta([&] { step(clock); }), tb([&] { step(other); });
  ta.join();
  tb.join();
  stepped = true;
  consumer.join();
  for (int i = 0; i < kSchedules; ++i) {
    const std::string id = "s" + std::to_string(i);
    for (int k = 0; k <= kSeconds; ++k) {
      const std::string job = occurrence_job_id(id, t0 + 1s * k);
      EXPECT_EQ(delivered[job], 1) << job;
    }
    const ScheduleInfo in = info(id);
    EXPECT_EQ(in.fired, static_cast<uint64_t>(kSeconds + 1)) << id;
    EXPECT_EQ(in.skipped_catch_up + in.skipped_overlap, 0u) << id;
    EXPECT_EQ(in.last_fired, t0 + 1s * kSeconds) << id;
    if (HasFailure()) break;
  }
  EXPECT_EQ(delivered.size(), static_cast<size_t>(kSchedules * (kSeconds + 1)));
  EXPECT_EQ(q->stats().pushed, static_cast<uint64_t>(kSchedules * (kSeconds + 1)));
}

// A client that dies between firing an occurrence (its compare-and-set) and pushing its job, or
// between pushing it and recording the push: the test hook stops the client there. Another
// client, on its own clock, pushes what is still pending 30 s after it fired, at most once.
class RedisScheduleRecovery : public ScheduleEngine {
 protected:
  using Step = redis::RedisQueue::FireStep;
  void TearDown() override { redis::RedisQueue::fire_stop_hook.store(nullptr); }
  // Moves the test's clock to the next occurrence of `id`, its client stopped at `step`, and
  // returns the occurrence.
  TimePoint fire_stopped(std::string_view id, Step step) {
    static std::atomic<int> where{-1};
    where = static_cast<int>(step);
    const TimePoint o = info(id).next.at(0);
    redis::RedisQueue::fire_stop_hook.store(
        +[](Step s) { return static_cast<int>(s) == where.load(); });
    clock.set(o);
    redis::RedisQueue::fire_stop_hook.store(nullptr);
    return o;
  }
  // Schedule `id` every hour from an hour on: nothing fires as it is made.
  ScheduleSpec later(std::string id) {
    ScheduleSpec s = spec(std::move(id), "every 1h");
    s.start = clock.now() + 1h;
    return s;
  }
  // A second client of the queue, on `c`.
  std::unique_ptr<Queue> other_client(ManualClock& c) {
    auto r = open_redis(redis_options(c));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? std::move(r).value() : nullptr;
  }
};

TEST_P(RedisScheduleRecovery, AnOccurrenceFiredButNotPushedGetsItsJobOnceFromAnotherClient) {
  ASSERT_TRUE(q->schedule(later("lost")).ok());
  const TimePoint o = fire_stopped("lost", Step::after_fire);
  EXPECT_FALSE(has_job("lost", o)) << "the stopped client pushed";
  EXPECT_EQ(info("lost").fired, 1u);
  ManualClock other;
  ASSERT_TRUE(other.set(o + 29s));
  std::unique_ptr<Queue> b = other_client(other);
  ASSERT_TRUE(b);
  EXPECT_FALSE(has_job("lost", o)) << "pushed before 30 s: its client may still be pushing it";
  other.set(o + 31s);
  // Pushed with the occurrence as its due time, which has passed: due now (as any push).
  auto j = q->get(occurrence_job_id("lost", o));
  ASSERT_TRUE(j.ok()) << "the pending occurrence was not pushed: " << j.status().to_string();
  EXPECT_EQ(j->due, o + 31s);
  EXPECT_EQ(j->body, "b");
  auto d = q->reserve("t", 0s);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, occurrence_job_id("lost", o));
  ASSERT_TRUE(q->ack(d->token).ok());
  // No longer pending: neither client pushes it again.
  other.set(o + 2min);
  clock.set(o + 2min);
  auto none = q->reserve("t", 0s);
  EXPECT_TRUE(none.is(Errc::timeout)) << (none.ok() ? none->id : none.status().to_string());
  EXPECT_EQ(q->stats().pushed, 1u);
}

TEST_P(RedisScheduleRecovery, AnOccurrencePushedButNotRecordedIsNotPushedAgainOnceAcked) {
  ASSERT_TRUE(q->schedule(later("kept")).ok());
  const TimePoint o = fire_stopped("kept", Step::after_push);
  ASSERT_TRUE(has_job("kept", o));
  // Done and gone before any client looks at the pending occurrence: only its marker remains.
  auto d = q->reserve("t", 0s);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  ASSERT_TRUE(q->ack(d->token).ok());
  ManualClock other;
  ASSERT_TRUE(other.set(o + 31s));
  std::unique_ptr<Queue> b = other_client(other);
  ASSERT_TRUE(b);
  other.set(o + 2min);
  clock.set(o + 2min);
  auto none = q->reserve("t", 0s);
  EXPECT_TRUE(none.is(Errc::timeout)) << "pushed twice: "
                                      << (none.ok() ? none->id : none.status().to_string());
  EXPECT_EQ(q->stats().pushed, 1u);
  // The next occurrence is fired and pushed as usual.
  const TimePoint next = info("kept").next.at(0);
  clock.set(next);
  EXPECT_TRUE(has_job("kept", next));
}

// The job of a pending occurrence is made from its schedule's record when it is pushed: a
// schedule removed meanwhile leaves nothing to make it from, and the occurrence is dropped; one
// replaced gives its new job.
TEST_P(RedisScheduleRecovery, APendingOccurrenceTakesItsScheduleAsItIsWhenPushed) {
  ASSERT_TRUE(q->schedule(later("gone")).ok());
  ScheduleSpec changed = later("changed");
  ASSERT_TRUE(q->schedule(changed).ok());
  const TimePoint o = info("gone").next.at(0);
  ASSERT_EQ(info("changed").next.at(0), o);
  {
    redis::RedisQueue::fire_stop_hook.store(+[](Step s) { return s == Step::after_fire; });
    clock.set(o);
    redis::RedisQueue::fire_stop_hook.store(nullptr);
  }
  ASSERT_TRUE(q->unschedule("gone").ok());
  changed.job.body = "new body";
  ASSERT_TRUE(q->schedule(changed).ok());
  clock.set(o + 31s);
  EXPECT_TRUE(q->get(occurrence_job_id("gone", o)).is(Errc::not_found));
  auto j = q->get(occurrence_job_id("changed", o));
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ(j->body, "new body");
  clock.set(o + 2min);
  EXPECT_EQ(q->stats().pushed, 1u);
}

// list_schedules pages through a zset of the ids (sched.lua keeps it). A queue whose schedules
// were written without it (an earlier version of the library) has it made again from the records
// at its next listing.
TEST_P(RedisScheduleRecovery, SchedulesWrittenWithoutTheIdIndexAreListedInPages) {
  std::vector<std::string> ids;
  for (int i = 0; i < 25; ++i) {
    ids.push_back(fmt::format("s{:02}", i));
    ASSERT_TRUE(q->schedule(spec(ids.back(), "every 1h")).ok());
  }
  const std::string index = "{dq:" + queue_name + ":0}:sched:ids";
  EXPECT_EQ(redis_server().command("ZCARD " + index), ":25");
  auto list_all = [&](size_t limit) {
    std::vector<std::string> listed;
    std::string cursor;
    for (int pages = 0; pages < 100; ++pages) {
      auto page = q->list_schedules(limit, cursor);
      EXPECT_TRUE(page.ok()) << page.status().to_string();
      if (!page.ok()) break;
      for (const ScheduleInfo& i : page->schedules) listed.push_back(i.spec.id);
      if (page->cursor.empty()) break;
      cursor = page->cursor;
    }
    return listed;
  };
  EXPECT_EQ(list_all(7), ids);
  redis_server().command("DEL " + index);
  EXPECT_EQ(list_all(7), ids) << "not made again from the records";
  EXPECT_EQ(redis_server().command("ZCARD " + index), ":25");
  // Unscheduled: out of the index too.
  ASSERT_TRUE(q->unschedule("s03").ok());
  ids.erase(ids.begin() + 3);
  EXPECT_EQ(list_all(24), ids);
  EXPECT_EQ(list_all(100), ids);
}

INSTANTIATE_TEST_SUITE_P(Redis, RedisScheduleRecovery,
                         ::testing::Values(Backend{"Redis", false, false, 1},
                                           Backend{"RedisShards4", false, false, 4}),
                         [](const auto& p) { return p.param.name; });

INSTANTIATE_TEST_SUITE_P(Redis, RedisSchedulesRace,
                         ::testing::Values(Backend{"Redis", false, false, 1},
                                           Backend{"RedisShards4", false, false, 4}),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace delayq::schedule_test
