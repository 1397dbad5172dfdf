// The JSON form of the queue's Stats (/stats's data), both directions: the totals by name
// ("pushed", ... "released"), the lateness buckets' bounds ("lateness_bounds_s"), then "topics",
// each topic's jobs per state and its timing ("due", "oldest_ready_s", "lateness"), then "flow",
// every limited topic's limits and counters (wire/flow.h), as docs/http-api.md shows.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "delayq/job.h"
#include "wire/json.h"

namespace delayq::wire {

// A page of topics: those whose names come after `after` (in byte order; "" is before all), at
// most `limit` of them.
struct TopicPage {
  std::string_view after;
  size_t limit = std::numeric_limits<size_t>::max();
};
// Whether a page left topics out, and the last one it listed (the next page's `after`).
struct PageCut {
  bool truncated = false;
  std::string last;
};

// One object. `more` are counters the caller adds after the queue's own (delayqd: its pops
// waiting now), before "topics". With a `page`, "topics" holds only its topics, and
// "truncated" (and, when true, "next_after") follow at the end.
PageCut write_stats(json::Writer& w, const Stats& s,
                    std::initializer_list<std::pair<std::string_view, uint64_t>> more = {},
                    const TopicPage* page = nullptr);
// One topic's timing as members of its object ("due", "oldest_ready_s", "lateness"), as
// write_stats writes them (the CLI's --json uses the same form).
void write_timing(json::Writer& w, const TopicTiming& t);
// The lateness buckets' upper bounds in seconds, as an array.
void write_lateness_bounds(json::Writer& w);
// Reads what write_stats wrote; lenient as read_job is (a missing counter reads 0).
Stats read_stats(const json::Value& v);

}  // namespace delayq::wire
