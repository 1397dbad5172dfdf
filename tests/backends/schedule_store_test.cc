// Schedules in the durable store: across reopens (the catch-up policies after 3 days closed,
// the spec and state kept), the stored record and damage to it, a store that gains a disk
// tier, the system clock's thread, and a process killed while it fires (never a fire without
// its job).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "child_process.h"
#include "engine/test_hooks.h"
#include "raw_rocksdb.h"
#include "schedule/record.h"
#include "schedule_fixture.h"

namespace delayq::schedule_test {
namespace {

TEST(ScheduleSystemClock, OccurrencesFireWithoutAManualClock) {
  testing::TempDir dir("delayq-sched-sys");
  ASSERT_FALSE(dir.path().empty());
  StoreOptions o;
  o.dir = dir.sub("store");
  o.sync = Sync::none;
  o.engine.limits = limits();
  ScheduleSpec s;
  s.id = "sys";
  s.rule = "every 50ms";
  s.job.topic = "t";
  for (int round = 0; round < 2; ++round) {
    const TimePoint opened = SystemClock::instance().now();
    auto q = open_store(o);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    if (round == 0) {
      ASSERT_TRUE((*q)->schedule(s).ok());
    }
    // Jobs of occurrences after the open: the thread fired them.
    std::set<std::string> seen;
    while (seen.size() < 3) {
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

// A process that fires a schedule every second of its ManualClock is killed (SIGKILL) at a
// random point, five times, each restart later on the clock (catch-up all fires what fell in
// between), every other round with a disk tier. Afterwards every occurrence the schedule has handled (before its next) has its job,
// none after it has one, and the counters agree: no fire is ever kept without its job, nor the
// reverse. Reopened on a clock before them all, so that the check fires nothing.
TEST(ScheduleCrash, AKilledProcessNeverKeepsAFireWithoutItsJob) {
  if (!testing::single_threaded()) GTEST_SKIP() << "needs a single-threaded process to fork";
  testing::TempDir dir("delayq-sched-crash");
  ASSERT_FALSE(dir.path().empty());
  const TimePoint t0 = utc(2026, 3, 1);
  // Odd rounds open the store with a disk tier: the placement that writes the record differs.
  auto options = [&](ManualClock& clock, bool tiered) {
    StoreOptions o;
    o.dir = dir.sub("store");
    o.sync = Sync::none;  // a process crash keeps what reached the OS
    o.engine.clock = &clock;
    o.engine.limits = limits();
    if (tiered) o.horizon = 1min;
    return o;
  };
  for (int round = 0; round < 5; ++round) {
    testing::ChildProcess child([&](int fd) {
      ManualClock clock;
      clock.set(t0 + 1000s * round);
      auto q = open_store(options(clock, round % 2 == 1));
      if (!q.ok()) ::_exit(2);
      if (!(*q)->get_schedule("c").ok()) {
        ScheduleSpec s;
        s.id = "c";
        s.rule = "every 1s";
        s.start = t0;
        s.job.topic = "t";
        s.catch_up = ScheduleSpec::CatchUp::all;
        s.catch_up_max = 10'000;
        if (!(*q)->schedule(s).ok()) ::_exit(3);
      }
      for (;;) {
        clock.advance(1s);
        if (::write(fd, "x", 1) != 1) ::_exit(4);
      }
    });
    ASSERT_TRUE(child.started());
    char buf[64];
    for (int got = 0, want = 150 + 61 * round; got < want;) {
      const ssize_t n = ::read(child.reports(), buf, std::min<int>(sizeof buf, want - got));
      ASSERT_GT(n, 0) << "the child ended early: " << child.kill_and_wait();
      got += static_cast<int>(n);
    }
    child.kill_and_wait();
  }
  ManualClock clock;
  clock.set(t0 - 1h);
  auto q = open_store(options(clock, false));
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  auto info = (*q)->get_schedule("c");
  ASSERT_TRUE(info.ok());
  ASSERT_FALSE(info->next.empty());
  const TimePoint next = info->next[0];
  EXPECT_GT(next, t0 + 4000s);  // the last round fired some
  uint64_t jobs = 0;
  for (TimePoint o = t0; o < next + 100s; o += 1s) {
    const bool has = (*q)->get(occurrence_job_id("c", o)).ok();
    EXPECT_EQ(has, o < next) << occurrence_job_id("c", o);
    jobs += has ? 1 : 0;
    if (HasFailure()) break;
  }
  EXPECT_EQ(info->fired, jobs);
  EXPECT_EQ(info->skipped_catch_up + info->skipped_overlap, 0u);
  EXPECT_EQ((*q)->stats().pushed, jobs);
}

// ---- schedules across restarts: the durable store reopened, Redis with every client closed ----

class ReopenedSchedules : public ScheduleEngine {};

TEST_P(ReopenedSchedules, ThreeDaysDownUnderEachCatchUpPolicy) {
  struct Case {
    ScheduleSpec::CatchUp policy;
    uint32_t max;
    uint64_t jobs_after, skipped;
  };
  // Hourly, fired at t0, t0+1h; closed; 3 days and 30 min later: 72 occurrences missed.
  for (const Case c : {Case{ScheduleSpec::CatchUp::skip, 100, 0, 72},
                       Case{ScheduleSpec::CatchUp::one, 100, 1, 71},
                       Case{ScheduleSpec::CatchUp::all, 100, 72, 0},
                       Case{ScheduleSpec::CatchUp::all, 10, 10, 62}}) {
    const std::string id = "c" + std::to_string(static_cast<int>(c.policy)) + "-" +
                           std::to_string(c.max);
    ScheduleSpec s = spec(id, "every 1h");
    s.catch_up = c.policy;
    s.catch_up_max = c.max;
    const TimePoint t0 = clock.now();
    ASSERT_TRUE(q->schedule(s).ok());
    clock.set(t0 + 1h);
    q.reset();
    clock.set(t0 + 1h + 72h + 30min);
    reopen();
    std::vector<TimePoint> got;
    for (int k = 2; k <= 73; ++k)
      if (q->get(occurrence_job_id(id, t0 + 1h * k)).ok()) got.push_back(t0 + 1h * k);
    ASSERT_EQ(got.size(), c.jobs_after) << id;
    // The latest ones, in order.
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_EQ(got[k], t0 + 1h * static_cast<int>(74 - got.size() + k)) << id;
    const ScheduleInfo i = info(id);
    EXPECT_EQ(i.fired, 2 + c.jobs_after) << id;
    EXPECT_EQ(i.skipped_catch_up, c.skipped) << id;
    EXPECT_EQ(i.next[0], t0 + 74h) << id;
    // Reopened again at once: nothing fires twice.
    reopen();
    EXPECT_EQ(info(id).fired, 2 + c.jobs_after) << id;
    ASSERT_TRUE(q->unschedule(id).ok());
    reopen();
    EXPECT_TRUE(q->get_schedule(id).is(Errc::not_found)) << id;
  }
}

TEST_P(ReopenedSchedules, SpecPauseAndStateSurviveAReopen) {
  ScheduleSpec s = spec("k", "0 9 * * MON-FRI", "America/New_York");
  s.job.priority = 3;
  s.job.ttr = 45s;
  s.job.retry = RetryPolicy::list({1s, 2min});
  s.catch_up = ScheduleSpec::CatchUp::all;
  s.catch_up_max = 7;
  s.end = clock.now() + 24h * 30;
  ASSERT_TRUE(q->schedule(s).ok());
  walk("k", clock.now() + 24h * 7);
  ASSERT_TRUE(q->pause_schedule("k").ok());
  const ScheduleInfo before = info("k");
  reopen();
  const ScheduleInfo after = info("k");
  EXPECT_TRUE(after.paused);
  EXPECT_EQ(after.spec.rule, s.rule);
  EXPECT_EQ(after.spec.zone, s.zone);
  EXPECT_EQ(after.spec.job.priority, 3u);
  EXPECT_EQ(after.spec.job.ttr, 45s);
  ASSERT_TRUE(after.spec.job.retry);
  EXPECT_EQ(after.spec.job.retry->delays, (std::vector<Duration>{1s, 2min}));
  EXPECT_EQ(after.spec.catch_up, ScheduleSpec::CatchUp::all);
  EXPECT_EQ(after.spec.catch_up_max, 7u);
  EXPECT_EQ(after.spec.end, s.end);
  EXPECT_EQ(after.fired, before.fired);
  EXPECT_EQ(after.last_fired, before.last_fired);
  EXPECT_EQ(after.next, before.next);
}

INSTANTIATE_TEST_SUITE_P(Backends, ReopenedSchedules,
                         ::testing::Values(Backend{"Durable", true}, Backend{"Tiered", true, true},
                                           Backend{"Redis", false, false, 1},
                                           Backend{"RedisShards4", false, false, 4}),
                         [](const auto& p) { return p.param.name; });

// ---- the durable store only ----

class DurableSchedules : public ScheduleEngine {};

// The record in meta/schedule/<id> is the schedule as the engine keeps it; a damaged one refuses
// the store, naming the schedule's trouble, or with `tolerant` is reported and left out.
TEST_P(DurableSchedules, TheStoredRecordAndDamageToIt) {
  const TimePoint t0 = clock.now();
  ASSERT_TRUE(q->schedule(spec("k", "every 1h")).ok());
  ASSERT_TRUE(q->schedule(spec("m", "every 1h")).ok());
  clock.set(t0 + 1h);
  q.reset();
  std::string stored;
  testing::raw_access(dir.sub("store"), "meta", "schedule/k", nullptr, &stored);
  Result<schedule::StoredSchedule> d = schedule::decode_schedule(stored);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->spec.id, "k");
  EXPECT_EQ(d->anchor, t0);
  EXPECT_EQ(d->state.fired, 2u);
  EXPECT_EQ(d->state.last_fired, t0 + 1h);
  EXPECT_EQ(d->state.next, t0 + 2h);
  EXPECT_EQ(schedule::encode_schedule(*d), stored);
  const std::string damaged = "\x07";
  testing::raw_access(dir.sub("store"), "meta", "schedule/k", &damaged, nullptr);
  StoreOptions o = store_options();
  auto refused = open_store(o);
  EXPECT_TRUE(refused.is(Errc::corrupt)) << refused.status().to_string();
  o.tolerant = true;
  std::vector<std::string> skipped;
  o.on_skip = [&skipped](const std::string& m) { skipped.push_back(m); };
  auto opened = open_store(o);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  EXPECT_TRUE((*opened)->get_schedule("k").is(Errc::not_found));
  EXPECT_TRUE((*opened)->get_schedule("m").ok());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("left out"), std::string::npos) << skipped[0];
}

// A store opened with a disk tier after a while without one: the schedule it kept fires what
// fell while it was closed (catch-up all), each job with the record in its batch (reopened, the
// counters and the jobs agree); and an occurrence's job moved beyond the horizon, so to disk
// alone, still counts as live for overlap skip.
class StoreGainingATier : public ScheduleEngine {};

TEST_P(StoreGainingATier, AStoreThatGainsADiskTierFiresItsSchedules) {
  const TimePoint t0 = clock.now();
  q.reset();
  StoreOptions plain = store_options("gains");
  plain.horizon.reset();
  auto opened = open_store(plain);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  q = std::move(opened).value();
  ScheduleSpec s = spec("h", "every 1h");
  s.catch_up = ScheduleSpec::CatchUp::all;
  s.overlap = ScheduleSpec::Overlap::skip;
  ASSERT_TRUE(q->schedule(s).ok());
  // The job of t0 is taken and acked: it is not live when the next ones come.
  auto d = q->reserve("t", 30s);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  ASSERT_TRUE(q->ack(d->token).ok());
  q.reset();
  clock.set(t0 + 3h + 30min);
  StoreOptions tiered = store_options("gains");
  tiered.horizon = 1min;
  opened = open_store(tiered);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  q = std::move(opened).value();
  // Overlap skip with catch-up all: t0+1h fires (a job due now, as a late one is), the next
  // two are skipped while it lives.
  auto exists = [&](TimePoint o) { return q->get(occurrence_job_id("h", o)).ok(); };
  EXPECT_TRUE(exists(t0 + 1h));
  EXPECT_FALSE(exists(t0 + 2h));
  EXPECT_FALSE(exists(t0 + 3h));
  ScheduleInfo i = info("h");
  EXPECT_EQ(i.fired, 2u);
  EXPECT_EQ(i.skipped_overlap, 2u);
  ASSERT_FALSE(i.next.empty());
  EXPECT_EQ(i.next[0], t0 + 4h);
  // Moved beyond the horizon, the job of t0+1h leaves memory for the disk tier, and is still
  // live: t0+4h is skipped.
  const size_t before = engine::tier_view(dynamic_cast<Engine&>(*q)).in_memory;
  ASSERT_TRUE(q->reschedule(occurrence_job_id("h", t0 + 1h), t0 + 48h).ok());
  EXPECT_EQ(engine::tier_view(dynamic_cast<Engine&>(*q)).in_memory, before - 1);
  clock.set(t0 + 4h);
  i = info("h");
  EXPECT_EQ(i.fired, 2u);
  EXPECT_EQ(i.skipped_overlap, 3u);
  EXPECT_FALSE(exists(t0 + 4h));
  // Gone, the next occurrence fires; reopened (with the tier), the record and the jobs agree.
  ASSERT_TRUE(q->cancel(occurrence_job_id("h", t0 + 1h)).ok());
  clock.set(t0 + 5h);
  EXPECT_TRUE(has_job("h", t0 + 5h));
  q.reset();
  opened = open_store(tiered);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  q = std::move(opened).value();
  i = info("h");
  EXPECT_EQ(i.fired, 3u);
  EXPECT_EQ(i.last_fired, t0 + 5h);
  EXPECT_EQ(i.skipped_overlap, 3u);
  EXPECT_TRUE(has_job("h", t0 + 5h));
  EXPECT_EQ(jobs_in_t(), (std::set<std::string>{occurrence_job_id("h", t0 + 5h)}));
}

INSTANTIATE_TEST_SUITE_P(Store, DurableSchedules,
                         ::testing::Values(Backend{"Durable", true}, Backend{"Tiered", true, true}),
                         [](const auto& p) { return p.param.name; });
// It opens its own store, first without a tier, then with one.
INSTANTIATE_TEST_SUITE_P(Store, StoreGainingATier, ::testing::Values(Backend{"Durable", true}),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace delayq::schedule_test
