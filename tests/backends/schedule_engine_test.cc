// Schedules on the in-memory engine and the durable store (Queue::schedule and friends), on a
// ManualClock: every occurrence's job exactly once at its instant over a year of daily rules in
// zones with DST changes (against the tz library's own description of local time), "every 90s"
// for a day, the catch-up policies after 3 days with the store closed, overlap skip with a job
// held across occurrences, replace/unschedule/pause/resume, and bad input refused by field.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "../unit/schedule_times.h"
#include "child_process.h"
#include "raw_rocksdb.h"
#include "schedule/record.h"
#include "delayq/engine.h"
#include "delayq/store.h"
#include "temp_dir.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using schedule_test::utc;

Limits limits() { return Limits{.max_delay = 24h * 400, .max_body_bytes = 4096, .default_ttr = 30s}; }

struct Backend {
  std::string name;
  bool durable;
};
void PrintTo(const Backend& b, std::ostream* os) { *os << b.name; }

class ScheduleEngine : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    clock.set(utc(2025, 12, 31, 12));
    reopen();
  }
  void reopen() {
    q.reset();
    if (GetParam().durable) {
      ASSERT_FALSE(dir.path().empty());
      auto r = open_store(store_options());
      ASSERT_TRUE(r.ok()) << r.status().message();
      q = std::move(r).value();
    } else {
      EngineOptions o;
      o.clock = &clock;
      o.limits = limits();
      auto r = Engine::open(o);
      ASSERT_TRUE(r.ok()) << r.status().message();
      q = std::move(r).value();
    }
  }
  // The durable store's options: in `sub` of the test's directory, on the test's clock.
  StoreOptions store_options(const std::string& sub = "store") {
    StoreOptions o;
    o.dir = dir.sub(sub);
    o.sync = Sync::none;
    o.engine.clock = &clock;
    o.engine.limits = limits();
    return o;
  }
  ScheduleSpec spec(std::string id, std::string rule, std::string zone = "UTC") {
    ScheduleSpec s;
    s.id = std::move(id);
    s.rule = std::move(rule);
    s.zone = std::move(zone);
    s.job.topic = "t";
    s.job.body = "b";
    return s;
  }
  ScheduleInfo info(std::string_view id) {
    auto r = q->get_schedule(id);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : ScheduleInfo{};
  }
  bool has_job(std::string_view sched, TimePoint o) {
    auto r = q->get(occurrence_job_id(sched, o));
    if (r.ok()) {
      EXPECT_EQ(r->due, o) << occurrence_job_id(sched, o);
      EXPECT_EQ(r->topic, "t");
      EXPECT_EQ(r->body, "b");
    }
    return r.ok();
  }
  // Moves the clock occurrence by occurrence until `until`, checking that each occurrence's job
  // appears at its instant, not a second before, and returns the instants fired.
  std::vector<TimePoint> walk(std::string_view id, TimePoint until) {
    std::vector<TimePoint> fired;
    for (;;) {
      const ScheduleInfo i = info(id);
      if (i.next.empty() || i.next[0] >= until) break;
      const TimePoint o = i.next[0];
      if (o - 1s > clock.now()) {
        clock.set(o - 1s);
        EXPECT_FALSE(has_job(id, o)) << "early: " << occurrence_job_id(id, o);
      }
      clock.set(o);
      EXPECT_TRUE(has_job(id, o)) << "missing: " << occurrence_job_id(id, o);
      fired.push_back(o);
      if (::testing::Test::HasFailure()) break;
    }
    return fired;
  }
  // Jobs in topic "t", by id.
  std::set<std::string> jobs_in_t() {
    std::set<std::string> out;
    for (JobState st : {JobState::delayed, JobState::ready, JobState::reserved}) {
      std::string cursor;
      do {
        auto page = q->list_jobs("t", st, 1000, cursor);
        EXPECT_TRUE(page.ok()) << page.status().message();
        if (!page.ok()) return out;
        for (const JobInfo& j : page->jobs) out.insert(j.id);
        cursor = page->cursor;
      } while (!cursor.empty());
    }
    return out;
  }

  ManualClock clock;
  testing::TempDir dir{"delayq-sched"};
  std::unique_ptr<Queue> q;
};

