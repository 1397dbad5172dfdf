#include <charconv>

#include "delayq/job.h"

namespace delayq {

RetryPolicy RetryPolicy::fixed(Duration delay, uint32_t max_attempts) {
  RetryPolicy p;
  p.kind = Kind::fixed;
  p.base = delay;
  p.max_attempts = max_attempts;
  return p;
}

RetryPolicy RetryPolicy::list(std::vector<Duration> delays) {
  RetryPolicy p;
  p.kind = Kind::list;
  p.max_attempts = static_cast<uint32_t>(delays.size() + 1);
  p.delays = std::move(delays);
  return p;
}

RetryPolicy RetryPolicy::exponential(Duration base, double factor, Duration cap, double jitter,
                                     uint32_t max_attempts) {
  RetryPolicy p;
  p.kind = Kind::exponential;
  p.base = base;
  p.factor = factor;
  p.cap = cap;
  p.jitter = jitter;
  p.max_attempts = max_attempts;
  return p;
}

std::string RetryPolicy::validate() const {
  if (max_attempts == 0) return "retry policy: max_attempts must be at least 1";
  switch (kind) {
    case Kind::fixed:
      if (base < Duration::zero()) return "retry policy: the fixed delay must not be negative";
      break;
    case Kind::list:
      if (delays.empty()) return "retry policy: the delay list is empty";
      for (Duration d : delays)
        if (d < Duration::zero()) return "retry policy: a listed delay is negative";
      break;
    case Kind::exponential:
      if (base < Duration::zero()) return "retry policy: the base delay must not be negative";
      if (!(factor >= 1.0) || factor > 1e6)
        return "retry policy: the exponential factor must be between 1 and 1e6";
      if (cap < base) return "retry policy: the cap must be at least the base delay";
      if (!(jitter >= 0.0 && jitter <= 1.0)) return "retry policy: jitter must be within [0, 1]";
      break;
  }
  return {};
}

const char* to_string(JobState s) noexcept {
  switch (s) {
    case JobState::delayed: return "delayed";
    case JobState::ready: return "ready";
    case JobState::reserved: return "reserved";
    case JobState::dead: return "dead";
  }
  return "unknown";
}

std::string Token::to_string() const { return std::to_string(fence) + ":" + id; }

Result<Token> Token::parse(std::string_view text) {
  const size_t colon = text.find(':');
  Token t;
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size())
    return Status(Errc::invalid_argument,
                  "token '" + std::string(text) + "' is not of the form <fence>:<id>");
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + colon, t.fence);
  if (ec != std::errc() || ptr != text.data() + colon)
    return Status(Errc::invalid_argument,
                  "token '" + std::string(text) + "': the part before ':' is not a number");
  t.id = std::string(text.substr(colon + 1));
  return t;
}

}  // namespace delayq
