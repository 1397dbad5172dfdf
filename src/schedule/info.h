// What get_schedule() shows of a stored schedule, the same on every backend: its spec, pause,
// counters and next occurrences. live_jobs is left to the backend, which alone can tell which
// jobs still live.
#pragma once

#include "delayq/schedule.h"
#include "schedule/record.h"
#include "schedule/rule.h"

namespace delayq::schedule {

// Up to 5 next occurrences (fewer when the schedule ends); live_jobs empty.
ScheduleInfo describe(const StoredSchedule& s, const Rule& rule);

}  // namespace delayq::schedule
