// The JSON form of what the queue hands out and shows: a Delivery (a /pop answer's data) and a
// JobInfo (/get, /dead/list), both directions, as docs/http-api.md documents them. Times travel
// as unix milliseconds (due_ms, lease_deadline_ms) and, exactly, nanoseconds (due_ns,
// lease_deadline_ns, and for a dead job dead_since_ms/_ns), durations as milliseconds (ttr_ms),
// the priority as a number (0..4294967295, smaller first; 1024 when unset); a job
// also carries the fields ouqiang/delay-queue clients read (delay: the due time in unix seconds,
// ttr: seconds, rounded up) and its retry policy in the form /push takes (wire/spec.h).
#pragma once

#include <cstdint>
#include <string_view>

#include "delayq/clock.h"
#include "delayq/error.h"
#include "delayq/job.h"
#include "wire/json.h"

namespace delayq::wire {

int64_t to_unix_ms(TimePoint t);
TimePoint from_unix_ms(int64_t ms);
int64_t to_ms(Duration d);  // truncated to whole milliseconds

// An instant as two members: `name`_ms (unix milliseconds, rounded down, as ouqiang-era clients
// read it) and `name`_ns (unix nanoseconds, exact: what the C++ client reads back).
void write_time(json::Writer& w, std::string_view name, TimePoint t);
// What write_time wrote: `name`_ns when present, else `name`_ms.
TimePoint read_time(const json::Value& v, std::string_view name);

void write_job(json::Writer& w, const JobInfo& j);
// Reads what write_job wrote. Lenient, for answers from a delayqd the caller trusts: a member
// that is missing or of another type reads as empty or 0 (a state it does not know as delayed).
// A job without "retry" (from a delayqd that did not show the policy) reads with
// retry.max_attempts 0: the policy is not known.
JobInfo read_job(const json::Value& v);

void write_delivery(json::Writer& w, const Delivery& d);
// Reads what write_delivery wrote. Errors: invalid_argument when `v` is not an object with a
// string "id" and a "token" that Token::parse takes (e.g. data null: no job came); the other
// members are read as read_job reads them.
Result<Delivery> read_delivery(const json::Value& v);

}  // namespace delayq::wire
