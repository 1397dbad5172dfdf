// Schedules on the in-memory engine, the durable store (with and without a disk tier), Redis and
// over HTTP (Queue::schedule and friends; Http: the client Queue to a delayqd in this process
// over a memory engine), on a ManualClock: every occurrence's job exactly once at its instant
// over a year of daily rules in three zones with DST changes (against the tz library's own
// description of local time), "every 90s" for a day, overlap skip with a job held across
// occurrences, replace/unschedule/pause/resume, and bad input refused by field. The durable
// store's own cases: schedule_store_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schedule_fixture.h"

namespace delayq::schedule_test {
namespace {

// Daily rules at 02:00 and 02:30 local time in three zones whose clocks change at that hour:
// Berlin skips 02:00-03:00 on 2026-03-29 and repeats it on 2026-10-25; New York skips it on
// 2026-03-08 (and repeats 01:00-02:00 on 2026-11-01); Lord Howe goes back half an hour at 02:00
// on 2026-04-05 and forward half an hour on 2026-10-04. A whole year is walked on each backend;
// its variants (Redis on four shards, the HTTP client over a memory engine), where each occurrence
// walked costs a few round trips, walk the weeks around those six changes (both windows start
// the schedules afresh, at noon UTC: no occurrence falls at a creation's instant, which a daily
// rule does not fire).
TEST_P(ScheduleEngine, AYearOfDailyRulesAcrossDstFiresEachOccurrenceOnceAtItsInstant) {
  const TimePoint start = clock.now();
  using Windows = std::vector<std::pair<TimePoint, TimePoint>>;
  const Windows windows = variant() ? Windows{{utc(2026, 3, 1, 12), utc(2026, 4, 12)},
                                              {utc(2026, 9, 27, 12), utc(2026, 11, 8)}}
                                    : Windows{{start, start + 24h * 366}};
  struct Rule {
    const char* zone;
    const char* rule;
    int minutes;
  };
  std::vector<Rule> rules;
  for (const char* zone : {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe"})
    for (const auto& [rule, minutes] : {std::pair{"0 2 * * *", 0}, std::pair{"30 2 * * *", 30}})
      rules.push_back({zone, rule, minutes});
  for (const auto& [from, until] : windows) {
    clock.set(from);
    std::vector<std::string> ids;
    for (const Rule& r : rules) {
      ids.push_back(std::string(r.zone).substr(0, 6) + std::to_string(r.minutes));
      ASSERT_TRUE(q->schedule(spec(ids.back(), r.rule, r.zone)).ok());
    }
    const std::vector<std::vector<TimePoint>> fired = walk_all(ids, until);
    for (size_t k = 0; k < rules.size(); ++k) {
      // The reference: 02:00 (02:30) of each local day, through the tz library.
      const date::time_zone* z = date::locate_zone(rules[k].zone);
      std::vector<TimePoint> expected;
      const auto first_day =
          date::floor<date::days>(z->to_local(date::floor<std::chrono::seconds>(from)));
      for (auto d = first_day; d < first_day + date::days(368); d += date::days(1)) {
        const TimePoint o = schedule_test::reference_instant(
            *z, date::local_seconds(d) + std::chrono::hours(2) +
                    std::chrono::minutes(rules[k].minutes));
        if (o >= from && o < until) expected.push_back(o);
      }
      EXPECT_EQ(fired[k], expected) << rules[k].zone << " " << rules[k].rule;
      const ScheduleInfo i = info(ids[k]);
      EXPECT_EQ(i.fired, expected.size());
      EXPECT_EQ(i.skipped_catch_up + i.skipped_overlap, 0u);
      EXPECT_EQ(i.last_fired, expected.back());
      ASSERT_TRUE(q->unschedule(ids[k]).ok());
    }
    if (HasFailure()) return;
  }
}

// "every 90s" for a day (six hours on the variants, as above).
TEST_P(ScheduleEngine, Every90sForADay) {
  const TimePoint from = clock.now();
  const Duration span = variant() ? 6h : 24h;
  const size_t n = static_cast<size_t>(span / 90s);  // occurrences after the first
  ASSERT_TRUE(q->schedule(spec("s", "every 90s")).ok());
  EXPECT_TRUE(has_job("s", from));  // the first occurrence is the creation's instant
  const std::vector<TimePoint> fired = walk("s", from + span);
  ASSERT_EQ(fired.size(), n - 1 + (span % 90s != Duration::zero()));
  for (size_t i = 0; i < fired.size(); ++i)
    EXPECT_EQ(fired[i], from + 90s * static_cast<int>(i + 1));
  EXPECT_EQ(jobs_in_t().size(), fired.size() + 1);
  EXPECT_EQ(q->stats().pushed, fired.size() + 1);
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

// A schedule replaced at the very instant of the occurrence it just fired goes on from the next
// one: that occurrence has had its job, even if the job is done and gone. Seen to fail before:
// the replacement fired the occurrence again, and its job came a second time.
TEST_P(ScheduleEngine, AReplacementAtTheInstantOfAFiredOccurrenceDoesNotFireItAgain) {
  ScheduleSpec s = spec("again", "every 1h");
  s.start = clock.now() + 1h;
  ASSERT_TRUE(q->schedule(s).ok());
  const TimePoint o = info("again").next.at(0);
  clock.set(o);
  auto d = q->reserve("t", 0s);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, occurrence_job_id("again", o));
  ASSERT_TRUE(q->ack(d->token).ok());
  s.job.body = "replaced";
  ASSERT_TRUE(q->schedule(s).ok());
  auto none = q->reserve("t", 0s);
  EXPECT_TRUE(none.is(Errc::timeout)) << "fired twice: "
                                      << (none.ok() ? none->id : none.status().to_string());
  const ScheduleInfo i = info("again");
  EXPECT_EQ(i.fired, 1u);
  ASSERT_FALSE(i.next.empty());
  EXPECT_EQ(i.next[0], o + 1h);
  clock.set(o + 1h);
  auto next = q->reserve("t", 0s);
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_EQ(next->id, occurrence_job_id("again", o + 1h));
  EXPECT_EQ(next->body, "replaced");
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

// After close(), every schedule call answers `closed` and changes nothing.
TEST_P(ScheduleEngine, EveryCallAfterCloseIsClosed) {
  ASSERT_TRUE(q->schedule(spec("c", "every 1h")).ok());
  q->close();
  EXPECT_TRUE(q->schedule(spec("d", "every 1h")).is(Errc::closed));
  EXPECT_TRUE(q->unschedule("c").is(Errc::closed));
  EXPECT_TRUE(q->get_schedule("c").status().is(Errc::closed));
  EXPECT_TRUE(q->list_schedules(10).status().is(Errc::closed));
  EXPECT_TRUE(q->pause_schedule("c").is(Errc::closed));
  EXPECT_TRUE(q->resume_schedule("c").is(Errc::closed));
  clock.set(clock.now() + 2h);  // no firing after close either: nothing to crash into
}

INSTANTIATE_TEST_SUITE_P(Backends, ScheduleEngine,
                         ::testing::Values(Backend{"Memory", false}, Backend{"Durable", true},
                                           Backend{"Tiered", true, true},
                                           Backend{"Redis", false, false, 1},
                                           Backend{"RedisShards4", false, false, 4},
                                           Backend{.name = "Http", .durable = false, .http = true}),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace delayq::schedule_test
