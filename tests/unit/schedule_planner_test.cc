// The schedule planner (src/schedule/planner.h): on-time firing, each catch-up policy after three
// days of downtime, overlap skip while a job is held across three occurrences, the end; and the
// input rules of a ScheduleSpec (src/schedule/spec_rules.h), each refusal naming its field.
#include <gtest/gtest.h>

#include <random>

#include "schedule/planner.h"
#include "schedule/spec_rules.h"
#include "schedule_times.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using schedule::Plan;
using schedule::ScheduleState;
using schedule_test::rule;
using schedule_test::utc;
using CatchUp = ScheduleSpec::CatchUp;
using Overlap = ScheduleSpec::Overlap;

const TimePoint kT0 = utc(2026, 12, 1, 9);  // an hour's start

ScheduleSpec hourly(CatchUp c = CatchUp::one, uint32_t max = 100, Overlap o = Overlap::allow) {
  return {.id = "h",
          .rule = "0 * * * *",
          .zone = "Europe/Berlin",
          .job = {.topic = "t"},
          .catch_up = c,
          .catch_up_max = max,
          .overlap = o};
}

std::vector<TimePoint> hours_from(TimePoint first, int n) {
  std::vector<TimePoint> out;
  for (int i = 0; i < n; ++i) out.push_back(first + std::chrono::hours(i));
  return out;
}

TEST(SchedulePlanner, OnTimeOccurrencesFireOneEach) {
  const ScheduleSpec spec = hourly(CatchUp::skip);
  const schedule::Rule r = rule(spec.rule, spec.zone);
  ScheduleState s{.next = schedule::first_occurrence(r, spec, kT0 - 30min)};
  ASSERT_EQ(s.next, kT0);
  // Before the occurrence: nothing, the next unchanged.
  Plan p = schedule::plan(r, spec, s, kT0 - 1ns, 0ns, false);
  EXPECT_TRUE(p.fire.empty());
  EXPECT_EQ(p.next, kT0);
  for (int i = 0; i < 5; ++i) {
    const TimePoint o = kT0 + std::chrono::hours(i);
    // Exactly at the instant with tick 0: on time, even under catch_up skip.
    p = schedule::plan(r, spec, s, o, 0ns, false);
    EXPECT_EQ(p.fire, std::vector<TimePoint>{o});
    EXPECT_EQ(p.next, o + 1h);
    EXPECT_EQ(p.skipped_catch_up, 0u);
    schedule::apply(s, p);
  }
  EXPECT_EQ(s.fired, 5u);
  EXPECT_EQ(s.last_fired, kT0 + 4h);
  // Late by up to the tick: on time; a nanosecond more: missed.
  p = schedule::plan(r, spec, s, *s.next + 5ms, 5ms, false);
  EXPECT_EQ(p.fire, std::vector<TimePoint>{kT0 + 5h});
  p = schedule::plan(r, spec, s, *s.next + 5ms + 1ns, 5ms, false);
  EXPECT_TRUE(p.fire.empty());
  EXPECT_EQ(p.skipped_catch_up, 1u);
}

// The queue was down from just after kT0's occurrence for three days and 30 minutes: the 72
// hourly occurrences kT0+1h .. kT0+72h were missed.
struct Downtime {
  TimePoint now = kT0 + 72h + 30min;
  ScheduleState state{.next = kT0 + 1h, .last_fired = kT0, .fired = 1};
};

TEST(SchedulePlanner, CatchUpPoliciesAfterThreeDaysDown) {
  const Downtime d;
  struct Case {
    CatchUp policy;
    uint32_t max;
    std::vector<TimePoint> fire;
    uint64_t skipped;
  };
  for (const Case& c : {Case{CatchUp::skip, 100, {}, 72}, Case{CatchUp::one, 100, {kT0 + 72h}, 71},
                        Case{CatchUp::all, 100, hours_from(kT0 + 1h, 72), 0},
                        Case{CatchUp::all, 10, hours_from(kT0 + 63h, 10), 62},
                        Case{CatchUp::all, 1, {kT0 + 72h}, 71}}) {
    SCOPED_TRACE(static_cast<int>(c.policy) * 1000 + c.max);
    const ScheduleSpec spec = hourly(c.policy, c.max);
    const schedule::Rule r = rule(spec.rule, spec.zone);
    const Plan p = schedule::plan(r, spec, d.state, d.now, 1s, false);
    EXPECT_EQ(p.fire, c.fire);
    EXPECT_EQ(p.skipped_catch_up, c.skipped);
    EXPECT_EQ(p.skipped_overlap, 0u);
    EXPECT_EQ(p.next, kT0 + 73h);  // the next future occurrence, whatever the policy
    ScheduleState s = d.state;
    schedule::apply(s, p);
    EXPECT_EQ(s.fired + s.skipped_catch_up, 73u);  // each occurrence once, one way or the other
  }
}

