// The shared rules for the Redis backend (see redis_rules.h): each a call of common/rules.h.
#include "redis/redis_rules.h"

#include "common/rules.h"

namespace delayq::redis {

namespace {

// A refusal the Redis scripts reported for a state in which the engine would have accepted the
// call: the two disagree about a rule. Reported rather than hidden.
Status disagreement(std::string_view what) {
  return Status(Errc::invalid_state,
                "the Redis backend and the engine's rules disagree about " + std::string(what));
}

}  // namespace

Status Rules::check_push(const JobSpec& spec, TimePoint now) const {
  return rules::check_spec(spec, limits_, now);
}

Status Rules::check_nack_delay(std::optional<Duration> delay, TimePoint) const {
  return rules::check_nack_delay(delay, limits_.max_delay);
}

Status Rules::not_found(std::string_view id) { return rules::no_such_job(id); }

Status Rules::stale(const Token& token, JobState state, uint32_t attempts) {
  return rules::stale_token(token, state, attempts);
}

Status Rules::duplicate(std::string_view id, JobState state) {
  return rules::duplicate_id(id, state);
}

Status Rules::reschedule_refused(std::string_view id, JobState state, TimePoint when,
                                 TimePoint now) const {
  if (Status s = rules::check_reschedulable(id, state); !s.ok()) return s;
  if (Status s = rules::check_new_due(when, now, limits_.max_delay); !s.ok()) return s;
  return disagreement("rescheduling '" + std::string(id) + "'");
}

Status Rules::requeue_refused(std::string_view id, JobState state) {
  if (Status s = rules::check_requeueable(id, state); !s.ok()) return s;
  return disagreement("requeueing '" + std::string(id) + "'");
}

}  // namespace delayq::redis