TEST_P(ScheduleEngine, AYearOfDailyRulesAcrossDstFiresEachOccurrenceOnceAtItsInstant) {
  for (const char* zone : {"Europe/Berlin", "Australia/Lord_Howe"}) {
    for (const auto& [rule, minutes] : {std::pair{"0 2 * * *", 0}, std::pair{"30 2 * * *", 30}}) {
      const std::string id = std::string(zone).substr(0, 6) + std::to_string(minutes);
      ASSERT_TRUE(q->schedule(spec(id, rule, zone)).ok());
      const TimePoint from = clock.now(), until = from + 24h * 366;
      // The reference: 02:00 (02:30) of each local day, through the tz library.
      const date::time_zone* z = date::locate_zone(zone);
      std::vector<TimePoint> expected;
      const auto first_day =
          date::floor<date::days>(z->to_local(date::floor<std::chrono::seconds>(from)));
      for (auto d = first_day; d < first_day + date::days(368); d += date::days(1)) {
        const TimePoint o = schedule_test::reference_instant(
            *z, date::local_seconds(d) + std::chrono::hours(2) + std::chrono::minutes(minutes));
        if (o >= from && o < until) expected.push_back(o);
      }
      const std::vector<TimePoint> fired = walk(id, until);
      EXPECT_EQ(fired, expected) << zone << " " << rule;
      const ScheduleInfo i = info(id);
      EXPECT_EQ(i.fired, expected.size());
      EXPECT_EQ(i.skipped_catch_up + i.skipped_overlap, 0u);
      EXPECT_EQ(i.last_fired, expected.back());
      ASSERT_TRUE(q->unschedule(id).ok());
      clock.set(from);  // ManualClock refuses going back; the next rule starts where this ended
      if (HasFailure()) return;
    }
  }
}

TEST_P(ScheduleEngine, Every90sForADay) {
  const TimePoint from = clock.now();
  ASSERT_TRUE(q->schedule(spec("s", "every 90s")).ok());
  EXPECT_TRUE(has_job("s", from));  // the first occurrence is the creation's instant
  const std::vector<TimePoint> fired = walk("s", from + 24h);
  ASSERT_EQ(fired.size(), 959u);
  for (size_t i = 0; i < fired.size(); ++i)
    EXPECT_EQ(fired[i], from + 90s * static_cast<int>(i + 1));
  EXPECT_EQ(jobs_in_t().size(), 960u);
  EXPECT_EQ(q->stats().pushed, 960u);
}

TEST_P(ScheduleEngine, OverlapSkipWhileAConsumerHoldsTheJob) {
  ScheduleSpec s = spec("o", "every 1m");
  s.overlap = ScheduleSpec::Overlap::skip;
  s.job.ttr = 10min;
  const TimePoint t0 = clock.now();
  ASSERT_TRUE(q->schedule(s).ok());
  auto d = q->reserve("t", 0s);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->id, occurrence_job_id("o", t0));
  for (int i = 1; i <= 3; ++i) {
    clock.set(t0 + 1min * i);
    EXPECT_FALSE(has_job("o", t0 + 1min * i));
  }
  ScheduleInfo i = info("o");
  EXPECT_EQ(i.fired, 1u);
  EXPECT_EQ(i.skipped_overlap, 3u);
  EXPECT_EQ(i.live_jobs, std::vector<std::string>{occurrence_job_id("o", t0)});
  ASSERT_TRUE(q->ack(d->token).ok());
  clock.set(t0 + 4min);
  EXPECT_TRUE(has_job("o", t0 + 4min));
  i = info("o");
  EXPECT_EQ(i.fired, 2u);
  EXPECT_EQ(i.live_jobs, std::vector<std::string>{occurrence_job_id("o", t0 + 4min)});
}

