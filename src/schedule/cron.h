// Cron expressions on local wall-clock time: the field grammar and the search for the next
// matching local second. Knows nothing of time zones: src/schedule/rule.cc maps local times to
// instants (and there DST is handled).
//
// Grammar (docs/design.md, "The schedule module", has it with examples):
//   expression := [second] minute hour day-of-month month day-of-week   (fields split by blanks)
//   field      := item ("," item)*
//   item       := ("*" | value | value "-" value) ["/" step]
//   value      := a number, or for month JAN..DEC and for day-of-week SUN..SAT (any case)
// "a/n" is "a-<max>/n". Day-of-week 0 and 7 are both Sunday. A range must not go backwards
// ("5-2" is refused); a step is 1 to the field's maximum.
// Day-of-month and day-of-week: when both are restricted (neither is exactly "*"), a day matches
// if EITHER matches ("0 0 13 * FRI": the 13th of each month and every Friday), as in Vixie cron;
// when one is "*", only the other decides.
#pragma once

#include <date/date.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "delayq/error.h"

namespace delayq::schedule {

struct CronFields {
  uint64_t seconds = 0;                         // bit s for second s (0..59)
  uint64_t minutes = 0;                         // bit m (0..59)
  uint32_t hours = 0;                           // bit h (0..23)
  uint32_t days = 0;                            // bit d for day-of-month d (1..31)
  uint16_t months = 0;                          // bit m (1..12)
  uint8_t weekdays = 0;                         // bit w (0 = Sunday .. 6)
  bool days_any = false, weekdays_any = false;  // the field was exactly "*"

  bool day_matches(date::sys_days day) const;
};

// Parses a cron expression of 5 or 6 fields, or a macro (@daily...). It does not check that
// the expression ever fires (rule.cc does, with next_local()). Errors: invalid_argument, naming
// the field ("cron minute \"61\": 61 is out of range 0-59").
Result<CronFields> parse_cron(std::string_view text);

// The first local time at or after `from` that the fields match, searching at most
// kSearchDays days ahead; empty when none is found in them.
inline constexpr int kSearchDays = 9 * 366;  // Feb 29 can be 8 years apart (2096, 2104)
std::optional<date::local_seconds> next_local(const CronFields& f, date::local_seconds from);

// How many times the fields match in one whole day that matches (hours x minutes x seconds).
uint64_t matches_per_day(const CronFields& f);
// The first matching time of a matching day, as seconds after midnight.
std::chrono::seconds first_time_of_day(const CronFields& f);

}  // namespace delayq::schedule
