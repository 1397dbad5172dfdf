// Flow control in delayq-bench: W1's --priorities (each delivery's place in the hand-out order,
// checked for inversions) and the rate workload (a topic limited by a token bucket).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "delayq/job.h"

namespace delayq::bench {

struct Args;

// Jobs of a run with priorities get this ttr, so that a delivery's hand-out instant on the
// queue's own clock is its lease deadline minus it.
inline constexpr Duration kHandoutTtr = std::chrono::seconds(60);
// A delivery counts as an inversion when a job handed out after it was more urgent and had been
// due for longer than this when it was handed out (the margin covers a job whose push was still
// in flight at that instant).
inline constexpr std::chrono::milliseconds kInversionMargin{1};

struct Handout {
  uint64_t fence = 0;
  uint32_t priority = kDefaultPriority;
  TimePoint due{}, at{};  // when the job fell due; when it was handed out (the queue's clock)
};

// Job i's priority: 1024 - N/2 + i % N with N = --priorities, the default when N is 0.
uint32_t priority_of(const Args& a, size_t i);
// `priority`: the one the job was pushed with (what the queue reports is not trusted).
Handout handout_of(const Delivery& d, uint32_t priority);
// Deliveries d (among those with got[i]) for which a delivery e with a larger fence has a smaller
// priority and e.due + kInversionMargin <= d.at: e was ready and more urgent when d went out.
uint64_t count_inversions(const std::vector<Handout>& h, const std::vector<std::atomic<uint8_t>>& got);

// The rate workload (bench/README.md).
int run_rate(const Args& a);

}  // namespace delayq::bench
