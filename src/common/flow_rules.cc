// The input rules of flow control and browsing (see flow_rules.h), and Queue's default bodies
// of the calls a backend may not offer.
#include "common/flow_rules.h"

#include <fmt/format.h>

#include "common/bad_input.h"
#include "common/format.h"
#include "common/rules.h"
#include "delayq/queue.h"

namespace delayq {
namespace rules {

Status check_topic_limits(std::string_view topic, const TopicLimits& l, Duration max_delay) {
  if (Status st = check_topic(topic); !st.ok()) return st;
  if (!l.rate && !l.max_in_flight)
    return bad("limits: set a rate or max_in_flight (to remove a topic's limits, clear them)");
  if (l.rate) {
    const TopicLimits::Rate& r = *l.rate;
    if (r.count == 0)
      return bad("limits: rate count must be at least 1 (to hand out nothing, pause the topic)");
    if (r.per <= Duration::zero())
      return bad("limits: rate period must be positive, got " + format_duration(r.per));
    if (r.per > max_delay)
      return bad("limits: rate period " + format_duration(r.per) + " exceeds max_delay (" +
                 format_duration(max_delay) + ")");
    if (r.burst < 1 || r.burst > kMaxBurst)
      return bad(fmt::format("limits: burst must be between 1 and {}, got {}", kMaxBurst, r.burst));
  }
  if (l.max_in_flight && *l.max_in_flight == 0)
    return bad("limits: max_in_flight must be at least 1 (to hand out nothing, pause the topic)");
  return {};
}

Status check_list_limit(size_t limit) {
  if (limit < 1 || limit > kMaxListLimit)
    return bad(fmt::format("limit must be between 1 and {} jobs per page, got {}", kMaxListLimit,
                           limit));
  return {};
}

std::optional<JobState> parse_state(std::string_view text) {
  for (JobState s : {JobState::delayed, JobState::ready, JobState::reserved, JobState::dead})
    if (text == to_string(s)) return s;
  return std::nullopt;
}

Status unsupported(std::string_view call) {
  return bad(fmt::format("{} is not supported by this backend yet", call));
}

}  // namespace rules

Status Queue::set_topic_limits(std::string_view, const TopicLimits&) {
  return rules::unsupported("set_topic_limits");
}
Status Queue::clear_topic_limits(std::string_view) {
  return rules::unsupported("clear_topic_limits");
}
Result<JobPage> Queue::list_jobs(std::string_view, JobState, size_t, std::string_view) {
  return rules::unsupported("list_jobs");
}
Status Queue::schedule(const ScheduleSpec&) {
  return rules::unsupported("schedule");
}
Status Queue::unschedule(std::string_view) {
  return rules::unsupported("unschedule");
}
Result<ScheduleInfo> Queue::get_schedule(std::string_view) {
  return rules::unsupported("get_schedule");
}
Result<SchedulePage> Queue::list_schedules(size_t, std::string_view) {
  return rules::unsupported("list_schedules");
}
Status Queue::pause_schedule(std::string_view) {
  return rules::unsupported("pause_schedule");
}
Status Queue::resume_schedule(std::string_view) {
  return rules::unsupported("resume_schedule");
}

}  // namespace delayq
