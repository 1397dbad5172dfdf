// Where a replaced schedule goes on (Queue::schedule of an id that exists), one rule for the
// engine (src/engine/engine_schedules.cc) and Redis (src/redis/redis_queue_schedules.cc).
#pragma once

#include <optional>

#include "delayq/schedule.h"
#include "schedule/planner.h"
#include "schedule/rule.h"

namespace delayq::schedule {

// Where a schedule replaced at `now` goes on, `was` its state before: its new rule's first
// occurrence from now (or from `anchor`, its start, if later); what the old rule missed is not the
// new rule's. Never at or before the occurrence fired last, which has its job already (a
// replacement at that very instant would fire it again). Empty at or after the end.
std::optional<TimePoint> replacement_next(const Rule& rule, const ScheduleSpec& spec,
                                          const ScheduleState& was, TimePoint now,
                                          TimePoint anchor);

}  // namespace delayq::schedule
