// Time as delayq sees it.
//
// Due times are absolute wall-clock instants (TimePoint, nanosecond resolution), because a job
// pushed "in 30 minutes" must still be due at the same instant after a restart. Jobs fire on a
// clock that the queue reads through the Clock interface:
//
//  - SystemClock: the real time. The default.
//  - ManualClock: time that moves only when you move it. Tests, and users who want to check a
//    business flow that spans days ("push an order, jump 30 minutes, the order is closed and the
//    stock is back") run in milliseconds with it. A queue opened on a ManualClock does all the
//    work that became due inside ManualClock::advance()/set(), before they return, so after
//    `clock.advance(30min)` every job due by then is ready to reserve.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace delayq {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::time_point<std::chrono::system_clock, std::chrono::nanoseconds>;

class Clock {
 public:
  virtual ~Clock() = default;
  // The current time. Safe from any thread.
  virtual TimePoint now() const = 0;
  // True for clocks that move only by command. The queue then reacts to the clock's moves
  // instead of arming a real timer.
  virtual bool manual() const { return false; }

  // Listener hooks for manual clocks: `fn` runs after each move, on the thread that moved the
  // clock. Returns an id for unsubscribe. SystemClock ignores them.
  virtual uint64_t subscribe(std::function<void()> fn) {
    (void)fn;
    return 0;
  }
  virtual void unsubscribe(uint64_t id) { (void)id; }
};

class SystemClock final : public Clock {
 public:
  TimePoint now() const override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  }
  // A process-wide instance.
  static SystemClock& instance();
};

// A clock that starts at a given instant (default: 2026-01-01T00:00:00Z) and moves only when
// advance() or set() is called. Moving it backwards is refused (set() returns false): time in a
// delay queue never runs backwards. Thread-safe.
class ManualClock final : public Clock {
 public:
  ManualClock();
  explicit ManualClock(TimePoint start);

  TimePoint now() const override;
  bool manual() const override { return true; }
  uint64_t subscribe(std::function<void()> fn) override;
  void unsubscribe(uint64_t id) override;

  // Moves the clock forward by d (d < 0 is treated as 0), then runs every listener: jobs that
  // became due are ready when this returns.
  void advance(Duration d);
  // Moves the clock to t. Returns false (and does nothing) if t is earlier than now().
  bool set(TimePoint t);

 private:
  void notify();
  mutable std::mutex mu_;
  TimePoint now_;
  std::mutex listeners_mu_;  // held while listeners run: unsubscribe waits for a running one
  std::vector<std::pair<uint64_t, std::function<void()>>> listeners_;
  uint64_t next_id_ = 1;
};

}  // namespace delayq
