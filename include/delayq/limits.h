// Limits: what a queue accepts, and what a job pushed without its own ttr or retry policy gets.
// Every backend takes the same struct (EngineOptions::limits, RedisOptions::limits) and refuses
// the same inputs with the same words (docs/semantics.md, "Input rules").
#pragma once

#include <chrono>
#include <cstddef>

#include "delayq/job.h"

namespace delayq {

struct Limits {
  // Pushes (and reschedules, nack delays, ttrs, retry waits) further out than this are refused.
  // Positive, at most 100 years.
  Duration max_delay = std::chrono::hours(24 * 3650);
  // Larger bodies are refused. Positive.
  size_t max_body_bytes = size_t{1} << 20;
  // The lease of a job pushed with ttr = 0. Positive, at most max_delay.
  Duration default_ttr = std::chrono::seconds(30);
  // The policy of a job pushed without one: exponential from 1 s, doubling, capped at 1 h,
  // 10 attempts. Its waits are at most max_delay.
  RetryPolicy default_retry{};
};

}  // namespace delayq
