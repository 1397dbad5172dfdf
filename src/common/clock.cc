#include "delayq/clock.h"

#include <algorithm>

#include "common/rules.h"

namespace delayq {

SystemClock& SystemClock::instance() {
  static SystemClock c;
  return c;
}

ManualClock::ManualClock()
    : ManualClock(TimePoint(std::chrono::sys_days(std::chrono::year{2026} / 1 / 1))) {}

ManualClock::ManualClock(TimePoint start) : now_(start) {}

TimePoint ManualClock::now() const {
  std::lock_guard lock(mu_);
  return now_;
}

uint64_t ManualClock::subscribe(std::function<void()> fn) {
  std::lock_guard lock(listeners_mu_);
  listeners_.emplace_back(next_id_, std::move(fn));
  return next_id_++;
}

void ManualClock::unsubscribe(uint64_t id) {
  std::lock_guard lock(listeners_mu_);
  std::erase_if(listeners_, [id](const auto& l) { return l.first == id; });
}

void ManualClock::advance(Duration d) {
  {
    std::lock_guard lock(mu_);
    // Held at the end of time (April 2262) rather than wrapped around into the past.
    if (d > Duration::zero()) now_ = rules::plus(now_, d);
  }
  notify();
}

bool ManualClock::set(TimePoint t) {
  {
    std::lock_guard lock(mu_);
    if (t < now_) return false;
    now_ = t;
  }
  notify();
  return true;
}

void ManualClock::notify() {
  std::lock_guard lock(listeners_mu_);
  for (auto& l : listeners_) l.second();
}

}  // namespace delayq
