// The delayq CLI's schedule commands (docs/cli.md, "schedule"): `schedule add` (Queue::schedule),
// `schedule get`, `schedule ls` (a page of list_schedules(), or every page with --all),
// `schedule pause`, `schedule resume` and `schedule rm`. Their flags are read once, before the
// target is opened (check_schedule_values): every number range-checked before it is converted,
// and the schedule through the library's own rule (schedule::check_schedule), so that a bad
// rule, zone or id exits 2 without a store opened or a request sent. The flags speak the words
// of delayqd's /schedules/set: --rule, --zone, --start, --end, --catch-up, --catch-up-max,
// --overlap, and the job's --topic, --body, --ttr, --retry, --priority as push takes them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/command_context.h"
#include "delayq/queue.h"
#include "delayq/schedule.h"

namespace delayq::cli {

// What the schedule commands were asked, as check_schedule_values read it.
struct ScheduleArgs {
  ScheduleSpec spec;  // schedule add
  size_t limit = 100;  // schedule ls
  std::string cursor;
  bool all = false;
};

// Whether `c.inv.name` is one of these commands.
bool is_schedule_command(const Context& c);
// Their names, for the usage lines of a bare `delayq schedule`.
std::vector<const char*> schedule_command_names();
// The flags of these commands read into `args`; nothing when they are fine. Reads the body
// (stdin for --body-file -) once.
std::optional<UsageError> check_schedule_values(Context& c, ScheduleArgs& args);
// Runs the command (is_schedule_command), once check_schedule_values passed.
int run_schedule_command(Context& c, Queue& q, const ScheduleArgs& args);

}  // namespace delayq::cli
