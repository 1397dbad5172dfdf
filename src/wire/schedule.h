// The JSON form of schedules (issue 23), both directions: a /schedules/set body as delayqd reads
// it and the C++ client writes it, and a schedule as /schedules/get and /schedules/list answer it
// (docs/http-api.md).
//
//   set   {"id": "nightly", "rule": "0 9 * * *", "zone": "Europe/Berlin",
//          "job": {<a job as /push takes it, without id, delay and due_at>},
//          "start_ms": ..., "end_ms": ..., "catch_up": "skip" | "one" | "all",
//          "catch_up_max": 100, "overlap": "allow" | "skip"}
//   info  the same members (start_ms and end_ms only when set), and "paused", "last_fired"
//         ({"ms": unix ms, "utc": "2026-12-01T09:00:00Z"} or null), "next" (a list of the same),
//         "live_jobs" (ids), "fired", "skipped_overlap", "skipped_catch_up"
//   page  {"schedules": [<info>, ...], "cursor": "..." or null on the last page}
#pragma once

#include <string>

#include "delayq/error.h"
#include "delayq/schedule.h"
#include "wire/fields.h"
#include "wire/json.h"

namespace delayq::wire {

void write_schedule_spec(json::Writer& w, const ScheduleSpec& s);
// A /schedules/set body, read with delayqd's input rules: unknown members, types and ranges are
// refused naming the member (the job's as "job.<member>") before anything is narrowed; times
// are unix milliseconds of 0 to max_delay from now. What needs the rule parsed (the zone, the
// cron fields, end after start) is the queue's to refuse. Errors: invalid_argument.
Status read_schedule_spec(const json::Value& body, const InputLimits& limits, ScheduleSpec& out);

void write_schedule_info(json::Writer& w, const ScheduleInfo& info);
// Reads what write_schedule_info wrote, leniently (an answer from a delayqd the caller trusts).
ScheduleInfo read_schedule_info(const json::Value& v);

void write_schedule_page(json::Writer& w, const SchedulePage& page);
SchedulePage read_schedule_page(const json::Value& v);

// An instant as schedules show it: {"ms": unix milliseconds (rounded down), "utc": ISO 8601}.
void write_instant(json::Writer& w, TimePoint t);
// ISO 8601 in UTC, "2026-12-01T09:00:00Z" (fractions only when the instant has them).
std::string utc_text(TimePoint t);

}  // namespace delayq::wire
