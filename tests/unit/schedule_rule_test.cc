// Schedule rules (src/schedule/rule.h, cron.h): every construct of the cron grammar and of
// "every", every refusal in its words, DST on the days it changes, and occurrence ids.
#include <gtest/gtest.h>

#include <vector>

#include "delayq/schedule.h"
#include "schedule/rule.h"
#include "schedule_times.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using schedule::Rule;
using schedule_test::rule;
using schedule_test::utc;

// The first `n` occurrences after `t`.
std::vector<TimePoint> after(const Rule& r, TimePoint t, int n) {
  std::vector<TimePoint> out;
  for (std::optional<TimePoint> o = r.next_after(t); o && static_cast<int>(out.size()) < n;
       o = r.next_after(*o))
    out.push_back(*o);
  return out;
}

std::vector<TimePoint> at_minutes(TimePoint hour, std::initializer_list<int> minutes) {
  std::vector<TimePoint> out;
  for (int m : minutes) out.push_back(hour + std::chrono::minutes(m));
  return out;
}

const TimePoint kMon = utc(2026, 11, 30, 10, 7);  // a Monday, 10:07 UTC

TEST(CronGrammar, ListsRangesAndSteps) {
  const TimePoint h10 = utc(2026, 11, 30, 10), h11 = h10 + 1h;
  EXPECT_EQ(after(rule("*/15 * * * *"), kMon, 3), at_minutes(h10, {15, 30, 45}));
  EXPECT_EQ(after(rule("5,10,50 * * * *"), kMon, 3), at_minutes(h10, {10, 50, 65}));
  EXPECT_EQ(after(rule("1-3 * * * *"), kMon, 3), at_minutes(h11, {1, 2, 3}));
  EXPECT_EQ(after(rule("1-30/10 * * * *"), kMon, 4), at_minutes(h10, {11, 21, 61, 71}));
  EXPECT_EQ(after(rule("50/5 * * * *"), kMon, 3), at_minutes(h10, {50, 55, 110}));
  EXPECT_EQ(after(rule("0,30-31 * * * *"), kMon, 3), at_minutes(h10, {30, 31, 60}));
  EXPECT_EQ(after(rule("  0   12  *  *  *  "), kMon, 1), at_minutes(h10, {120}));
  // Spaces or tabs between fields.
  EXPECT_EQ(after(rule("0\t12 *\t* *"), kMon, 1), at_minutes(h10, {120}));
  // The quarter hours of 09:00 to 17:45, Monday to Friday: from Friday 17:30 to Monday 09:00.
  const Rule office = rule("*/15 9-17 * * MON-FRI");
  EXPECT_EQ(after(office, utc(2026, 12, 4, 17, 30), 2),
            (std::vector<TimePoint>{utc(2026, 12, 4, 17, 45), utc(2026, 12, 7, 9)}));
  EXPECT_EQ(office.count(utc(2026, 11, 30), utc(2026, 12, 7)), 5u * 9 * 4);
  // Seconds first with 6 fields.
  EXPECT_EQ(after(rule("*/20 * * * * *"), kMon, 3),
            (std::vector<TimePoint>{kMon + 20s, kMon + 40s, kMon + 60s}));
  EXPECT_EQ(after(rule("30 0 12 * * *"), kMon, 1), (std::vector<TimePoint>{h10 + 2h + 30s}));
}

