// The queue's input rules and refusals (see rules.h).
#include "engine/rules.h"

#include <algorithm>

#include "common/format.h"

namespace delayq::engine {

TimePoint plus(TimePoint t, Duration d) {
  if (t > TimePoint::max() - d) return TimePoint::max();
  return t + d;
}

std::string check_waits(const RetryPolicy& p, Duration max_delay) {
  Duration longest = p.base;
  if (p.kind == RetryPolicy::Kind::exponential) longest = p.cap;
  if (p.kind == RetryPolicy::Kind::list)
    for (Duration d : p.delays) longest = std::max(longest, d);
  if (longest > max_delay)
    return "retry policy: a wait of " + format_duration(longest) + " exceeds max_delay (" +
           format_duration(max_delay) + ")";
  return {};
}

Status check_spec(const JobSpec& s, const Limits& limits, TimePoint now) {
  auto bad = [](std::string m) { return Status(Errc::invalid_argument, std::move(m)); };
  if (s.topic.empty()) return bad("topic is empty: every job needs a topic to be reserved by");
  if (s.topic.size() > kMaxTopicBytes)
    return bad("topic is " + std::to_string(s.topic.size()) + " bytes long; the limit is " +
               std::to_string(kMaxTopicBytes));
  if (s.id.empty()) return bad("id is empty");
  if (s.id.size() > kMaxIdBytes)
    return bad("id is " + std::to_string(s.id.size()) + " bytes long; the limit is " +
               std::to_string(kMaxIdBytes));
  if (s.delay && s.due_at) return bad("set either delay or due_at, not both");
  if (s.delay && *s.delay < Duration::zero())
    return bad("delay is negative (" + format_duration(*s.delay) + "); use 0 for 'now'");
  if (s.delay && *s.delay > limits.max_delay)
    return bad("delay of " + format_duration(*s.delay) + " exceeds max_delay (" +
               format_duration(limits.max_delay) + ")");
  if (s.delay && plus(now, *s.delay) == TimePoint::max())
    return bad("delay of " + format_duration(*s.delay) +
               " runs past the end of representable time (April 2262)");
  // (Compared against now + max_delay, saturated, rather than as due_at - now, which can overflow.)
  if (s.due_at && *s.due_at > plus(now, limits.max_delay))
    return bad("due_at is " + format_duration(*s.due_at - now) + " away, beyond max_delay (" +
               format_duration(limits.max_delay) + ")");
  if (s.ttr < Duration::zero()) return bad("ttr is negative (" + format_duration(s.ttr) + ")");
  if (s.ttr > limits.max_delay)
    return bad("ttr of " + format_duration(s.ttr) + " exceeds max_delay (" +
               format_duration(limits.max_delay) + ")");
  if (s.body.size() > limits.max_body_bytes)
    return bad("body is " + std::to_string(s.body.size()) + " bytes; the limit is " +
               std::to_string(limits.max_body_bytes) + " (max_body_bytes)");
  if (s.retry) {
    std::string why = s.retry->validate();
    if (why.empty()) why = check_waits(*s.retry, limits.max_delay);
    if (!why.empty()) return bad(std::move(why));
  }
  return {};
}

Status check_nack_delay(std::optional<Duration> delay, Duration max_delay) {
  if (delay && *delay < Duration::zero())
    return Status(Errc::invalid_argument, "nack delay is negative (" + format_duration(*delay) + ")");
  if (delay && *delay > max_delay)
    return Status(Errc::invalid_argument, "nack delay of " + format_duration(*delay) +
                                              " exceeds max_delay (" +
                                              format_duration(max_delay) + ")");
  return {};
}

Status check_new_due(TimePoint when, TimePoint now, Duration max_delay) {
  if (when > plus(now, max_delay))
    return Status(Errc::invalid_argument, "new due time is " + format_duration(when - now) +
                                              " away, beyond max_delay (" +
                                              format_duration(max_delay) + ")");
  return {};
}

Status no_such_job(std::string_view id) {
  return Status(Errc::not_found, "no job with id '" + std::string(id) +
                                     "' (never pushed, or already acknowledged or cancelled)");
}

Status duplicate_id(std::string_view id, JobState state) {
  return Status(Errc::duplicate_id, "a job with id '" + std::string(id) + "' already exists (" +
                                        to_string(state) + "); ids are unique while a job lives");
}

Status stale_token(const Token& t, JobState state, uint32_t attempts) {
  std::string why = "token " + t.to_string() + " is stale: job '" + t.id + "' ";
  if (state == JobState::reserved)
    why += "was delivered again (attempt " + std::to_string(attempts) + ")";
  else
    why += "is " + std::string(to_string(state)) +
           " now (its lease ran out, or the delivery was already settled)";
  return Status(Errc::stale_token, std::move(why));
}

Status check_reschedulable(std::string_view id, JobState state) {
  if (state == JobState::reserved)
    return Status(Errc::invalid_state, "job '" + std::string(id) +
                                           "' is reserved by a consumer; nack it with a delay instead");
  if (state == JobState::dead)
    return Status(Errc::invalid_state,
                  "job '" + std::string(id) + "' is dead-lettered; requeue it instead");
  return {};
}

Status check_requeueable(std::string_view id, JobState state) {
  if (state != JobState::dead)
    return Status(Errc::invalid_state, "job '" + std::string(id) + "' is " + to_string(state) +
                                           ", not dead");
  return {};
}

Status reserve_timeout(std::span<const std::string> topics) {
  std::string list;
  for (const std::string& t : topics) list += (list.empty() ? "'" : ", '") + t + "'";
  return Status(Errc::timeout, "no job of " + list + " became ready in time");
}

}  // namespace delayq::engine
