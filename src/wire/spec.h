// The JSON form of a job to push: a JobSpec and its RetryPolicy, as /push and /push_batch take
// them (docs/http-api.md), both directions. Reading applies delayqd's input rules
// (wire/fields.h): unknown members are refused, durations and times are range-checked before any
// arithmetic, a body is held to the queue's max_job_bytes.
#pragma once

#include <string>
#include <string_view>

#include "delayq/error.h"
#include "delayq/job.h"
#include "wire/fields.h"
#include "wire/json.h"

namespace delayq::wire {

// One job as /push takes it: durations in whole milliseconds ("delay_ms") where they are whole
// milliseconds, else in seconds ("delay": 0.0005); a due_at rounded up to the millisecond, so
// that a job is never due earlier than asked.
void write_spec(json::Writer& w, const JobSpec& spec);
// The same with a due_at as it is ("due_at_ns", unix nanoseconds): the C++ client of
// delayq/http.h.
void write_spec_exact(json::Writer& w, const JobSpec& spec);

// A retry policy as /push takes it ({"kind":"fixed","delay_ms":...,"max_attempts":...}, see
// docs/http-api.md): durations in whole milliseconds where they are whole milliseconds, else in
// seconds. /get and /dead/list show a job's policy in the same form.
void write_retry(json::Writer& w, const RetryPolicy& p);

// A duration as delayqd takes it: `name`_ms when it is whole milliseconds (exact), else `name`
// in seconds ("delay_ms": 1500, "delay": 0.0005).
void write_duration(json::Writer& w, std::string_view name, Duration d);

// One job of /push or /push_batch. Errors: invalid_argument, the message naming the field.
Status read_spec(const json::Value& v, JobSpec& spec, const InputLimits& limits);

// Why `topic` cannot be pushed through delayqd, beyond the queue's own rules: /pop splits its
// "topic" member on commas (as ouqiang/delay-queue does), so a name with a comma could never be
// popped by that name. Empty when fine.
std::string topic_name_problem(std::string_view topic);

}  // namespace delayq::wire
