// The engine's rules and refusals for the Redis backend (see rules.h): each a call of the shared
// rules in src/engine/rules.h.
#include "redis/rules.h"

#include "engine/core.h"
#include "engine/rules.h"

namespace delayq::redis {

namespace {

// A refusal the Redis scripts reported for a state in which the engine would have accepted the
// call: the two disagree about a rule. Reported rather than hidden.
Status disagreement(std::string_view what) {
  return Status(Errc::invalid_state,
                "the Redis backend and the engine's rules disagree about " + std::string(what));
}

}  // namespace

std::string Rules::check(const Limits& limits) {
  engine::CoreOptions o;
  o.max_delay = limits.max_delay;
  o.max_body_bytes = limits.max_body_bytes;
  o.default_ttr = limits.default_ttr;
  o.default_retry = limits.default_retry;
  return engine::validate(o);
}

Status Rules::check_push(const JobSpec& spec, TimePoint now) const {
  return engine::check_spec(spec, {limits_.max_delay, limits_.max_body_bytes}, now);
}

Status Rules::check_nack_delay(std::optional<Duration> delay, TimePoint) const {
  return engine::check_nack_delay(delay, limits_.max_delay);
}

Status Rules::not_found(std::string_view id) { return engine::no_such_job(id); }

Status Rules::stale(const Token& token, JobState state, uint32_t attempts) {
  return engine::stale_token(token, state, attempts);
}

Status Rules::duplicate(std::string_view id, JobState state) {
  return engine::duplicate_id(id, state);
}

Status Rules::reschedule_refused(std::string_view id, JobState state, TimePoint when,
                                 TimePoint now) const {
  if (Status s = engine::check_reschedulable(id, state); !s.ok()) return s;
  if (Status s = engine::check_new_due(when, now, limits_.max_delay); !s.ok()) return s;
  return disagreement("rescheduling '" + std::string(id) + "'");
}

Status Rules::requeue_refused(std::string_view id, JobState state) {
  if (Status s = engine::check_requeueable(id, state); !s.ok()) return s;
  return disagreement("requeueing '" + std::string(id) + "'");
}

}  // namespace delayq::redis
