// A schedule's input rules (see spec_rules.h).
#include "schedule/spec_rules.h"

#include <fmt/format.h>

#include "common/bad_input.h"
#include "common/format.h"
#include "common/rules.h"

namespace delayq::schedule {

namespace {

}  // namespace

Result<Rule> check_schedule(const ScheduleSpec& s, const Limits& limits, TimePoint now) {
  if (s.id.empty()) return bad("schedule id is empty");
  if (s.id.size() > kMaxScheduleIdBytes)
    return bad(fmt::format("schedule id is {} bytes long; the limit is {}", s.id.size(),
                           kMaxScheduleIdBytes));
  if (s.id.find('@') != std::string::npos)
    return bad(
        fmt::format("schedule id \"{}\" contains '@', which its jobs' ids put between "
                    "the schedule id and the occurrence's instant",
                    s.id));
  Result<Rule> rule = Rule::parse(s.rule, s.zone, s.start.value_or(now));
  if (!rule) return rule.status();
  if (std::optional<Duration> every = rule->interval()) {
    if (*every < std::chrono::milliseconds(1))
      return rules::below_minimum("rule's interval", format_duration(*every),
                                  std::chrono::milliseconds(1));
    if (*every > limits.max_delay)
      return rules::beyond_max_delay("rule's interval", format_duration(*every), limits.max_delay);
  }
  if (!s.job.id.empty())
    return bad(
        "job.id must be empty: each occurrence's job is named by the schedule id and "
        "its instant");
  if (s.job.delay || s.job.due_at)
    return bad(
        "job.delay and job.due_at must be empty: an occurrence's job is due at the "
        "occurrence");
  // The rest as push() checks it, under the id an occurrence's job will have.
  JobSpec job = s.job;
  job.id = occurrence_job_id(s.id, now);
  if (Status st = rules::check_spec(job, limits, now); !st.ok()) return bad("job: " + st.message());
  if (s.start && s.end && *s.end <= *s.start)
    return bad(*s.end == *s.start
                   ? std::string("end equals start; it must be after it")
                   : "end must be after start; it is " +
                         format_duration(rules::distance(*s.end, *s.start)) + " before it");
  if (s.catch_up > ScheduleSpec::CatchUp::all) return bad("catch_up is not skip, one or all");
  if (s.catch_up_max < 1 || s.catch_up_max > kMaxCatchUp)
    return bad(fmt::format("catch_up_max is {}; give 1 to {}", s.catch_up_max, kMaxCatchUp));
  if (s.overlap > ScheduleSpec::Overlap::skip) return bad("overlap is not allow or skip");
  return rule;
}

}  // namespace delayq::schedule
