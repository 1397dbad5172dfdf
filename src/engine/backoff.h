// The wait a retry policy gives before each retry. Kept apart from the core so that it can be read
// (and tested) as the one formula it is; Core::fail() is its caller.
#pragma once

#include <cstdint>
#include <random>

#include "delayq/job.h"

namespace delayq::engine {

// The wait before retry number `failed` (1 after the first failed delivery): the policy's fixed
// wait, its list's entry (the last one beyond the list), or base * factor^(failed-1) capped at
// `cap`, less up to `jitter` of it drawn from `rng`.
Duration backoff(const RetryPolicy& p, uint32_t failed, std::mt19937_64& rng);

}  // namespace delayq::engine
