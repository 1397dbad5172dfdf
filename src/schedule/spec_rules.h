// The input rules of a schedule (delayq/schedule.h's ScheduleSpec), one set of words for every
// backend, delayqd and the CLI, in the style of common/rules.h.
#pragma once

#include "delayq/error.h"
#include "delayq/limits.h"
#include "delayq/schedule.h"
#include "schedule/rule.h"

namespace delayq::schedule {

inline constexpr uint32_t kMaxCatchUp = 10'000;

// Everything about `spec` that needs no queue state: the id (1 to kMaxScheduleIdBytes bytes, no
// '@'), the rule and zone (Rule::parse), an "every" interval within max_delay, the job template
// (as push() checks a job, but its id, delay and due_at empty), end after start, catch_up_max 1
// to kMaxCatchUp and known policies. On success, the parsed rule, anchored at `start` or, without
// one, at `now`. Errors: invalid_argument, naming the field.
Result<Rule> check_schedule(const ScheduleSpec& spec, const Limits& limits, TimePoint now);

}  // namespace delayq::schedule
