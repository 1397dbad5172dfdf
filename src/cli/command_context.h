// What the delayq CLI's commands share (commands.cc, flow_commands.cc): the context a command
// runs in, how a refusal is reported (stderr, and with --json a JSON document on stdout), and a
// job in the CLI's JSON and text forms.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

#include "cli/invocation.h"
#include "delayq/error.h"
#include "delayq/job.h"
#include "wire/json.h"

namespace delayq::cli {

struct Context {
  Invocation& inv;
  const CommandInfo& command;
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
  std::string what;  // "get o-42": names the call in error messages
};

// Where a refusal goes: the line on stderr always, and with --json one JSON document on stdout
// too, so that a script piping stdout to jq gets a document it can test (.error) instead of
// empty input: {"error":"not_found","message":"no job with id ..."}. "error" is the Errc's
// name (as delayqd's answers have it), or "usage" for bad usage (exit 2).
struct Streams {
  std::ostream& out;
  std::ostream& err;
  bool json;
};

void json_error(const Streams& io, std::string_view error, const std::string& message);
// The call failed: exit 1.
int failed(Context& c, const Status& status);
// Bad usage: exit 2.
int usage(const Streams& io, const UsageError& u);

int64_t unix_ms(TimePoint t);
int64_t ms(Duration d);
// A job as the CLI's --json shows it (get, dead list, ls).
void write_job(wire::json::Writer& w, const JobInfo& j);
// "2026-11-21T14:03:05+01:00 (in 29m58s)".
std::string when(TimePoint t, TimePoint now);

}  // namespace delayq::cli
