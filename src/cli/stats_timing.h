// The timing part of `delayq stats` (TopicTiming, include/delayq/job.h): for people, a table of
// what fires when with the oldest ready job, and a table of lateness (deliveries, p50 and p99 as
// the bounds of their buckets); for --json, each topic's timing as /stats writes it.
#pragma once

#include <string>

#include "delayq/job.h"
#include "wire/json.h"

namespace delayq::cli {

// The two tables, or "" when no topic has timing.
std::string timing_tables(const Stats& st);
// "timing": {topic: {"due", "oldest_ready_s", "lateness"}}, "lateness_bounds_s": [...].
void write_timing_json(wire::json::Writer& w, const Stats& st);

}  // namespace delayq::cli