TEST_P(ScheduleEngine, ReplaceUnschedulePauseResume) {
  const TimePoint t0 = clock.now();
  ScheduleSpec s = spec("r", "every 10m");
  s.catch_up = ScheduleSpec::CatchUp::skip;
  ASSERT_TRUE(q->schedule(s).ok());
  EXPECT_TRUE(has_job("r", t0));
  EXPECT_EQ(info("r").next, (std::vector<TimePoint>{t0 + 10min, t0 + 20min, t0 + 30min,
                                                    t0 + 40min, t0 + 50min}));
  // Replaced: the new rule from now on, the counters kept.
  clock.set(t0 + 5min);
  s.rule = "every 1h";
  ASSERT_TRUE(q->schedule(s).ok());
  EXPECT_TRUE(has_job("r", t0 + 5min));
  EXPECT_EQ(info("r").next[0], t0 + 65min);
  EXPECT_EQ(info("r").fired, 2u);
  // Paused: nothing while paused; on resume the missed ones go by catch-up (skip here).
  ASSERT_TRUE(q->pause_schedule("r").ok());
  EXPECT_TRUE(info("r").paused);
  clock.set(t0 + 200min);
  EXPECT_FALSE(has_job("r", t0 + 65min));
  EXPECT_FALSE(has_job("r", t0 + 185min));
  ASSERT_TRUE(q->resume_schedule("r").ok());
  ScheduleInfo i = info("r");
  EXPECT_FALSE(i.paused);
  EXPECT_EQ(i.fired, 2u);
  EXPECT_EQ(i.skipped_catch_up, 3u);  // 65, 125, 185 min
  EXPECT_EQ(i.next[0], t0 + 245min);
  // Listed in id order, in pages.
  ASSERT_TRUE(q->schedule(spec("a", "@daily")).ok());
  ASSERT_TRUE(q->schedule(spec("z", "@hourly")).ok());
  auto p1 = q->list_schedules(2);
  ASSERT_TRUE(p1.ok());
  ASSERT_EQ(p1->schedules.size(), 2u);
  EXPECT_EQ(p1->schedules[0].spec.id, "a");
  EXPECT_EQ(p1->schedules[1].spec.id, "r");
  auto p2 = q->list_schedules(2, p1->cursor);
  ASSERT_TRUE(p2.ok());
  ASSERT_EQ(p2->schedules.size(), 1u);
  EXPECT_EQ(p2->schedules[0].spec.id, "z");
  EXPECT_TRUE(p2->cursor.empty());
  EXPECT_TRUE(q->list_schedules(0).is(Errc::invalid_argument));
  // A paused schedule replaced stays paused.
  ASSERT_TRUE(q->pause_schedule("a").ok());
  ASSERT_TRUE(q->schedule(spec("a", "@weekly")).ok());
  EXPECT_TRUE(info("a").paused);
  EXPECT_EQ(info("a").spec.rule, "@weekly");
  // Unscheduled: gone, its jobs stay, nothing more fires.
  ASSERT_TRUE(q->unschedule("r").ok());
  EXPECT_TRUE(q->get_schedule("r").is(Errc::not_found));
  EXPECT_TRUE(q->unschedule("r").is(Errc::not_found));
  EXPECT_TRUE(q->pause_schedule("r").is(Errc::not_found));
  clock.set(t0 + 300min);
  EXPECT_FALSE(has_job("r", t0 + 245min));
  EXPECT_TRUE(has_job("r", t0));
}

