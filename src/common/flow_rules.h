// The input rules of flow control and browsing (Queue::set_topic_limits, Queue::list_jobs): one
// set of words for every backend, the HTTP daemon and the CLI.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "delayq/error.h"
#include "delayq/job.h"

namespace delayq::rules {

inline constexpr uint32_t kMaxBurst = 1'000'000;
inline constexpr size_t kMaxListLimit = 1000;

// ok, or invalid_argument saying which field is wrong: a topic push() would refuse, a rate with
// count 0, a period that is not positive or beyond `max_delay`, a burst outside 1..1 000 000,
// max_in_flight 0, or neither a rate nor max_in_flight.
Status check_topic_limits(std::string_view topic, const TopicLimits& l, Duration max_delay);
// ok, or invalid_argument: a page holds 1..1000 jobs.
Status check_list_limit(size_t limit);
// "delayed", "ready", "reserved", "dead" (what to_string(JobState) writes); nullopt otherwise.
std::optional<JobState> parse_state(std::string_view text);
// The refusal of a call a backend does not offer.
Status unsupported(std::string_view call);

}  // namespace delayq::rules
