// Reading the members of a JSON object (a delayqd request) into typed values, with the refusals a
// client sees (docs/http-api.md): a member a route does not know is refused, naming the closest
// known one; every duration and time is range-checked against the queue's max_delay before it
// becomes a Duration or a TimePoint (common/rules words the refusals, as the library does), so
// that no value, however large, can wrap into a job due now.
#pragma once

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "delayq/job.h"
#include "wire/json.h"

namespace delayq::wire {

// What the readers check values against: the queue's own limits.
struct InputLimits {
  Duration max_delay = std::chrono::hours(24 * 3650);
  size_t max_body_bytes = size_t{1} << 20;  // a job's body
  // Named in the refusal of a job body over max_body_bytes: what the operator changes.
  std::string_view body_setting = "delayqd --max-job-bytes";
};

// Reads typed members of one request object. The first problem is kept (error()); later reads
// then return nothing. Member names in messages carry `prefix` ("retry.").
class Fields {
 public:
  Fields(const json::Value& obj, const InputLimits& limits, std::string prefix = {});

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  void fail_with(std::string message);

  // Refuses the first member that is not in `known`: `unknown field "dealy" (did you mean
  // "delay"?)`, or the list of known members when none is close. `where` names the object
  // ("/push", "retry (kind list)").
  void only(std::initializer_list<std::string_view> known, std::string_view where);

  bool has(std::string_view key) const { return get(key) != nullptr; }
  // A null member counts as absent: some clients serialise unset fields as null.
  const json::Value* get(std::string_view key) const;

  std::optional<std::string> string(std::string_view key, bool required = false);
  // A topic or id: trimmed of surrounding spaces (as ouqiang/delay-queue does).
  std::optional<std::string> name(std::string_view key, bool required);
  std::optional<int64_t> integer(std::string_view key, int64_t min, int64_t max);
  std::optional<double> number(std::string_view key, double min, double max);

  // A duration in seconds (`s_key`, fractions allowed) or whole milliseconds (`ms_key`); both at
  // once is refused. Checked against 0, `min_positive` (for a positive value) and max_delay
  // before conversion; `if_negative` is the hint of the refusals below 0 or the minimum ("use 0
  // for 'now'").
  std::optional<Duration> duration(std::string_view s_key, std::string_view ms_key,
                                   std::string_view if_negative = {},
                                   Duration min_positive = Duration::zero());
  // A unix time in whole milliseconds, at most max_delay after `now`.
  std::optional<TimePoint> time_ms(std::string_view key, TimePoint now);
  // The same in whole nanoseconds (exact: what the C++ client sends, delayq/http.h).
  std::optional<TimePoint> time_ns(std::string_view key, TimePoint now);

  // The full name of a member in messages: prefix + key.
  std::string full(std::string_view key) const { return prefix_ + std::string(key); }
  const InputLimits& limits() const { return limits_; }

 private:
  std::string type_error(std::string_view key, std::string_view want, const json::Value& got) const;

  const json::Value& obj_;
  const InputLimits& limits_;
  std::string prefix_;
  std::string error_;
};

// A counter member of an answer: its value, 0 when absent, not an integer or negative.
uint64_t counter_of(const json::Value& v, std::string_view key);
// A duration in (fractional) seconds, as answers carry durations.
double seconds_of(Duration d);

// The optimal-string-alignment distance (insertions, deletions, substitutions and swaps of two
// neighbours each count 1): "dealy" is 1 from "delay".
size_t edit_distance(std::string_view a, std::string_view b);

// The name in `known` closest to `typed`, when it is close enough to be what was meant: a typo,
// two letters swapped, a capital letter, or the name cut short ("due_at" for "due_at_ms");
// empty when none is. Names longer than 64 bytes are no typo of a known one. Fields::only()
// uses it for members, delayqd and the CLI for their flags ("did you mean").
std::string_view closest_name(std::string_view typed, std::span<const std::string_view> known);

// `s` in double quotes, cut to 64 bytes ("..." marks the cut): a name as a client wrote it, for
// a refusal; a hostile 4 MiB key must not come back whole.
std::string quoted(std::string_view s);

// `s` without the spaces, tabs and line breaks around it.
std::string_view trim(std::string_view s);

}  // namespace delayq::wire
