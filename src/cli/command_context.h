// What the delayq CLI's commands share (commands.cc, flow_commands.cc, schedule_commands.cc): the
// context a command runs in, how a refusal is reported (stderr, and with --json a JSON document
// on stdout), the flags that several commands read alike, and a job in the CLI's JSON and text
// forms.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

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

// Reads --<flag> with `parse` into `into` when it is given; a bad value is a UsageError that
// names the flag.
template <typename Parse, typename Into>
std::optional<UsageError> read_flag(Context& c, const std::string& flag, Parse parse, Into& into) {
  const auto it = c.inv.flags.find(flag);
  if (it == c.inv.flags.end()) return std::nullopt;
  auto value = parse(it->second);
  if (!value) return UsageError{"--" + flag + ": " + value.status().message(), &c.command};
  into = std::move(*value);
  return std::nullopt;
}
// A job's body from --body TEXT or --body-file FILE ("-": stdin, read here, once), into `body`
// when either is given (push, schedule add).
std::optional<UsageError> read_body(Context& c, std::string& body);

// A listing's pages (ls, schedule ls): `page(cursor, listed)` asks the target for the page at
// `cursor` and prints it (with --json its items, each after a comma but the first, into the
// array the caller opened; else a table, with its header when `listed` is 0), answering how
// many items it held and the cursor after it. Called from `cursor` on, once, or with `all`
// until the last page. With --json the document is closed here: "cursor" (null after the last
// page) and, when a page failed, "error" and "message" beside the cursor to resume from. On
// return `cursor` is where the listing ended and `listed` the items printed. Exit 0, or 1 when
// a page failed.
struct ShownPage {
  size_t items = 0;
  std::string cursor;
};
int follow_pages(Context& c, std::string& cursor, bool all, size_t& listed,
                 const std::function<Result<ShownPage>(const std::string&, size_t)>& page);

int64_t unix_ms(TimePoint t);
int64_t ms(Duration d);
// A job as the CLI's --json shows it (get, dead list, ls).
void write_job(wire::json::Writer& w, const JobInfo& j);
// "2026-11-21T14:03:05+01:00 (in 29m58s)".
std::string when(TimePoint t, TimePoint now);

}  // namespace delayq::cli