TEST(SchedulePlanner, CatchUpOverManyOccurrencesTakesTheLatest) {
  // Every minute for three days (4320 missed), as cron and as an interval: the latest 100 fire.
  const TimePoint now = kT0 + 72h + 30s;
  for (const char* text : {"* * * * *", "every 1m"}) {
    SCOPED_TRACE(text);
    ScheduleSpec spec = hourly(CatchUp::all, 100);
    spec.rule = text;
    const schedule::Rule r = rule(text, spec.zone, kT0);
    const Plan p = schedule::plan(r, spec, {.next = kT0 + 1min}, now, 1s, false);
    ASSERT_EQ(p.fire.size(), 100u);
    EXPECT_EQ(p.fire.front(), kT0 + 72h - 99min);
    EXPECT_EQ(p.fire.back(), kT0 + 72h);
    for (size_t i = 1; i < p.fire.size(); ++i) EXPECT_EQ(p.fire[i] - p.fire[i - 1], 1min);
    EXPECT_EQ(p.skipped_catch_up, 4320u - 100u);
    EXPECT_EQ(p.next, kT0 + 72h + 1min);
  }
}

TEST(SchedulePlanner, AnOccurrenceDueNowFiresBesideTheMissedOnes) {
  // Back exactly at an occurrence: that one is on time and fires even under skip.
  const ScheduleSpec spec = hourly(CatchUp::skip);
  const schedule::Rule r = rule(spec.rule, spec.zone);
  const Plan p = schedule::plan(r, spec, Downtime{}.state, kT0 + 72h, 0ns, false);
  EXPECT_EQ(p.fire, std::vector<TimePoint>{kT0 + 72h});
  EXPECT_EQ(p.skipped_catch_up, 71u);
}

TEST(SchedulePlanner, OverlapSkipWhileAJobIsHeldAcrossThreeOccurrences) {
  const ScheduleSpec spec = hourly(CatchUp::one, 100, Overlap::skip);
  const schedule::Rule r = rule(spec.rule, spec.zone);
  ScheduleState s{.next = kT0};
  // kT0 fires; its job is held (lives) through kT0+1h, +2h, +3h; gone by kT0+4h.
  const bool live_at[] = {false, true, true, true, false};
  for (int i = 0; i < 5; ++i) {
    const TimePoint o = kT0 + std::chrono::hours(i);
    const Plan p = schedule::plan(r, spec, s, o, 0ns, live_at[i]);
    EXPECT_EQ(p.fire, live_at[i] ? std::vector<TimePoint>{} : std::vector<TimePoint>{o}) << i;
    EXPECT_EQ(p.skipped_overlap, live_at[i] ? 1u : 0u);
    schedule::apply(s, p);
  }
  EXPECT_EQ(s.fired, 2u);
  EXPECT_EQ(s.skipped_overlap, 3u);
  EXPECT_EQ(s.last_fired, kT0 + 4h);
  // With allow, the same held job does not stop the occurrences.
  const ScheduleSpec allow = hourly(CatchUp::one, 100, Overlap::allow);
  EXPECT_EQ(schedule::plan(r, allow, {.next = kT0 + 1h}, kT0 + 1h, 0ns, true).fire.size(), 1u);
  // Catching up under skip: the oldest chosen fires and the rest would overlap it.
  const ScheduleSpec all = hourly(CatchUp::all, 100, Overlap::skip);
  Plan p = schedule::plan(r, all, Downtime{}.state, Downtime{}.now, 1s, false);
  EXPECT_EQ(p.fire, std::vector<TimePoint>{kT0 + 1h});
  EXPECT_EQ(p.skipped_overlap, 71u);
  p = schedule::plan(r, all, Downtime{}.state, Downtime{}.now, 1s, true);
  EXPECT_TRUE(p.fire.empty());
  EXPECT_EQ(p.skipped_overlap, 72u);
}

