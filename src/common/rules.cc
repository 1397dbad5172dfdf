// The queue's input rules and refusals (see rules.h).
#include "common/rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "common/bad_input.h"
#include "common/format.h"

namespace delayq::rules {

TimePoint plus(TimePoint t, Duration d) {
  if (t > TimePoint::max() - d) return TimePoint::max();
  return t + d;
}

Duration distance(TimePoint from, TimePoint to) {
  Duration::rep d = 0;
  if (__builtin_sub_overflow(to.time_since_epoch().count(), from.time_since_epoch().count(), &d))
    return to > from ? Duration::max() : Duration::min();
  return Duration(d);
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

std::string check_limits(const Limits& l) {
  if (l.max_delay <= Duration::zero()) return "max_delay must be positive";
  // Due times are nanoseconds in an int64 (until year 2262): keep now + max_delay inside it.
  if (l.max_delay > kLongestDelay)
    return "max_delay must be at most 100 years, got " + format_duration(l.max_delay);
  if (l.max_body_bytes == 0) return "max_body_bytes must be positive";
  if (l.default_ttr <= Duration::zero()) return "default_ttr must be positive";
  if (l.default_ttr > l.max_delay) return "default_ttr must not exceed max_delay";
  std::string p = l.default_retry.validate();
  if (p.empty()) p = check_waits(l.default_retry, l.max_delay);
  if (!p.empty()) return "default_retry: " + p;
  return {};
}

namespace {

// Nanoseconds per unit, and the unit's suffix for values that do not fit a Duration.
double scale(Unit u) { return u == Unit::seconds ? 1e9 : 1e6; }
const char* suffix(Unit u) { return u == Unit::seconds ? "s" : "ms"; }

// `amount` of `unit` in nanoseconds, the nearest one. The whole units are multiplied as integers:
// in a double, amount * scale is off by up to 128 ns past 2^53 ns (104 days), which made a
// due_at_ms of a whole millisecond a due time just before that millisecond. Precondition: the
// result fits an int64 (the callers have checked the range).
int64_t nanoseconds(double amount, Unit unit) {
  double whole = 0;
  const double fraction = std::modf(amount, &whole);
  const int64_t per_unit = unit == Unit::seconds ? 1'000'000'000 : 1'000'000;
  return static_cast<int64_t>(whole) * per_unit + std::llround(fraction * scale(unit));
}

// A user's number as sent, with its unit ("0.0004s", "1e-10s").
std::string as_sent(double amount, Unit unit) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, amount);
  return std::string(buf, r.ec == std::errc() ? r.ptr : buf) + suffix(unit);
}

// A user's number as a person reads it: as a duration when it fits one ("-5s", "1h30m"),
// else the number itself with its unit ("9.5e+09s").
std::string shown(double amount, Unit unit) {
  const double ns = amount * scale(unit);
  if (std::isfinite(ns) && std::fabs(ns) < 9e18)
    return format_duration(Duration(static_cast<int64_t>(std::llround(ns))));
  return as_sent(amount, unit);
}

}  // namespace

Status negative_duration(std::string_view what, std::string_view shown, std::string_view hint) {
  std::string m = std::string(what) + " is negative (" + std::string(shown) + ")";
  if (!hint.empty()) m += "; " + std::string(hint);
  return bad(std::move(m));
}

Status beyond_max_delay(std::string_view what, std::string_view shown, Duration max_delay) {
  return bad(
      fmt::format("{} of {} exceeds max_delay ({})", what, shown, format_duration(max_delay)));
}

Status below_minimum(std::string_view what, std::string_view shown, Duration minimum,
                     std::string_view hint) {
  std::string m =
      fmt::format("{} of {} is below the minimum of {}", what, shown, format_duration(minimum));
  if (!hint.empty()) m += "; " + std::string(hint);
  return bad(std::move(m));
}

Status due_beyond_max_delay(std::string_view what, std::string_view away, Duration max_delay) {
  return bad(
      fmt::format("{} is {} away, beyond max_delay ({})", what, away, format_duration(max_delay)));
}

Status body_too_large(size_t size, size_t limit, std::string_view setting) {
  return bad(fmt::format("body is {} bytes; the limit is {} ({})", size, limit, setting));
}

Result<Duration> user_duration(std::string_view what, double amount, Unit unit, Duration max_delay,
                               std::string_view if_negative, Duration min_positive) {
  const double ns = amount * scale(unit);
  if (std::isnan(ns)) return bad(std::string(what) + " is not a number");
  if (ns < 0) return negative_duration(what, shown(amount, unit), if_negative);
  // Before the conversion, which could round a tiny amount to 0 (for a ttr: the default).
  if (amount > 0 && ns < static_cast<double>(min_positive.count()))
    return below_minimum(what, as_sent(amount, unit), min_positive, if_negative);
  // Compared as doubles first: the value may be far beyond what a Duration holds.
  if (ns > static_cast<double>(max_delay.count()))
    return beyond_max_delay(what, shown(amount, unit), max_delay);
  const Duration d(nanoseconds(amount, unit));  // <= max_delay (<= 100 years) + 1ns
  if (d > max_delay) return beyond_max_delay(what, shown(amount, unit), max_delay);
  return d;
}

