// What the tests of the harness's comparisons on hand-made reports share (state_test.cc,
// prefix_test.cc): times, and a store's look at a job.
#pragma once

#include <cstdint>

#include "job_state.h"

namespace delayq::crash::hand_made {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT = 1'000'000'000'000'000'000;  // some instant, in ns

inline Obs seen_at(int64_t when, JobState s, uint32_t attempts, int64_t due, int64_t lease = 0) {
  return Obs{true, s, attempts, due, lease, Span::at(when)};
}

}  // namespace delayq::crash::hand_made
