// Instants for the schedule tests, written as UTC or as local time in a zone.
#pragma once

#include <date/tz.h>
#include <gtest/gtest.h>

#include <string_view>

#include "delayq/clock.h"
#include "schedule/rule.h"

namespace delayq::schedule_test {

inline TimePoint utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
  const date::sys_days day = date::year(y) / mo / d;
  return TimePoint(day.time_since_epoch() + std::chrono::hours(h) + std::chrono::minutes(mi) +
                   std::chrono::seconds(s));
}

// The rule, which the test expects to parse.
inline schedule::Rule rule(std::string_view text, std::string_view zone = "UTC",
                           TimePoint anchor = {}) {
  Result<schedule::Rule> r = schedule::Rule::parse(text, zone, anchor);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().message();
  if (!r.ok()) throw std::runtime_error("rule did not parse");
  return std::move(*r);
}

// The reference mapping of a local time to its instant, from the tz library's description of
// that local time: once -> it; twice -> the earlier; never (a gap) -> where the gap ends.
inline TimePoint reference_instant(const date::time_zone& z, date::local_seconds l) {
  const date::local_info i = z.get_info(l);
  if (i.result == date::local_info::nonexistent) return TimePoint(i.first.end.time_since_epoch());
  if (i.result == date::local_info::ambiguous)
    return TimePoint(l.time_since_epoch() - std::max(i.first.offset, i.second.offset));
  return TimePoint(l.time_since_epoch() - i.first.offset);
}

}  // namespace delayq::schedule_test
