// A limited topic's token bucket and places (limiter.h).
#include "engine/limiter.h"

#include <algorithm>

namespace delayq::engine {

namespace {
using i128 = __int128;

// The ceiling of a / b for b > 0, any sign of a.
i128 ceil_div(i128 a, i128 b) {
  const i128 q = a / b;
  return (a % b != 0 && a > 0) ? q + 1 : q;
}
}  // namespace

// Far below any scaled instant (|ns| < 2^63, count < 2^32): clamped up to `now`, a full bucket.
TopicLimiter::TopicLimiter(const TopicLimits& limits)
    : limits_(limits), tat_(-(static_cast<i128>(1) << 120)) {}

i128 TopicLimiter::scaled(TimePoint t) const {
  return static_cast<i128>(t.time_since_epoch().count()) * limits_.rate->count;
}

void TopicLimiter::clamp(i128 now_x) {
  const TopicLimits::Rate& r = *limits_.rate;
  const i128 top = now_x + static_cast<i128>(r.burst) * r.per.count();
  // A full bucket holds no more, but a tat less than one nanosecond behind `now` is kept: a token
  // whose exact instant has a fraction can only be taken at the next whole nanosecond, and with a
  // burst of 1 raising tat to `now` would lose that fraction at every hand-out.
  if (tat_ <= now_x - r.count) tat_ = now_x;  // behind by a whole nanosecond or more: full
  tat_ = std::min(tat_, top);
}

std::optional<TopicLimiter::Refusal> TopicLimiter::refusal(TimePoint now) {
  if (limits_.max_in_flight && in_flight_ >= *limits_.max_in_flight)
    return Refusal{.concurrency = true};
  if (!limits_.rate) return std::nullopt;
  const TopicLimits::Rate& r = *limits_.rate;
  const i128 now_x = scaled(now);
  clamp(now_x);
  // Allowed when now >= tat - (burst - 1) * T, all scaled by count (T becomes per).
  const i128 earliest_x = tat_ - static_cast<i128>(r.burst - 1) * r.per.count();
  if (now_x >= earliest_x) return std::nullopt;
  // The first whole nanosecond at which the condition holds.
  const i128 ns = ceil_div(earliest_x, r.count);
  return Refusal{.next_token = TimePoint(Duration(static_cast<int64_t>(ns)))};
}

std::optional<TopicLimiter::Refusal> TopicLimiter::take(TimePoint now) {
  if (std::optional<Refusal> no = refusal(now)) {
    count(*no);
    return no;
  }
  if (limits_.rate) tat_ += limits_.rate->per.count();  // refusal() clamped it to >= now
  ++in_flight_;
  return std::nullopt;
}

void TopicLimiter::count(const Refusal& r) {
  ++(r.concurrency ? throttled_concurrency_ : throttled_rate_);
}

void TopicLimiter::give_back(TimePoint now) {
  if (!limits_.rate) return;
  tat_ -= limits_.rate->per.count();
  clamp(scaled(now));
}

bool TopicLimiter::free_place() {
  if (in_flight_ == 0) return false;  // not counted (cannot happen: every place is seeded)
  --in_flight_;
  return limits_.max_in_flight && in_flight_ + 1 == *limits_.max_in_flight;
}

void TopicLimiter::change(const TopicLimits& limits, TimePoint now) {
  // The tokens missing from a full bucket, in whole tokens of the old rate (none without one).
  i128 missing = 0;
  if (limits_.rate) {
    const i128 now_x = scaled(now);
    clamp(now_x);
    missing = ceil_div(tat_ - now_x, limits_.rate->per.count());
  }
  limits_ = limits;
  if (!limits_.rate) return;
  missing = std::min<i128>(missing, limits_.rate->burst);
  tat_ = scaled(now) + missing * limits_.rate->per.count();
}

TopicFlow TopicLimiter::snapshot(TimePoint now) {
  TopicFlow f;
  f.limits = limits_;
  f.in_flight = in_flight_;
  f.throttled_rate = throttled_rate_;
  f.throttled_concurrency = throttled_concurrency_;
  if (limits_.rate) {
    const TopicLimits::Rate& r = *limits_.rate;
    const i128 now_x = scaled(now);
    clamp(now_x);
    // j hand-outs fit now while tat - now + (j - 1) * per <= (burst - 1) * per (scaled).
    const i128 tokens = r.burst - ceil_div(tat_ - now_x, r.per.count());
    f.tokens = static_cast<uint64_t>(std::clamp<i128>(tokens, 0, r.burst));
  }
  return f;
}

}  // namespace delayq::engine
