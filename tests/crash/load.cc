// The load's jobs (load.h).
#include "load.h"

#include <chrono>
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

std::string schedule_id(uint64_t n) {
  return "sched-" + std::to_string(n);
}

ScheduleSpec schedule_spec(uint64_t n, size_t rule) {
  ScheduleSpec s;
  s.id = schedule_id(n);
  s.rule = kScheduleRules[rule];
  s.job = JobSpec{.topic = kScheduleTopic,
                  .ttr = kLongTtr,
                  .body = "an occurrence of " + s.id,
                  .retry = harness_policy()};
  constexpr std::array<ScheduleSpec::CatchUp, 3> policies = {
      ScheduleSpec::CatchUp::one, ScheduleSpec::CatchUp::all, ScheduleSpec::CatchUp::skip};
  s.catch_up = policies[n % policies.size()];
  s.catch_up_max = 4;
  return s;
}

namespace {

// Digits of `s` from `at`, exactly `len` of them.
std::optional<int64_t> digits(std::string_view s, size_t at, size_t len) {
  if (at + len > s.size()) return std::nullopt;
  int64_t v = 0;
  for (size_t i = at; i < at + len; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

std::optional<std::pair<uint64_t, int64_t>> parse_occurrence(std::string_view id) {
  using namespace std::chrono;
  const size_t at = id.find('@');
  if (at == std::string_view::npos) return std::nullopt;
  constexpr std::string_view prefix = "sched-";
  const std::string_view name = id.substr(0, at);
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return std::nullopt;
  const std::optional<int64_t> n = digits(name, prefix.size(), name.size() - prefix.size());
  // "YYYY-MM-DDTHH:MM:SS", then an optional fraction (3, 6 or 9 digits) and "Z".
  const std::string_view t = id.substr(at + 1);
  const auto y = digits(t, 0, 4), mo = digits(t, 5, 2), d = digits(t, 8, 2), h = digits(t, 11, 2),
             mi = digits(t, 14, 2), sec = digits(t, 17, 2);
  if (!n || !y || !mo || !d || !h || !mi || !sec || t.size() < 20) return std::nullopt;
  int64_t frac = 0;
  const size_t flen = t.size() > 21 ? t.size() - 21 : 0;  // the round trip checks the rest
  if (flen > 0) {
    const std::optional<int64_t> f = digits(t, 20, flen);
    if (!f || flen > 9) return std::nullopt;
    frac = *f;
    for (size_t k = flen; k < 9; ++k) frac *= 10;
  }
  const sys_days day{year(static_cast<int>(*y)) / month(static_cast<unsigned>(*mo)) /
                     static_cast<unsigned>(*d)};
  const int64_t ns = duration_cast<nanoseconds>(day.time_since_epoch()).count() +
                     ((*h * 60 + *mi) * 60 + *sec) * 1'000'000'000 + frac;
  // Exactly the id the store makes of it, or not one of the load's.
  if (occurrence_job_id(name, at_ns(ns)) != id) return std::nullopt;
  return std::pair{static_cast<uint64_t>(*n), ns};
}

int rule_index(std::string_view rule) {
  for (size_t i = 0; i < kScheduleRules.size(); ++i)
    if (rule == kScheduleRules[i]) return static_cast<int>(i);
  return -1;
}

}  // namespace delayq::crash
