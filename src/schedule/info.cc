#include "schedule/info.h"

namespace delayq::schedule {

ScheduleInfo describe(const StoredSchedule& s, const Rule& rule) {
  ScheduleInfo info;
  info.spec = s.spec;
  info.paused = s.paused;
  info.last_fired = s.state.last_fired;
  info.fired = s.state.fired;
  info.skipped_overlap = s.state.skipped_overlap;
  info.skipped_catch_up = s.state.skipped_catch_up;
  for (std::optional<TimePoint> o = s.state.next;
       o && info.next.size() < 5 && (!s.spec.end || *o < *s.spec.end); o = rule.next_after(*o))
    info.next.push_back(*o);
  return info;
}

}  // namespace delayq::schedule
