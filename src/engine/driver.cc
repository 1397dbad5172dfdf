// The engine's sense of time (see driver.h).
#include "engine/driver.h"

#include <algorithm>

namespace delayq::engine {

std::chrono::steady_clock::time_point Driver::next_look() const {
  using Steady = std::chrono::steady_clock;
  int64_t due = INT64_MAX;
  for (const auto& s : shards_.all()) due = std::min(due, s->armed_ns.load());
  // The placement's next call (a disk tier's refill: the call that wakes for it loads what
  // falls due after it).
  due = std::min(due, shards_.placement().next_call_ns());
  if (due == INT64_MAX || clock_.manual()) return Steady::time_point::max();
  // Slack: wake a little after the earliest instant, so that the jobs due within the slack
  // after it are taken in the same wake-up instead of one wake-up each (never early).
  const Duration left = Duration(due) - clock_.now().time_since_epoch() + slack_;
  return Steady::now() + std::clamp(left, Duration::zero(), kClockRecheck);
}

void Driver::start() {
  if (!clock_.manual()) return;
  // Everything due by the clock's new time happens now (a failed store write stops the engine,
  // which its callers then learn).
  subscription_ = clock_.subscribe([this] { (void)shards_.advance_all(); });
}

void Driver::stop() {
  if (subscription_ != 0) clock_.unsubscribe(std::exchange(subscription_, 0));
}

}  // namespace delayq::engine
