// A schedule's rule, parsed once: when its occurrences fall (ScheduleSpec::rule and ::zone,
// delayq/schedule.h). Pure computation on instants; the time zone is looked up in the system's
// tz database when the rule is parsed, never afterwards.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "delayq/clock.h"
#include "delayq/error.h"

namespace delayq::schedule {

class Rule {
 public:
  // Parses `rule` ("every 90s", a cron expression, "@daily") read in `zone` (IANA name; empty
  // means UTC). `anchor`: the first occurrence of an "every" rule (the schedule's start, or its
  // creation); cron rules ignore it.
  // Errors: invalid_argument, with a message naming what is wrong (an unknown zone, a cron field
  // out of range, a rule that never fires, an interval of zero).
  static Result<Rule> parse(std::string_view rule, std::string_view zone, TimePoint anchor);

  // The first occurrence strictly after `t`; empty when there is none that a TimePoint holds
  // (nanoseconds in an int64: until April 2262).
  std::optional<TimePoint> next_after(TimePoint t) const;
  // The first occurrence at or after `t`.
  std::optional<TimePoint> next_at_or_after(TimePoint t) const;
  // How many occurrences fall in [from, to). Cheap over long spans (arithmetic for "every"
  // rules, a step per local day for cron rules), for counting what a downtime passed over.
  uint64_t count(TimePoint from, TimePoint to) const;

  // "every" rules: the interval; cron rules: empty.
  std::optional<Duration> interval() const;

  Rule(Rule&&) noexcept;
  Rule& operator=(Rule&&) noexcept;
  Rule(const Rule&);
  Rule& operator=(const Rule&);
  ~Rule();

  struct Impl;

 private:
  explicit Rule(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace delayq::schedule