TEST(SchedulePlanner, EndIsRespected) {
  ScheduleSpec spec = hourly(CatchUp::all);
  spec.start = kT0 - 10min;
  spec.end = kT0 + 3h;  // occurrences kT0, +1h, +2h; not +3h
  const schedule::Rule r = rule(spec.rule, spec.zone);
  ScheduleState s{.next = schedule::first_occurrence(r, spec, kT0 - 1h)};
  ASSERT_EQ(s.next, kT0);
  for (int i = 0; i < 3; ++i) schedule::apply(s, schedule::plan(r, spec, s, *s.next, 0ns, false));
  EXPECT_EQ(s.fired, 3u);
  EXPECT_EQ(s.next, std::nullopt);  // ended
  EXPECT_TRUE(schedule::plan(r, spec, s, kT0 + 30h, 0ns, false).fire.empty());
  // Down across the end: the missed ones before it are caught up, none at or after it.
  const Plan p = schedule::plan(r, spec, {.next = kT0 + 1h}, kT0 + 30h, 1s, false);
  EXPECT_EQ(p.fire, hours_from(kT0 + 1h, 2));
  EXPECT_EQ(p.skipped_catch_up, 0u);
  EXPECT_EQ(p.next, std::nullopt);
  // An occurrence exactly at the end never fires, on time or not.
  EXPECT_TRUE(schedule::plan(r, spec, {.next = kT0 + 3h}, kT0 + 3h, 0ns, false).fire.empty());
  // A start after the last occurrence before the end: nothing at all.
  spec.start = kT0 + 2h + 1s;
  EXPECT_EQ(schedule::first_occurrence(r, spec, kT0), std::nullopt);
}

// The planner's rules (planner.h) as the plainest walk: every occurrence from the state's next
// one to `now`, one by one, sorted into missed and on time, then the policies.
Plan model_plan(const schedule::Rule& r, const ScheduleSpec& spec, TimePoint next, TimePoint now,
                Duration tick, bool live) {
  const TimePoint end = spec.end.value_or(TimePoint::max());
  std::vector<TimePoint> missed, on_time;
  for (std::optional<TimePoint> o = next; o && *o <= now && *o < end; o = r.next_after(*o))
    (now - *o > tick ? missed : on_time).push_back(*o);
  size_t keep = 0;
  if (spec.catch_up == CatchUp::one) keep = std::min<size_t>(missed.size(), 1);
  if (spec.catch_up == CatchUp::all) keep = std::min<size_t>(missed.size(), spec.catch_up_max);
  Plan p;
  p.skipped_catch_up = missed.size() - keep;
  p.fire.assign(missed.end() - static_cast<ptrdiff_t>(keep), missed.end());
  p.fire.insert(p.fire.end(), on_time.begin(), on_time.end());
  if (spec.overlap == Overlap::skip && !p.fire.empty()) {
    p.skipped_overlap = p.fire.size() - (live ? 0 : 1);
    p.fire.resize(live ? 0 : 1);
  }
  const std::optional<TimePoint> after = r.next_after(std::max(now, next - 1ns));
  p.next = after && *after < end ? after : std::nullopt;
  return p;
}

