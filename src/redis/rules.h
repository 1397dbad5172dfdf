// The engine's input rules and error messages, borrowed for the Redis backend.
//
// The contract says a bad input gets the same Errc and message from every backend. The rules
// and their wording live in the in-memory engine's core (src/engine/core.cc), mostly in private
// members. Rather than copy them, the Redis backend asks a scratch engine::Core: it replays the
// call (push, nack, reschedule, requeue, a token check) against a core holding at most one job
// in the state that Redis reported, and returns the core's own Status. So the wording cannot
// drift. It costs nothing on the paths that succeed except for push, which runs the spec
// through a core (validation, then a push and a cancel: a copy of the body).
//
// This is a stopgap: once the core exposes its checks and messages as free functions (see
// docs/redis.md, "Shared code"), this file shrinks to calls of those.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "delayq/error.h"
#include "delayq/job.h"

namespace delayq::engine {
class Core;
struct CoreOptions;
}  // namespace delayq::engine

namespace delayq::redis {

struct Limits {
  Duration max_delay;
  size_t max_body_bytes;
  Duration default_ttr;
  RetryPolicy default_retry;
};

class Rules {
 public:
  explicit Rules(const Limits& limits);
  ~Rules();

  // Empty when the limits are usable, else what is wrong (the engine's option checks).
  static std::string check(const Limits& limits);

  // What the engine's push says about `spec` (ok, or invalid_argument), leaving the spec as it
  // was. Precondition: spec.id is set (generated ids are drawn before).
  Status check_push(JobSpec& spec, TimePoint now);
  // What the engine's nack says about a delay (ok, or invalid_argument).
  Status check_nack_delay(std::optional<Duration> delay, TimePoint now);

  // The engine's refusals, for a job that Redis found in `state` (with `attempts` deliveries).
  Status not_found(std::string_view id);
  Status stale(const Token& token, JobState state, uint32_t attempts);
  Status duplicate(std::string_view id, JobState state);
  // reschedule() of a job in `state` to `when`, the server's clock reading `now`.
  Status reschedule_refused(std::string_view id, JobState state, TimePoint when, TimePoint now);
  Status requeue_refused(std::string_view id, JobState state);

 private:
  // A fresh core with one job `id` in `state`, as of `now`.
  std::unique_ptr<engine::Core> core_with(std::string_view id, JobState state, uint32_t attempts,
                                          uint64_t fence, TimePoint now);
  // The long-lived core for the checks on the paths that succeed (under mu_).
  engine::Core& probe(TimePoint now);

  std::unique_ptr<engine::CoreOptions> opt_;
  std::mutex mu_;  // guards the probe
  std::unique_ptr<engine::Core> probe_;
  TimePoint probe_now_{};
  uint32_t probe_uses_ = 0;
};

}  // namespace delayq::redis