TEST_P(ScheduleEngine, BadInputIsRefusedNamingTheField) {
  auto refused = [&](ScheduleSpec s, std::string_view word) {
    const Status st = q->schedule(s);
    EXPECT_TRUE(st.is(Errc::invalid_argument)) << s.rule << " " << s.zone;
    EXPECT_NE(st.message().find(word), std::string::npos) << st.message();
  };
  refused(spec("", "@daily"), "schedule id");
  refused(spec("a@b", "@daily"), "schedule id");
  refused(spec("x", "@daily", "Mars/Olympus"), "Mars/Olympus");
  refused(spec("x", "0 0 30 2 *"), "no day ever matches");
  refused(spec("x", "61 * * * *"), "minute");
  refused(spec("x", "every 500d"), "interval");
  ScheduleSpec s = spec("x", "@daily");
  s.start = clock.now() + 1h;
  s.end = clock.now();
  refused(s, "end");
  s = spec("x", "@daily");
  s.catch_up_max = 0;
  refused(s, "catch_up_max");
  s = spec("x", "@daily");
  s.job.id = "mine";
  refused(s, "job.id");
  s = spec("x", "@daily");
  s.job.topic = "";
  refused(s, "job");
  auto page = q->list_schedules(10);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->schedules.empty());  // nothing was stored
}

INSTANTIATE_TEST_SUITE_P(Backends, ScheduleEngine,
                         ::testing::Values(Backend{"Memory", false}, Backend{"Durable", true}),
                         [](const auto& p) { return p.param.name; });

// On the system clock the engine's own thread fires the occurrences (no ManualClock moves, no
// consumer waiting while they come): each occurrence's job reaches a consumer in turn. And a
// store reopened on it fires its restored schedule again.
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
    if (round == 0) ASSERT_TRUE((*q)->schedule(s).ok());
    // Jobs of occurrences after the open: the thread fired them.
    std::set<std::string> seen;
    while (seen.size() < 3) {
      auto d = (*q)->reserve("t", 30s);
      ASSERT_TRUE(d.ok()) << d.status().to_string();
      EXPECT_EQ(d->id.rfind("sys@", 0), 0u) << d->id;
      if (d->due > opened) EXPECT_TRUE(seen.insert(d->id).second) << d->id;
      ASSERT_TRUE((*q)->ack(d->token).ok());
    }
  }
}

// A process that fires a schedule every second of its ManualClock is killed (SIGKILL) at a
// random point, five times, each restart later on the clock (catch-up all fires what fell in
// between). Afterwards every occurrence the schedule has handled (before its next) has its job,
// none after it has one, and the counters agree: no fire is ever kept without its job, nor the
// reverse. Reopened on a clock before them all, so that the check fires nothing.
TEST(ScheduleCrash, AKilledProcessNeverKeepsAFireWithoutItsJob) {
  if (!testing::single_threaded()) GTEST_SKIP() << "needs a single-threaded process to fork";
  testing::TempDir dir("delayq-sched-crash");
  ASSERT_FALSE(dir.path().empty());
  const TimePoint t0 = utc(2026, 3, 1);
  auto options = [&](ManualClock& clock) {
    StoreOptions o;
    o.dir = dir.sub("store");
    o.sync = Sync::none;  // a process crash keeps what reached the OS
    o.engine.clock = &clock;
    o.engine.limits = limits();
    return o;
  };
  for (int round = 0; round < 5; ++round) {
    testing::ChildProcess child([&](int fd) {
      ManualClock clock;
      clock.set(t0 + 1000s * round);
      auto q = open_store(options(clock));
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
  auto q = open_store(options(clock));
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

// ---- the durable store only: schedules across restarts ----

class DurableSchedules : public ScheduleEngine {};

TEST_P(DurableSchedules, ThreeDaysDownUnderEachCatchUpPolicy) {
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

TEST_P(DurableSchedules, SpecPauseAndStateSurviveAReopen) {
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

TEST_P(DurableSchedules, AStoreWithADiskTierHasNoSchedulesYet) {
  q.reset();
  StoreOptions o = store_options("tiered");
  o.horizon = 1min;
  auto tiered = open_store(o);
  ASSERT_TRUE(tiered.ok()) << tiered.status().to_string();
  const Status st = (*tiered)->schedule(spec("x", "@daily"));
  EXPECT_TRUE(st.is(Errc::invalid_argument));
  EXPECT_NE(st.message().find("not supported"), std::string::npos) << st.message();
}

INSTANTIATE_TEST_SUITE_P(Store, DurableSchedules, ::testing::Values(Backend{"Durable", true}),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace delayq
