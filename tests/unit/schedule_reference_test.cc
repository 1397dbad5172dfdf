// Cron rules against brute force: the occurrences Rule::next_after() walks through, compared
// with a plain walk over local time (minute by minute, or second by second in the matching
// minutes) whose local times become instants through the tz library (schedule_times.h). A year
// of the DST-sensitive rules in three zones, then random expressions at random instants.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "schedule/rule.h"
#include "schedule_times.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using schedule::Rule;
using schedule_test::reference_instant;
using schedule_test::rule;
using schedule_test::utc;

// A cron expression and the value sets it stands for, kept apart from the parser under test.
struct Expr {
  std::string text;
  std::vector<std::set<int>> sets;  // second, minute, hour, day-of-month, month, day-of-week
  bool days_any = true, weekdays_any = true;

  bool day_matches(date::sys_days d) const {
    const date::year_month_day ymd{d};
    if (!sets[4].count(static_cast<int>(static_cast<unsigned>(ymd.month())))) return false;
    const bool dom = sets[3].count(static_cast<int>(static_cast<unsigned>(ymd.day()))) > 0;
    const int wd = static_cast<int>(date::weekday{d}.c_encoding());
    const bool dow = sets[5].count(wd) > 0 || (wd == 0 && sets[5].count(7) > 0);
    return (days_any || weekdays_any) ? dom && dow : dom || dow;
  }
};

// The first instant after `t` at which the expression fires, walking local time from the day
// before t's local day (offsets change by less than a day) for up to 9 years of days.
std::optional<TimePoint> reference_next(const Expr& e, const date::time_zone& z, TimePoint t) {
  const date::local_seconds lt = z.to_local(date::floor<std::chrono::seconds>(t));
  date::sys_days d{date::floor<date::days>(lt).time_since_epoch()};
  d -= date::days(1);
  for (int i = 0; i < 9 * 366 + 2; ++i, d += date::days(1)) {
    if (!e.day_matches(d)) continue;
    const date::local_seconds midnight{d.time_since_epoch()};
    for (int minute = 0; minute < 24 * 60; ++minute) {
      if (!e.sets[2].count(minute / 60) || !e.sets[1].count(minute % 60)) continue;
      for (int s = 0; s < 60; ++s) {
        if (!e.sets[0].count(s)) continue;
        const TimePoint at =
            reference_instant(z, midnight + std::chrono::minutes(minute) + std::chrono::seconds(s));
        if (at > t) return at;
      }
    }
  }
  return std::nullopt;
}

Expr fixed(std::string text, int minute, int hour) {
  std::set<int> all_days, all_months, all_weekdays;
  for (int i = 1; i <= 31; ++i) all_days.insert(i);
  for (int i = 1; i <= 12; ++i) all_months.insert(i);
  for (int i = 0; i <= 6; ++i) all_weekdays.insert(i);
  return {std::move(text), {{0}, {minute}, {hour}, all_days, all_months, all_weekdays}};
}

TEST(CronReference, AYearOfTwoAmAndHalfPastTwoInThreeZones) {
  for (const char* zone : {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}) {
    const date::time_zone* z = date::locate_zone(zone);
    for (const Expr& e : {fixed("0 2 * * *", 0, 2), fixed("30 2 * * *", 30, 2)}) {
      SCOPED_TRACE(std::string(zone) + " " + e.text);
      const Rule r = rule(e.text, zone);
      // The reference: every local minute of the year (and a day on each side), converted.
      const TimePoint from = utc(2026, 1, 1), to = utc(2027, 1, 1);
      std::set<TimePoint> expected;
      const date::local_seconds first{
          date::sys_days{date::year(2025) / 12 / 31}.time_since_epoch()};
      for (date::local_seconds l = first; l < first + date::days(368);
           l += std::chrono::minutes(1)) {
        const date::hh_mm_ss<std::chrono::seconds> tod{l - date::floor<date::days>(l)};
        if (tod.hours().count() != 2 || !e.sets[1].count(tod.minutes().count())) continue;
        const TimePoint at = reference_instant(*z, l);
        if (at > from && at < to) expected.insert(at);
      }
      std::vector<TimePoint> got;
      for (std::optional<TimePoint> o = r.next_after(from); o && *o < to; o = r.next_after(*o))
        got.push_back(*o);
      EXPECT_EQ(got, std::vector<TimePoint>(expected.begin(), expected.end()));
      EXPECT_EQ(got.size(), 365u);  // once a day, on the DST days too
      EXPECT_EQ(r.count(from, to), 365u);
    }
  }
}