Result<TimePoint> user_time(std::string_view what, double amount, Unit unit, TimePoint now,
                            Duration max_delay) {
  const double ns = amount * scale(unit);
  if (std::isnan(ns)) return bad(std::string(what) + " is not a number");
  if (ns < 0)
    return bad(std::string(what) + " is negative (" + shown(amount, unit) +
               " before 1970); give a unix time, 0 or more (the past means now)");
  const double away = ns - static_cast<double>(now.time_since_epoch().count());
  if (away > static_cast<double>(max_delay.count()))
    return due_beyond_max_delay(what, shown(away / scale(unit), unit), max_delay);
  // now + max_delay fits (max_delay is at most 100 years), so ns does too.
  const TimePoint t{Duration(nanoseconds(amount, unit))};
  if (t > plus(now, max_delay)) return due_beyond_max_delay(what, shown(away / scale(unit), unit), max_delay);
  return t;
}

std::string topic_text_problem(std::string_view topic) {
  const size_t at = invalid_utf8_at(topic);
  if (at == std::string_view::npos) return {};
  return fmt::format(
      "topic is not valid UTF-8 (byte {} is 0x{:02x}): a topic is a name, shown in stats and "
      "metrics; give it as text",
      at, static_cast<unsigned char>(topic[at]));
}

Status check_topic(std::string_view topic) {
  if (topic.empty()) return bad("topic is empty: every job needs a topic to be reserved by");
  if (topic.size() > kMaxTopicBytes)
    return bad(
        fmt::format("topic is {} bytes long; the limit is {}", topic.size(), kMaxTopicBytes));
  if (std::string why = topic_text_problem(topic); !why.empty()) return bad(std::move(why));
  return {};
}

Status check_spec(const JobSpec& s, const Limits& limits, TimePoint now) {
  if (Status st = check_topic(s.topic); !st.ok()) return st;
  if (s.id.empty()) return bad("id is empty");
  if (s.id.size() > kMaxIdBytes)
    return bad(fmt::format("id is {} bytes long; the limit is {}", s.id.size(), kMaxIdBytes));
  if (s.delay && s.due_at) return bad("set either delay or due_at, not both");
  if (s.delay && *s.delay < Duration::zero())
    return negative_duration("delay", format_duration(*s.delay), "use 0 for 'now'");
  if (s.delay && *s.delay > limits.max_delay)
    return beyond_max_delay("delay", format_duration(*s.delay), limits.max_delay);
  if (s.delay && plus(now, *s.delay) == TimePoint::max())
    return bad("delay of " + format_duration(*s.delay) +
               " runs past the end of representable time (April 2262)");
  // (Compared against now + max_delay, saturated, rather than as due_at - now, which can overflow.)
  if (s.due_at && *s.due_at > plus(now, limits.max_delay))
    return due_beyond_max_delay("due_at", format_duration(distance(now, *s.due_at)),
                                limits.max_delay);
  if (s.ttr < Duration::zero()) return negative_duration("ttr", format_duration(s.ttr));
  if (s.ttr > Duration::zero() && s.ttr < kMinTtr)
    return below_minimum("ttr", format_duration(s.ttr), kMinTtr, "use 0 for the default ttr");
  if (s.ttr > limits.max_delay)
    return beyond_max_delay("ttr", format_duration(s.ttr), limits.max_delay);
  if (s.body.size() > limits.max_body_bytes)
    return body_too_large(s.body.size(), limits.max_body_bytes, "max_body_bytes");
  if (s.retry) {
    std::string why = s.retry->validate();
    if (why.empty()) why = check_waits(*s.retry, limits.max_delay);
    if (!why.empty()) return bad(std::move(why));
  }
  return {};
}

Status check_nack_delay(std::optional<Duration> delay, Duration max_delay) {
  if (delay && *delay < Duration::zero())
    return negative_duration("nack delay", format_duration(*delay));
  if (delay && *delay > max_delay)
    return beyond_max_delay("nack delay", format_duration(*delay), max_delay);
  return {};
}

Status check_new_due(TimePoint when, TimePoint now, Duration max_delay) {
  if (when > plus(now, max_delay))
    return due_beyond_max_delay("new due time", format_duration(distance(now, when)), max_delay);
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

Status check_topics(std::span<const std::string> topics) {
  if (topics.empty()) return bad("reserve needs at least one topic");
  return {};
}

Status reserve_timeout(std::span<const std::string> topics) {
  std::string list;
  for (const std::string& t : topics.first(std::min(topics.size(), kNamedTopics)))
    list += (list.empty() ? "'" : ", '") + t + "'";
  if (topics.size() > kNamedTopics)
    list += " and " + std::to_string(topics.size() - kNamedTopics) + " more topics";
  return Status(Errc::timeout, "no job of " + list + " became ready in time");
}

void merge_dead_lists(std::vector<JobInfo>& all, size_t shards, size_t limit) {
  const bool died_at = std::all_of(all.begin(), all.end(),
                                   [](const JobInfo& j) { return j.dead_since != TimePoint{}; });
  if (shards > 1)
    std::stable_sort(all.begin(), all.end(), [died_at](const JobInfo& a, const JobInfo& b) {
      return died_at ? a.dead_since < b.dead_since : a.due < b.due;
    });
  if (all.size() > limit) all.resize(limit);
}

}  // namespace delayq::rules