TEST(SchedulePlanner, AgreesWithAWalkOverRandomDowntimes) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const char* rules[] = {"* * * * *", "*/7 1-3 * * *", "30 2 * * *",    "0 */4 * * SAT,SUN",
                         "every 90s", "every 25m",     "*/30 * * * * *"};
  const Duration ticks[] = {0ns, 1ms, 1s, 90s, 1h};
  for (int i = 0; i < 300; ++i) {
    ScheduleSpec spec =
        hourly(static_cast<CatchUp>(rng() % 3), static_cast<uint32_t>(1 + rng() % 60),
               static_cast<Overlap>(rng() % 2));
    spec.rule = rules[rng() % std::size(rules)];
    // Around Berlin's fall-back night, when the local hour 02:00-03:00 comes twice.
    const TimePoint anchor = utc(2026, 10, 24) + std::chrono::seconds(rng() % (3 * 86400));
    if (rng() % 3 == 0) spec.end = anchor + std::chrono::seconds(rng() % (4 * 86400));
    const schedule::Rule r = rule(spec.rule, spec.zone, anchor);
    const std::optional<TimePoint> next = schedule::first_occurrence(r, spec, anchor);
    if (!next) continue;
    const TimePoint now = *next + std::chrono::seconds(rng() % (rng() % 2 ? 600 : 3 * 86400));
    const Duration tick = ticks[rng() % std::size(ticks)];
    const bool live = rng() % 2;
    SCOPED_TRACE(spec.rule + " now " + std::to_string(now.time_since_epoch().count()));
    const Plan got = schedule::plan(r, spec, {.next = next}, now, tick, live);
    const Plan want = model_plan(r, spec, *next, now, tick, live);
    EXPECT_EQ(got.fire, want.fire);
    EXPECT_EQ(got.skipped_catch_up, want.skipped_catch_up);
    EXPECT_EQ(got.skipped_overlap, want.skipped_overlap);
    EXPECT_EQ(got.next, want.next);
  }
}

std::string why(const ScheduleSpec& s) {
  Result<schedule::Rule> r = schedule::check_schedule(s, Limits{}, kT0);
  return r.ok() ? "" : r.status().message();
}

TEST(ScheduleSpecRules, EachBadFieldIsNamed) {
  const ScheduleSpec good = hourly();
  EXPECT_EQ(why(good), "");
  auto with = [&](auto change) {
    ScheduleSpec s = good;
    change(s);
    return why(s);
  };
  EXPECT_EQ(with([](ScheduleSpec& s) { s.id = ""; }), "schedule id is empty");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.id = std::string(201, 'x'); }),
            "schedule id is 201 bytes long; the limit is 200");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.id = std::string(200, 'x'); }), "");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.id = "a@b"; }),
            "schedule id \"a@b\" contains '@', which its jobs' ids put between the schedule id "
            "and the occurrence's instant");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.zone = "Nowhere/Town"; }).substr(0, 21),
            "zone \"Nowhere/Town\" i");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.rule = "0 0 30 2 *"; }).substr(0, 33),
            "rule \"0 0 30 2 *\": no day ever ma");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.rule = "every 3651d"; }),
            "rule's interval of 3651d exceeds max_delay (3650d)");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.rule = "every 1ms"; }), "");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.job.topic = ""; }),
            "job: topic is empty: every job needs a topic to be reserved by");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.job.id = "x"; }),
            "job.id must be empty: each occurrence's job is named by the schedule id and its "
            "instant");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.job.delay = 1s; }),
            "job.delay and job.due_at must be empty: an occurrence's job is due at the occurrence");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.job.due_at = kT0; }),
            "job.delay and job.due_at must be empty: an occurrence's job is due at the occurrence");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.job.ttr = -1s; }), "job: ttr is negative (-1s)");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.job.body = std::string((1 << 20) + 1, 'b'); }),
            "job: body is 1048577 bytes; the limit is 1048576 (max_body_bytes)");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.start = kT0, s.end = kT0 - 2h; }),
            "end must be after start; it is 2h before it");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.start = kT0, s.end = kT0; }),
            "end equals start; it must be after it");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.catch_up_max = 0; }),
            "catch_up_max is 0; give 1 to 10000");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.catch_up_max = 10001; }),
            "catch_up_max is 10001; give 1 to 10000");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.catch_up_max = 10000; }), "");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.catch_up = static_cast<CatchUp>(7); }),
            "catch_up is not skip, one or all");
  EXPECT_EQ(with([](ScheduleSpec& s) { s.overlap = static_cast<Overlap>(2); }),
            "overlap is not allow or skip");
}

TEST(ScheduleSpecRules, AnEveryRuleIsAnchoredAtStartOrNow) {
  ScheduleSpec s = hourly();
  s.rule = "every 90s";
  Result<schedule::Rule> r = schedule::check_schedule(s, Limits{}, kT0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->next_at_or_after(kT0 - 1h), kT0);
  s.start = kT0 + 7s;
  r = schedule::check_schedule(s, Limits{}, kT0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->next_at_or_after(kT0), kT0 + 7s);
}

}  // namespace
}  // namespace delayq