TEST(CronGrammar, NamesInAnyCaseAndBothSundays) {
  // Months: JAN..DEC.
  EXPECT_EQ(after(rule("0 0 1 jan,Jul *"), kMon, 2),
            (std::vector<TimePoint>{utc(2027, 1, 1), utc(2027, 7, 1)}));
  EXPECT_EQ(after(rule("0 0 1 FEB-apr *"), kMon, 3),
            (std::vector<TimePoint>{utc(2027, 2, 1), utc(2027, 3, 1), utc(2027, 4, 1)}));
  // Weekdays: SUN..SAT; 0 and 7 are Sunday. 2026-12-06 is a Sunday.
  const std::vector<TimePoint> sundays{utc(2026, 12, 6), utc(2026, 12, 13)};
  EXPECT_EQ(after(rule("0 0 * * 0"), kMon, 2), sundays);
  EXPECT_EQ(after(rule("0 0 * * 7"), kMon, 2), sundays);
  EXPECT_EQ(after(rule("0 0 * * sun"), kMon, 2), sundays);
  EXPECT_EQ(after(rule("0 0 * * Mon-fri"), kMon, 5),
            (std::vector<TimePoint>{utc(2026, 12, 1), utc(2026, 12, 2), utc(2026, 12, 3),
                                    utc(2026, 12, 4), utc(2026, 12, 7)}));
  EXPECT_EQ(after(rule("0 0 * * 5-7"), kMon, 3),
            (std::vector<TimePoint>{utc(2026, 12, 4), utc(2026, 12, 5), utc(2026, 12, 6)}));
}

TEST(CronGrammar, DayOfMonthOrDayOfWeekWhenBothAreRestricted) {
  // Both restricted: the 13th, and every Friday (2026-12-04, 11, 13, 18).
  EXPECT_EQ(after(rule("0 0 13 * FRI"), kMon, 4),
            (std::vector<TimePoint>{utc(2026, 12, 4), utc(2026, 12, 11), utc(2026, 12, 13),
                                    utc(2026, 12, 18)}));
  // One of them "*": only the other decides.
  EXPECT_EQ(after(rule("0 0 13 * *"), kMon, 2),
            (std::vector<TimePoint>{utc(2026, 12, 13), utc(2027, 1, 13)}));
  EXPECT_EQ(after(rule("0 0 * * FRI"), kMon, 2),
            (std::vector<TimePoint>{utc(2026, 12, 4), utc(2026, 12, 11)}));
  // "*/1" is a restriction (only exactly "*" is not): every day of the month OR Friday = daily.
  EXPECT_EQ(after(rule("0 0 */1 * FRI"), kMon, 2),
            (std::vector<TimePoint>{utc(2026, 12, 1), utc(2026, 12, 2)}));
  // February 29th comes every four years, and once eight (2100 is not a leap year).
  EXPECT_EQ(after(rule("0 0 29 2 *"), kMon, 2),
            (std::vector<TimePoint>{utc(2028, 2, 29), utc(2032, 2, 29)}));
  EXPECT_EQ(rule("0 0 29 2 *").next_after(utc(2096, 3, 1)), utc(2104, 2, 29));
}

TEST(CronGrammar, Macros) {
  EXPECT_EQ(after(rule("@yearly"), kMon, 1), (std::vector<TimePoint>{utc(2027, 1, 1)}));
  EXPECT_EQ(after(rule("@annually"), kMon, 1), (std::vector<TimePoint>{utc(2027, 1, 1)}));
  EXPECT_EQ(after(rule("@monthly"), kMon, 1), (std::vector<TimePoint>{utc(2026, 12, 1)}));
  EXPECT_EQ(after(rule("@weekly"), kMon, 1), (std::vector<TimePoint>{utc(2026, 12, 6)}));
  EXPECT_EQ(after(rule("@daily"), kMon, 1), (std::vector<TimePoint>{utc(2026, 12, 1)}));
  EXPECT_EQ(after(rule("@MIDNIGHT"), kMon, 1), (std::vector<TimePoint>{utc(2026, 12, 1)}));
  EXPECT_EQ(after(rule("@hourly"), kMon, 1), (std::vector<TimePoint>{utc(2026, 11, 30, 11)}));
}

