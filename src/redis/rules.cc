// The engine's rules and messages for the Redis backend, by replaying calls on a scratch
// engine::Core (see rules.h for why).
#include "redis/rules.h"

#include <algorithm>

#include "engine/core.h"

namespace delayq::redis {

namespace {

engine::CoreOptions core_options(const Limits& l) {
  engine::CoreOptions o;
  o.max_delay = l.max_delay;
  o.max_body_bytes = l.max_body_bytes;
  o.default_ttr = l.default_ttr;
  o.default_retry = l.default_retry;
  return o;
}

TimePoint system_now() { return SystemClock::instance().now(); }

// A core that refused nothing where a refusal was expected: Redis and the engine disagree
// about a rule. Reported rather than hidden.
Status disagreement(std::string_view what) {
  return Status(Errc::invalid_state,
                "the Redis backend and the engine's rules disagree about " + std::string(what));
}

}  // namespace

Rules::Rules(const Limits& limits)
    : opt_(std::make_unique<engine::CoreOptions>(core_options(limits))) {}

Rules::~Rules() = default;

std::string Rules::check(const Limits& limits) { return engine::validate(core_options(limits)); }

engine::Core& Rules::probe(TimePoint now) {
  probe_now_ = std::max(probe_now_, now);  // the core's wheel only moves forward
  // A core interns every topic and policy it sees: start a new one now and then.
  if (!probe_ || ++probe_uses_ > 4096) {
    probe_ = std::make_unique<engine::Core>(*opt_, probe_now_);
    probe_uses_ = 0;
  }
  return *probe_;
}

Status Rules::check_push(JobSpec& spec, TimePoint now) {
  std::lock_guard lock(mu_);
  probe(now);
  std::string id = spec.id;
  Status s = probe_->push(std::move(spec), probe_now_);
  if (!s.ok()) return s;  // refused before the core moved anything out of the spec
  // Accepted: take the id and body back, and leave the core empty again.
  Result<JobInfo> info = probe_->get(id, probe_now_);
  spec.body = info.ok() ? std::move(info->body) : std::string();
  (void)probe_->cancel(id, probe_now_);
  spec.id = std::move(id);
  return {};
}

Status Rules::check_nack_delay(std::optional<Duration> delay, TimePoint now) {
  if (!delay) return {};
  std::lock_guard lock(mu_);
  // The core checks the delay before it looks for the job, which is not there (the probe is
  // empty between calls): not_found means the delay passed.
  Status s = probe(now).nack(Token{"-", 1}, delay, probe_now_);
  return s.is(Errc::not_found) ? Status() : s;
}

std::unique_ptr<engine::Core> Rules::core_with(std::string_view id, JobState state,
                                               uint32_t attempts, uint64_t fence, TimePoint now) {
  auto core = std::make_unique<engine::Core>(*opt_, now);
  engine::JobRecord r;
  r.seq = 1;
  r.id = std::string(id);
  r.topic = "t";
  r.state = state;
  // Far enough that nothing fires while the call is replayed; a ready job is one already due.
  r.due = state == JobState::ready ? now : now + std::chrono::hours(1);
  r.lease_deadline = now + std::chrono::hours(1);
  r.ttr = opt_->default_ttr;
  r.attempts = attempts;
  r.fence = fence;
  r.retry = opt_->default_retry;
  r.retry.max_attempts = std::max(r.retry.max_attempts, attempts + 1);
  (void)core->restore(std::move(r), now);
  return core;
}

Status Rules::not_found(std::string_view id) {
  const TimePoint now = system_now();
  engine::Core core(*opt_, now);
  return core.get(id, now).status();
}

Status Rules::stale(const Token& token, JobState state, uint32_t attempts) {
  const TimePoint now = system_now();
  // Another fence than the token's: for a reserved job, "delivered again".
  auto core = core_with(token.id, state, attempts, token.fence + 1, now);
  Status s = core->touch(token, now).status();
  return s.ok() ? disagreement("token " + token.to_string()) : s;
}

Status Rules::duplicate(std::string_view id, JobState state) {
  const TimePoint now = system_now();
  auto core = core_with(id, state, 0, 1, now);
  Status s = core->push(JobSpec{.topic = "t", .id = std::string(id)}, now);
  return s.ok() ? disagreement("the id '" + std::string(id) + "'") : s;
}

Status Rules::reschedule_refused(std::string_view id, JobState state, TimePoint when,
                                 TimePoint now) {
  auto core = core_with(id, state, 1, 1, now);
  Status s = core->reschedule(id, when, now);
  return s.ok() ? disagreement("rescheduling '" + std::string(id) + "'") : s;
}

Status Rules::requeue_refused(std::string_view id, JobState state) {
  const TimePoint now = system_now();
  auto core = core_with(id, state, 1, 1, now);
  Status s = core->requeue_dead(id, now);
  return s.ok() ? disagreement("requeueing '" + std::string(id) + "'") : s;
}

}  // namespace delayq::redis
