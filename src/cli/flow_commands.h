// The delayq CLI's commands of flow control and browsing (docs/cli.md): `ls` (a page of a topic's
// jobs in one state, or every page with --all), `limits set`, `limits clear`, and `limits` (the
// limited topics from stats). Their flags are checked before the target is opened
// (check_flow_values), every number range-checked before it is converted, and a limit through
// the library's own rule (rules::check_topic_limits).
#pragma once

#include <optional>
#include <string>

#include "cli/command_context.h"
#include "delayq/queue.h"

namespace delayq::cli {

// Whether `c.inv.name` is one of these commands.
bool is_flow_command(const Context& c);
// The flags of these commands checked; nothing when they are fine.
std::optional<UsageError> check_flow_values(Context& c);
// --priority for push: the priority, or the refusal that names the flag.
Result<uint32_t> parse_priority_flag(std::string_view text);
// What `stats` adds to a limited topic's name: " (limited: 50/1s, 4 at once, 3 in flight)".
std::string flow_note(const TopicFlow& f);
// Runs the command (is_flow_command), once check_flow_values passed.
int run_flow_command(Context& c, Queue& q);

}  // namespace delayq::cli
