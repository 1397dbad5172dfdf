// The shared input rules (common/rules.h) as the Redis backend applies them: bound to the
// queue's limits, and a script's refusal read back in the words every backend uses (the
// contract says so, and the tests compare the wording).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "delayq/error.h"
#include "delayq/job.h"
#include "delayq/limits.h"

namespace delayq::redis {

class Rules {
 public:
  explicit Rules(const Limits& limits) : limits_(limits) {}

  // What the engine's push says about `spec`, but for duplicate ids (ok, or invalid_argument).
  // Precondition: spec.id is set (generated ids are drawn before).
  Status check_push(const JobSpec& spec, TimePoint now) const;
  // What the engine's nack says about a delay (ok, or invalid_argument).
  Status check_nack_delay(std::optional<Duration> delay, TimePoint now) const;

  // The engine's refusals, for a job that Redis found in `state` (with `attempts` deliveries).
  static Status not_found(std::string_view id);
  static Status stale(const Token& token, JobState state, uint32_t attempts);
  static Status duplicate(std::string_view id, JobState state);
  // reschedule() of a job in `state` to `when`, the server's clock reading `now`; a refusal the
  // engine would not make is reported as a disagreement (invalid_state), not hidden.
  Status reschedule_refused(std::string_view id, JobState state, TimePoint when,
                            TimePoint now) const;
  static Status requeue_refused(std::string_view id, JobState state);

 private:
  Limits limits_;
};

}  // namespace delayq::redis
