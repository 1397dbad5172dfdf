// The arguments of the backend's scripts (see args.h).
#include "redis/args.h"

#include <fmt/format.h>

#include <utility>

namespace delayq::redis {

namespace {

int64_t ceil_us(int64_t ns) {
  return ns / 1000 + (ns > 0 && ns % 1000 != 0 ? 1 : 0);
}

// A double as Lua's tonumber() reads it back exactly.
std::string num(double v) {
  return fmt::format("{:.17g}", v);
}

}  // namespace

int64_t ceil_us(Duration d) {
  return ceil_us(d.count());
}
int64_t ceil_us(TimePoint t) {
  return ceil_us(t.time_since_epoch().count());
}

CommonArgs::CommonArgs(Duration max_delay, uint64_t seed, const Clock* clock)
    : max_delay_us_(std::to_string(ceil_us(max_delay))), rng_(seed), clock_(clock) {}

std::vector<std::string> CommonArgs::operator()(const ShardKeys& shard) {
  // A fresh seed for the script's jitter (splitmix64 of a counter): 1 .. 2^31-2, as the script's
  // Park-Miller generator needs.
  uint64_t x = rng_.fetch_add(0x9e3779b97f4a7c15ull);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  std::string seed = std::to_string(1 + x % 2147483646);
  if (clock_) {
    // Now, rounded down: an instant not yet reached is never taken for now (due times are
    // rounded up, ceil_us()). Before the epoch, 0: the scripts' times are not negative.
    const int64_t ns = clock_->now().time_since_epoch().count();
    (seed += ':') += std::to_string(ns > 0 ? ns / 1000 : 0);
  }
  return {shard.wake, max_delay_us_, std::move(seed)};
}

void add_job_args(JobSpec& spec, bool with_topic, Duration default_ttr,
                  const RetryPolicy& default_retry, std::vector<std::string>& args) {
  const RetryPolicy& p = spec.retry ? *spec.retry : default_retry;
  args.push_back(spec.id);
  if (with_topic) args.push_back(spec.topic);
  args.push_back(std::move(spec.body));
  args.push_back(spec.delay ? std::to_string(ceil_us(*spec.delay)) : "");
  args.push_back(spec.due_at ? std::to_string(ceil_us(*spec.due_at)) : "");
  args.push_back(std::to_string(ceil_us(spec.ttr > Duration::zero() ? spec.ttr : default_ttr)));
  args.push_back(std::to_string(spec.priority));
  args.push_back(std::to_string(static_cast<int>(p.kind)));
  args.push_back(std::to_string(p.max_attempts));
  args.push_back(std::to_string(ceil_us(p.base)));
  args.push_back(num(p.factor));
  args.push_back(std::to_string(ceil_us(p.cap)));
  args.push_back(num(p.jitter));
  if (!with_topic) args.push_back(std::to_string(p.delays.size()));
  for (Duration d : p.delays) args.push_back(std::to_string(ceil_us(d)));
}

}  // namespace delayq::redis
