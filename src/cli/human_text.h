// Showing values to people in the delayq command-line tool: times (local, or UTC for JSON),
// distances in time ("in 29m58s"), durations, and bodies made safe for a terminal. The
// counterpart of parse.h; tests check them without running the binary.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "delayq/clock.h"
#include "delayq/job.h"

namespace delayq::cli {

// "2026-11-21T14:03:05+01:00" in the local time zone (TZ), with ".250" when the instant has
// milliseconds.
std::string format_local_time(TimePoint t);
// "2026-11-21T13:03:05.250Z": the same in UTC, for JSON output.
std::string format_utc_time(TimePoint t);
// How far `t` is from `now`, for people: "in 29m58s", "3s ago", "in 250ms", "now". At most the
// two largest units ("in 2d3h"), so that the text stays short.
std::string format_relative(TimePoint t, TimePoint now);
// A duration for people: "30s", "1h30m", "1500ms", "0s".
std::string format_span(Duration d);
// A retry policy as --retry takes it (parse.h): "list:2m,10m,1h", "fixed:30s:5",
// "exp:1s:2:1h:10" (":0.2" when it has a jitter). A list whose max_attempts is not its delays + 1
// (a policy made through the library) adds "(N attempts)".
std::string format_retry(const RetryPolicy& p);

// A body for a terminal: valid UTF-8 text without control characters is shown as it is; other
// bytes are escaped (\n, \t, \r, \\, \xNN) so that a table stays one line per row and binary
// bodies cannot send escape sequences to the terminal. With max_chars > 0, cut to that many
// characters and marked with "...".
std::string printable(std::string_view body, size_t max_chars = 0);

// Rows as a text table: columns as wide as their widest cell (in characters, not bytes), two
// spaces apart; the columns marked in `right` right-aligned (numbers).
std::string table(const std::vector<std::vector<std::string>>& rows,
                  const std::vector<bool>& right);

}  // namespace delayq::cli
