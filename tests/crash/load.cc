// The load's jobs (load.h).
#include "load.h"

#include <cstdio>

namespace delayq::crash {

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

TimePoint wall_now() {
  return SystemClock::instance().now();
}

std::string ms_text(Duration d) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f ms", static_cast<double>(d.count()) / 1e6);
  return buf;
}

std::string job_id(uint64_t job) {
  return "job-" + std::to_string(job);
}

std::optional<uint64_t> parse_job_id(std::string_view id) {
  constexpr std::string_view prefix = "job-";
  if (id.size() <= prefix.size() || id.substr(0, prefix.size()) != prefix) return std::nullopt;
  uint64_t v = 0;
  for (char c : id.substr(prefix.size())) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

uint8_t limits_code(const std::optional<TopicLimits>& l) {
  if (!l) return 0;
  for (size_t i = 0; i < kTopicLimits.size(); ++i)
    if (*l == kTopicLimits[i]) return static_cast<uint8_t>(i + 1);
  return kOtherLimits;
}

std::string body_of(uint64_t salt, uint64_t job) {
  uint64_t s = mix(salt ^ mix(job));
  const uint64_t pick = s % 100;
  s = mix(s);
  size_t len;
  if (pick < 8)
    len = 0;
  else if (pick < 75)
    len = 1 + s % 64;
  else if (pick < 97)
    len = 65 + s % 960;
  else
    len = 1025 + s % 15360;
  std::string b(len, '\0');
  for (size_t i = 0; i < len; i += 8) {
    s = mix(s);
    for (size_t k = 0; k < 8 && i + k < len; ++k)
      b[i + k] = static_cast<char>((s >> (8 * k)) & 0xff);
  }
  if (len >= 2) {
    b[len / 2] = '\0';
    b[len - 1] = '\xff';
  }
  return b;
}

JobSpec spec_of(uint64_t salt, uint64_t job, Duration delay, size_t threads) {
  return JobSpec{.topic = topic_of(job, threads),
                 .id = job_id(job),
                 .delay = delay,
                 .ttr = ttr_of(job),
                 .body = body_of(salt, job),
                 .retry = harness_policy(),
                 .priority = priority_of(job)};
}

}  // namespace delayq::crash
