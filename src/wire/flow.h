// The JSON form of flow control and browsing (issue 22), both directions: a topic's limits as
// /limits/set takes them and /stats shows them, /stats's "flow" member, and a /jobs/list page
// (docs/http-api.md).
//
//   limits  {"rate": {"count": 50, "per_ms": 1000, "burst": 10}, "max_in_flight": 4}
//           (a member is absent when that limit is not set; a period that is not whole
//           milliseconds is written as "per" in seconds, as delays are)
//   flow    {"<topic>": {"limits": {...}, "tokens": 7, "in_flight": 2, "throttled_rate": 0,
//                        "throttled_concurrency": 3}, ...}
//   page    {"jobs": [<job as /get shows it>, ...], "cursor": "..." or null on the last page}
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "delayq/error.h"
#include "delayq/job.h"
#include "wire/fields.h"
#include "wire/json.h"

namespace delayq::wire {

void write_limits(json::Writer& w, const TopicLimits& l);
// A /limits/set body: {"topic": ..., and the members write_limits writes}.
void write_limits_request(json::Writer& w, std::string_view topic, const TopicLimits& l);
// A /limits/set body, {"topic", "rate", "max_in_flight"}, read with delayqd's input rules: an
// unknown member, a wrong type, a negative or too large number is refused naming the member
// before anything is narrowed; then rules::check_topic_limits (common/flow_rules.h) against
// `limits.max_delay`, so that the daemon refuses with the library's words. A rate without
// "burst" has burst 1. Errors: invalid_argument.
Status read_limits_request(const json::Value& body, const InputLimits& limits, std::string& topic,
                           TopicLimits& out);
// Reads what write_limits wrote, leniently (an answer from a delayqd the caller trusts): a
// member of another type or out of range reads as unset.
TopicLimits read_limits(const json::Value& v);

void write_flow(json::Writer& w, const std::map<std::string, TopicFlow>& flow);
std::map<std::string, TopicFlow> read_flow(const json::Value& v);

void write_page(json::Writer& w, const JobPage& page);
// "cursor": the cursor, or null when it is empty (the last page); into an open object.
void write_cursor(json::Writer& w, const std::string& cursor);
// Reads what write_page wrote; a missing or null cursor reads as empty (the last page).
JobPage read_page(const json::Value& v);

}  // namespace delayq::wire