TEST(CronGrammar, NextAfterIsStrictAndAtOrAfterIsNot) {
  const Rule r = rule("0 * * * *");
  const TimePoint h = utc(2026, 11, 30, 10);
  EXPECT_EQ(r.next_after(h), h + 1h);
  EXPECT_EQ(r.next_at_or_after(h), h);
  EXPECT_EQ(r.next_after(h - 1ns), h);
  EXPECT_EQ(r.next_at_or_after(h + 1ns), h + 1h);
  EXPECT_EQ(r.interval(), std::nullopt);
  // Nothing a TimePoint holds after April 2262.
  EXPECT_EQ(rule("@yearly").next_after(utc(2262, 1, 1)), std::nullopt);
}

std::string refusal(std::string_view text, std::string_view zone = "UTC") {
  Result<Rule> r = Rule::parse(text, zone, TimePoint{});
  EXPECT_FALSE(r.ok()) << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), Errc::invalid_argument);
  return r.status().message();
}

TEST(CronGrammar, EachRefusalNamesTheField) {
  // Each field, each way it can be wrong.
  const std::pair<const char*, const char*> cases[] = {
      {"61 * * * *", "cron minute \"61\": 61 is out of range 0-59"},
      {"0 24 * * *", "cron hour \"24\": 24 is out of range 0-23"},
      {"0 0 0 * *", "cron day-of-month \"0\": 0 is out of range 1-31"},
      {"0 0 * 13 *", "cron month \"13\": 13 is out of range 1-12"},
      {"0 0 * * 8", "cron day-of-week \"8\": 8 is out of range 0-7"},
      {"60 0 0 * * *", "cron second \"60\": 60 is out of range 0-59"},
      {"99999999999 * * * *", "cron minute \"99999999999\": 99999999999 is out of range 0-59"},
      {"0 0 * * FUN",
       "cron day-of-week \"FUN\": \"FUN\" is neither a number nor a name (SUN..SAT)"},
      {"0 0 * JANUARY *",
       "cron month \"JANUARY\": \"JANUARY\" is neither a number nor a name (JAN..DEC)"},
      {"MON * * * *", "cron minute \"MON\": \"MON\" is not a number"},
      {"5-2 * * * *", "cron minute \"5-2\": range 5-2 goes backwards"},
      {"*/0 * * * *", "cron minute \"*/0\": step 0 is out of range 1-59"},
      {"*/60 * * * *", "cron minute \"*/60\": step 60 is out of range 1-59"},
      {"*/x * * * *", "cron minute \"*/x\": step \"x\" is not a number"},
      {"1,,2 * * * *", "cron minute \"1,,2\": an empty list item"},
      {"1, * * * *", "cron minute \"1,\": an empty list item"},
      {"-5 * * * *", "cron minute \"-5\": a value is missing"},
      {"1-2-3 * * * *", "cron minute \"1-2-3\": \"2-3\" is not a number"},
  };
  for (const auto& [text, message] : cases) EXPECT_EQ(refusal(text), message);
  EXPECT_EQ(refusal("0 0 * *"),
            "rule \"0 0 * *\": a cron expression has 5 fields (minute hour day-of-month month "
            "day-of-week) or 6 (second first), not 4");
  EXPECT_NE(refusal("0 0 0 0 * * *").find("or 6 (second first), not 7"), std::string::npos);
  EXPECT_EQ(refusal("@fortnightly"),
            "rule \"@fortnightly\": unknown macro; use @yearly, @annually, @monthly, @weekly, "
            "@daily, @midnight or @hourly");
  EXPECT_EQ(refusal("   "), "rule is empty: give \"every <duration>\" or a cron expression");
  // Rules that never fire.
  for (const char* never : {"0 0 30 2 *", "0 0 31 4 *", "0 0 31 6,9,11 *", "0 0 30,31 FEB *"})
    EXPECT_EQ(refusal(never), "rule \"" + std::string(never) +
                                  "\": no day ever matches its day-of-month, month and "
                                  "day-of-week (as \"0 0 30 2 *\": there is no February 30)");
  // Zones.
  EXPECT_EQ(refusal("@daily", "Mars/Olympus_Mons"),
            "zone \"Mars/Olympus_Mons\" is not a time zone of the system's tz database (an IANA "
            "name, as \"Europe/Berlin\")");
  EXPECT_NE(refusal("every 1s", "../../etc/passwd").find("zone"), std::string::npos);
}

