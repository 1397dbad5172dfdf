// backoff(): the wait a retry policy gives before a retry (declared in backoff.h).
#include <algorithm>
#include <cmath>

#include "engine/backoff.h"

namespace delayq::engine {

Duration backoff(const RetryPolicy& p, uint32_t failed, std::mt19937_64& rng) {
  const uint32_t n = std::max<uint32_t>(failed, 1);
  switch (p.kind) {
    case RetryPolicy::Kind::fixed:
      return p.base;
    case RetryPolicy::Kind::list:
      if (p.delays.empty()) return Duration::zero();
      return p.delays[std::min<size_t>(n - 1, p.delays.size() - 1)];
    case RetryPolicy::Kind::exponential:
      break;
  }
  // A zero base waits zero: factor^(n-1) overflows to infinity after enough failures, and
  // 0 x infinity is NaN, whose conversion to an integer is undefined.
  if (p.base <= Duration::zero()) return Duration::zero();
  // base * factor^(n-1), computed in double and capped before converting back.
  const double raw = static_cast<double>(p.base.count()) * std::pow(p.factor, n - 1.0);
  const double capped = std::min(raw, static_cast<double>(p.cap.count()));
  double d = capped;
  if (p.jitter > 0) {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    d -= capped * p.jitter * u;
  }
  // d <= cap, a valid Duration, so the conversion cannot overflow.
  return Duration(static_cast<int64_t>(std::clamp(d, 0.0, static_cast<double>(p.cap.count()))));
}

}  // namespace delayq::engine