// A random field of kind [lo, hi] (names for months and weekdays sometimes), and its set.
std::string random_field(std::mt19937_64& rng, int lo, int hi, const char* const* names,
                         std::set<int>& set, bool& any) {
  auto pick = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  auto show = [&](int v) {
    if (names && pick(0, 2) == 0 && v - (lo == 1 ? 1 : 0) < (lo == 1 ? 12 : 7))
      return std::string(names[v - (lo == 1 ? 1 : 0)]);
    return std::to_string(v);
  };
  any = false;
  const int kind = pick(0, 9);
  if (kind <= 2) {
    any = true;
    for (int v = lo; v <= hi; ++v) set.insert(v);
    return "*";
  }
  std::string out;
  for (int items = pick(1, 3); items > 0; --items) {
    if (!out.empty()) out += ",";
    const int shape = pick(0, 4);
    int a = pick(lo, hi), b = pick(a, hi), step = pick(1, std::max(1, (hi - lo) / 2));
    if (shape == 0) {
      set.insert(a);
      out += show(a);
    } else if (shape == 1) {
      for (int v = a; v <= b; ++v) set.insert(v);
      out += show(a) + "-" + show(b);
    } else if (shape == 2) {
      for (int v = a; v <= b; v += step) set.insert(v);
      out += show(a) + "-" + show(b) + "/" + std::to_string(step);
    } else if (shape == 3) {
      for (int v = lo; v <= hi; v += step) set.insert(v);
      out += "*/" + std::to_string(step);
    } else {
      for (int v = a; v <= hi; v += step) set.insert(v);
      out += std::to_string(a) + "/" + std::to_string(step);
    }
  }
  return out;
}

constexpr const char* kMonths[] = {"jan", "Feb", "MAR", "apr", "May", "JUN",
                                   "jul", "aug", "Sep", "OCT", "nov", "dec"};
constexpr const char* kDays[] = {"sun", "Mon", "TUE", "wed", "Thu", "FRI", "sat"};

Expr random_expr(std::mt19937_64& rng) {
  Expr e;
  e.sets.resize(6);
  const bool seconds = rng() % 3 == 0;
  bool any = false;
  std::string parts[6];
  if (seconds) {
    parts[0] = random_field(rng, 0, 59, nullptr, e.sets[0], any);
  } else {
    e.sets[0] = {0};
  }
  parts[1] = random_field(rng, 0, 59, nullptr, e.sets[1], any);
  parts[2] = random_field(rng, 0, 23, nullptr, e.sets[2], any);
  parts[3] = random_field(rng, 1, 31, nullptr, e.sets[3], e.days_any);
  parts[4] = random_field(rng, 1, 12, kMonths, e.sets[4], any);
  parts[5] = random_field(rng, 0, 7, kDays, e.sets[5], e.weekdays_any);
  for (int i = seconds ? 0 : 1; i < 6; ++i) e.text += (e.text.empty() ? "" : " ") + parts[i];
  return e;
}

TEST(CronReference, RandomExpressionsAtRandomInstants) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const char* zones[] = {"UTC",
                         "Europe/Berlin",
                         "America/New_York",
                         "Australia/Lord_Howe",
                         "Asia/Kathmandu",
                         "America/Santiago",
                         "Pacific/Chatham"};
  // Instants near DST changes are the interesting ones: half of them are within a day of one.
  const TimePoint changes[] = {utc(2026, 3, 29, 1), utc(2026, 10, 25, 1), utc(2026, 3, 8, 7),
                               utc(2026, 11, 1, 6), utc(2026, 4, 4, 15),  utc(2026, 10, 3, 15, 30)};
  int parsed = 0;
  for (int i = 0; i < 400; ++i) {
    const Expr e = random_expr(rng);
    const char* zone = zones[rng() % std::size(zones)];
    SCOPED_TRACE(std::string(zone) + " \"" + e.text + "\"");
    Result<Rule> r = Rule::parse(e.text, zone, TimePoint{});
    const TimePoint base = rng() % 2 ? changes[rng() % std::size(changes)]
                                     : utc(2020, 1, 1) + std::chrono::hours(rng() % (24 * 3650));
    const int64_t spread = rng() % 2 ? 2 * 3600 : 24 * 3600;  // around the change, or its day
    const TimePoint t = base +
                        std::chrono::seconds(static_cast<int64_t>(rng() % (2 * spread)) - spread) +
                        std::chrono::milliseconds(rng() % 2 ? 0 : rng() % 1000);
    const date::time_zone* z = date::locate_zone(zone);
    const std::optional<TimePoint> expected = reference_next(e, *z, t);
    if (!r.ok()) {
      // Only a rule that never fires may be refused, and then the reference finds nothing.
      EXPECT_NE(r.status().message().find("no day ever matches"), std::string::npos)
          << r.status().message();
      EXPECT_EQ(reference_next(e, *z, utc(2000, 1, 1)), std::nullopt);
      continue;
    }
    ++parsed;
    EXPECT_EQ(r->next_after(t), expected) << "after " << t.time_since_epoch().count();
    // count() over a stretch against stepping through it.
    const TimePoint until = t + std::chrono::hours(1 + rng() % (24 * 40));
    uint64_t stepped = 0;
    for (std::optional<TimePoint> o = r->next_at_or_after(t); o && *o < until && stepped < 20000;
         o = r->next_after(*o))
      ++stepped;
    if (stepped < 20000) {
      EXPECT_EQ(r->count(t, until), stepped);
    }
  }
  EXPECT_GT(parsed, 300);
}

}  // namespace
}  // namespace delayq
