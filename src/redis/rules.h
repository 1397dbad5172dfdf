// The engine's input rules and refusals, for the Redis backend: thin calls of the shared rules
// in src/engine/rules.h, so that a bad input gets the same Errc and message from every backend
// (the contract says so, and the tests compare the wording).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "delayq/error.h"
#include "delayq/job.h"

namespace delayq::redis {

struct Limits {
  Duration max_delay;
  size_t max_body_bytes;
  Duration default_ttr;
  RetryPolicy default_retry;
};

class Rules {
 public:
  explicit Rules(const Limits& limits) : limits_(limits) {}

  // Empty when the limits are usable, else what is wrong (the engine's option checks).
  static std::string check(const Limits& limits);

  // What the engine's push says about `spec`, but for duplicate ids (ok, or invalid_argument).
  // Precondition: spec.id is set (generated ids are drawn before).
  Status check_push(const JobSpec& spec, TimePoint now) const;
  // What the engine's nack says about a delay (ok, or invalid_argument).
  Status check_nack_delay(std::optional<Duration> delay, TimePoint now) const;

  // The engine's refusals, for a job that Redis found in `state` (with `attempts` deliveries).
  static Status not_found(std::string_view id);
  static Status stale(const Token& token, JobState state, uint32_t attempts);
  static Status duplicate(std::string_view id, JobState state);
  // reschedule() of a job in `state` to `when`, the server's clock reading `now`.
  Status reschedule_refused(std::string_view id, JobState state, TimePoint when,
                            TimePoint now) const;
  static Status requeue_refused(std::string_view id, JobState state);

 private:
  Limits limits_;
};

}  // namespace delayq::redis
