// TimerService: the timing wheel as a thread-safe timer service. Schedule a callback for later,
// cancel it by handle; a driver thread (Boost.Asio steady_timer armed for the next deadline, no
// periodic tick) runs callbacks when they fall due. The same job as one asio::steady_timer per
// callback, or a priority queue under a lock, at a fraction of the cost (docs/benchmarks.md).
//
// Times are on std::chrono::steady_clock, rounded up to the tick: a callback never runs early.
//
// Callbacks are stored in place, without an allocation, when they fit in 40 bytes and their move
// cannot throw (detail/small_callback.h); larger ones are allocated, as std::function would.
// Scheduling wakes the driver only when the new callback is due before the instant it sleeps for.
#pragma once

#include <chrono>
#include <memory>

#include "delayq/clock.h"
#include "delayq/detail/small_callback.h"
#include "delayq/timing_wheel.h"

namespace delayq {

class TimerService {
 public:
  // Any callable `void()`, move-only ones included (a std::function converts too).
  using Callback = detail::SmallCallback;
  using Handle = TimingWheel::Handle;

  // Starts the driver thread. tick: 1 ms to 1 s.
  explicit TimerService(Duration tick = std::chrono::milliseconds(1));
  // stop().
  ~TimerService();
  TimerService(const TimerService&) = delete;
  TimerService& operator=(const TimerService&) = delete;

  // Runs cb on the driver thread once `delay` (< 0 means 0) has passed. Thread-safe. Callbacks
  // run without any lock held: they may schedule and cancel.
  Handle schedule_after(Duration delay, Callback cb);
  Handle schedule_at(std::chrono::steady_clock::time_point when, Callback cb);

  // Returns true if the callback had not started and now never will; false if it already ran,
  // is running, or was cancelled. Pass only handles of this service: the handle carries no
  // owner, so another service's handle may name one of this service's entries. Thread-safe.
  bool cancel(Handle h);

  // Callbacks scheduled and neither run nor cancelled.
  size_t pending() const;

  // Stops the driver thread; callbacks not yet run are dropped. Idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace delayq
