// Reading what people type into the delayq command-line tool: durations ("90s", "1h30m"), points
// in time (RFC 3339 or unix seconds), retry policies ("list:2m,10m,1h"), counts. Kept apart from
// the commands so that tests can check them without running the binary; human_text.h shows values
// back to people.
#pragma once

#include <string>
#include <string_view>

#include "delayq/clock.h"
#include "delayq/error.h"
#include "delayq/job.h"

namespace delayq::cli {

// "1500ms", "90s", "30m", "2h", "3d", or several of them in a row ("1h30m", "2d12h"); "0" alone
// is zero. The longer spellings people type work too: msec, sec, secs, second(s), min, mins,
// minute(s), hr, hrs, hour(s), day(s) ("5min", "2hrs", "1hr30min"). Lower case. A number may
// have up to 9 digits after a point ("1.5h", "0.5s"), exact to the nanosecond; it is checked
// against 36500 days before it is converted. A bare number other than 0 is refused, the message
// listing the units: "90" could mean seconds or milliseconds.
// Errors: invalid_argument, naming what is wrong (a negative duration is called that).
Result<Duration> parse_duration(std::string_view text);

// An instant: RFC 3339 ("2026-11-21T14:03:05Z", "2026-11-21T14:03:05.250+01:00"; a space may
// stand for the 'T') or unix seconds ("1795288348", "1795288348.5").
// Errors: invalid_argument.
Result<TimePoint> parse_time(std::string_view text);

// "list:2m,10m,1h"            retry after each delay in turn (attempts = delays + 1)
// "fixed:30s:5"               retry after 30s, at most 5 attempts in all
// "exp:1s:2:1h:10[:0.2]"      base, factor, cap, max attempts, optional jitter (0..1)
// Errors: invalid_argument (also when RetryPolicy::validate() refuses the result).
Result<RetryPolicy> parse_retry(std::string_view text);

// A whole number in [min, max]. Errors: invalid_argument.
Result<uint64_t> parse_count(std::string_view text, uint64_t min, uint64_t max);

// A rate as `limits set --rate` takes it: COUNT/PERIOD, the period a duration as above, its 1
// optional ("50/1s", "1000/1min", "5/s", "3/250ms"); burst 1. The count is range-checked
// (0..4294967295) before it is converted; what a rate must be beyond that (a count of at least
// 1, a positive period) is the library's rule (rules::check_topic_limits), checked by the caller.
// Errors: invalid_argument (a negative rate is called that).
Result<TopicLimits::Rate> parse_rate(std::string_view text);

}  // namespace delayq::cli