TEST(EveryRule, UnitsAndRefusals) {
  const TimePoint a = utc(2026, 12, 1, 9);
  EXPECT_EQ(rule("every 250ms", "", a).interval(), 250ms);
  EXPECT_EQ(rule("every 90s", "", a).interval(), 90s);
  EXPECT_EQ(rule("every 15m", "", a).interval(), 15min);
  EXPECT_EQ(rule("every 24h", "", a).interval(), 24h);
  EXPECT_EQ(rule("every   2d", "", a).interval(), 48h);
  EXPECT_EQ(refusal("every 0s"), "rule \"every 0s\": the interval must be positive");
  const std::string form =
      "give the interval as a whole number and a unit (ms, s, m, h or d), as in \"every 90s\"";
  EXPECT_EQ(refusal("every 90"), "rule \"every 90\": " + form);
  EXPECT_EQ(refusal("every s"), "rule \"every s\": " + form);
  EXPECT_EQ(refusal("every 1.5h"), "rule \"every 1.5h\": " + form);
  EXPECT_EQ(refusal("every -1s"), "rule \"every -1s\": " + form);
  EXPECT_EQ(refusal("every 1w"), "rule \"every 1w\": " + form);
  EXPECT_EQ(refusal("every 36501d"),
            "rule \"every 36501d\": the interval is longer than 100 years");
  EXPECT_EQ(refusal("every 99999999999999999999999s"),
            "rule \"every 99999999999999999999999s\": the interval is longer than 100 years");
}

TEST(EveryRule, NinetySecondsForADayFromItsAnchor) {
  const TimePoint a = utc(2026, 3, 28, 12, 0, 7);  // across Berlin's spring-forward night
  const Rule r = rule("every 90s", "Europe/Berlin", a);
  EXPECT_EQ(r.next_after(a - 1ns), a);
  EXPECT_EQ(r.next_at_or_after(a), a);
  EXPECT_EQ(r.next_after(utc(2000, 1, 1)), a);
  std::vector<TimePoint> day{a};
  while (true) {
    const TimePoint o = *r.next_after(day.back());
    if (o >= a + 24h) break;
    day.push_back(o);
  }
  ASSERT_EQ(day.size(), 960u);  // 86400 / 90
  for (size_t i = 0; i < day.size(); ++i) EXPECT_EQ(day[i], a + 90s * static_cast<int>(i));
  EXPECT_EQ(r.count(a, a + 24h), 960u);
  EXPECT_EQ(r.count(a + 1ns, a + 24h + 1ns), 960u);
  EXPECT_EQ(r.next_after(a + 100s), a + 180s);
  // "every 24h" stays 24 h of real time across the DST change; 09:00 local does not.
  const Rule daily = rule("every 24h", "Europe/Berlin", a);
  EXPECT_EQ(daily.next_after(a), a + 24h);
}

