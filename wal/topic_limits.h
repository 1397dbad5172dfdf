// The limited topics (Queue::set_topic_limits) in the journal: one key per limited topic in
// family "meta", "limits/<topic>", its value the limits (version 1, 22 bytes, little-endian):
//   u8 version 1, u8 flags (bit 0: a rate; bit 1: max_in_flight), u32 rate count,
//   i64 rate period in ns, u32 burst, u32 max_in_flight (fields of an absent part are 0).
// Clearing the limits deletes the key. Written with the pipeline's groups, in call order
// (commit_pipeline.h); read once at open. The bucket's tokens are not kept: after a restart it
// starts full.
//
// As with the paused topics (paused.h), an older delayq reads only the keys of "meta" it knows:
// it opens such a store and runs the topics unlimited, and the keys stay for a newer build.
// Nothing is misread, so the format version stays (docs/journal-format.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "delayq/error.h"
#include "delayq/job.h"
#include "wal/database.h"

namespace delayq::wal {

inline constexpr char kLimitsPrefix[] = "limits/";
inline constexpr uint8_t kLimitsVersion = 1;

std::string limits_key(std::string_view topic);
std::string encode_limits(const TopicLimits& limits);
// The limits a value holds. Errors: corrupt, saying what is wrong (a length, version or flag
// it does not know, or a field no check_topic_limits() would have let through).
Result<TopicLimits> decode_limits(std::string_view bytes);

// The topics stored as limited, with their limits, in key order. An unreadable value is damage:
// given to `on_damage` (the topic then runs unlimited if that returns ok).
// Errors: corrupt (on_damage's), io_error.
Result<std::vector<std::pair<std::string, TopicLimits>>> read_limits(
    Database& d, const std::function<Status(const Status&)>& on_damage);

}  // namespace delayq::wal
