// What a schedule does when its time comes, as a pure function of its rule, its spec, its state
// and `now`: which occurrences push a job (each under occurrence_job_id()), which the catch-up
// and overlap policies pass over, and the next occurrence to wait for. Backends store the state
// and act on the plan in one atomic step (a journal write, a Redis script); nothing here does
// I/O or reads a clock.
//
// On time and missed. An occurrence at instant o, handled at `now` (o <= now), is
//  - on time when now - o <= tick: it fires, whatever the catch-up policy. `tick` is how late the
//    backend may handle an occurrence in normal running (its wake-up granularity); an
//    occurrence handled exactly at its instant (now == o) is always on time, even with tick 0;
//  - missed when now - o > tick: the queue was down or the schedule paused past it. The missed
//    occurrences go through ScheduleSpec::catch_up: skip (none fire), one (the latest fires),
//    all (the latest catch_up_max fire, oldest first). The others count as skipped_catch_up.
// Overlap. The occurrences chosen above, oldest first, then go through ScheduleSpec::overlap:
// with allow, each pushes a job. With skip, none does while the previous occurrence's job still
// lives (`previous_live`); otherwise the oldest pushes one, and the rest of this plan are skipped
// too, since that job lives once pushed. Both kinds of skip are counted, never fired later.
// End. Occurrences at or after ScheduleSpec::end never fire and are not counted; the schedule's
// next occurrence is then empty (it has ended).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "delayq/schedule.h"
#include "schedule/rule.h"

namespace delayq::schedule {

// What a backend keeps of a schedule between plans (ScheduleInfo shows it).
struct ScheduleState {
  std::optional<TimePoint> next{};  // the next occurrence not yet handled; empty once ended
  std::optional<TimePoint> last_fired{};
  uint64_t fired = 0, skipped_overlap = 0, skipped_catch_up = 0;
  bool operator==(const ScheduleState&) const = default;
};

struct Plan {
  std::vector<TimePoint> fire{};  // each pushes one job, due at its instant; oldest first
  uint64_t skipped_catch_up = 0, skipped_overlap = 0;
  std::optional<TimePoint> next{};  // the state's next occurrence after this plan
};

// A new schedule's first occurrence: the first at or after its start (or `created`, without a
// start), empty when that is at or after its end.
std::optional<TimePoint> first_occurrence(const Rule& rule, const ScheduleSpec& spec,
                                          TimePoint created);

// What to do at `now` (see the top). Nothing when the state's next occurrence is after `now`.
Plan plan(const Rule& rule, const ScheduleSpec& spec, const ScheduleState& state, TimePoint now,
          Duration tick, bool previous_live);

// The state after acting on `plan`.
void apply(ScheduleState& state, const Plan& plan);

}  // namespace delayq::schedule