TEST(CronDst, BerlinSpringForwardAndFallBack) {
  // 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC). 02:30 does not exist: it runs once, at
  // 03:00 CEST; and every quarter of that missing hour is the same single instant.
  const Rule half = rule("30 2 * * *", "Europe/Berlin");
  EXPECT_EQ(half.next_after(utc(2026, 3, 28, 12)), utc(2026, 3, 29, 1));
  EXPECT_EQ(half.next_after(utc(2026, 3, 29, 1)), utc(2026, 3, 30, 0, 30));
  const Rule quarters = rule("*/15 2 * * *", "Europe/Berlin");
  EXPECT_EQ(after(quarters, utc(2026, 3, 28, 12), 2),
            (std::vector<TimePoint>{utc(2026, 3, 29, 1), utc(2026, 3, 30, 0)}));
  // 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00 UTC). 02:30 happens twice: it runs once, at
  // the first (00:30 UTC), not at the second (01:30 UTC), even when asked from between them.
  EXPECT_EQ(half.next_after(utc(2026, 10, 24, 12)), utc(2026, 10, 25, 0, 30));
  EXPECT_EQ(half.next_after(utc(2026, 10, 25, 0, 30)), utc(2026, 10, 26, 1, 30));
  EXPECT_EQ(half.next_after(utc(2026, 10, 25, 1, 10)), utc(2026, 10, 26, 1, 30));
  // Every minute through the repeated hour: each local minute once, in its first pass, then on.
  const Rule minutes = rule("* 2-3 * * *", "Europe/Berlin");
  EXPECT_EQ(minutes.next_after(utc(2026, 10, 25, 0, 59)), utc(2026, 10, 25, 1, 0) + 1h);
  EXPECT_EQ(minutes.count(utc(2026, 10, 25), utc(2026, 10, 25, 12)), 120u);
  // Asked from the second pass, the next is where the repeated hour ends (03:00 CET), not an
  // hour later (found by cron_fuzz: its seed berlin-fall-after-the-repeat).
  EXPECT_EQ(minutes.next_after(utc(2026, 10, 25, 1, 30)), utc(2026, 10, 25, 2));
  EXPECT_EQ(rule("* 3 * * *", "Europe/Berlin").next_after(utc(2026, 10, 25, 2) - 1ns),
            utc(2026, 10, 25, 2));
  EXPECT_EQ(rule("* 3 * * *", "Europe/Berlin").count(utc(2026, 10, 25, 2), utc(2026, 10, 25, 2, 5)),
            5u);
  // Australia/Lord_Howe moves by 30 minutes: on 2026-10-04 02:00 LHST (+10:30) becomes 02:30
  // LHDT (+11), so 02:00 runs at 02:30 local (15:30 UTC the day before).
  EXPECT_EQ(rule("0 2 * * *", "Australia/Lord_Howe").next_after(utc(2026, 10, 3)),
            utc(2026, 10, 3, 15, 30));
  // An empty zone is UTC.
  EXPECT_EQ(rule("@daily", "").next_after(utc(2026, 3, 29, 1)), utc(2026, 3, 30));
  // @daily at midnight local, which exists every day.
  EXPECT_EQ(rule("@daily", "Europe/Berlin").next_after(utc(2026, 3, 29)), utc(2026, 3, 29, 22));
}

TEST(OccurrenceJobId, UtcSecondsWithTheFractionOnlyWhenThere) {
  EXPECT_EQ(occurrence_job_id("nightly", utc(2026, 12, 1, 9)), "nightly@2026-12-01T09:00:00Z");
  EXPECT_EQ(occurrence_job_id("n", utc(2026, 12, 1, 9) + 250ms), "n@2026-12-01T09:00:00.250Z");
  EXPECT_EQ(occurrence_job_id("n", utc(2026, 12, 1, 9) + 7us), "n@2026-12-01T09:00:00.000007Z");
  EXPECT_EQ(occurrence_job_id("n", utc(2026, 12, 1, 9) + 1ns), "n@2026-12-01T09:00:00.000000001Z");
  EXPECT_EQ(occurrence_job_id("old", utc(1969, 12, 31, 23, 59, 59)), "old@1969-12-31T23:59:59Z");
  // The longest: '@', 19 characters, 10 of fraction and 'Z', within kMaxIdBytes.
  const std::string longest =
      occurrence_job_id(std::string(kMaxScheduleIdBytes, 'x'), TimePoint::max());
  EXPECT_EQ(longest.size(), kMaxScheduleIdBytes + 31);
  EXPECT_LE(longest.size(), kMaxIdBytes);
}

}  // namespace
}  // namespace delayq
