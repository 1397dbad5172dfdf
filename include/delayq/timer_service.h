// TimerService: the timing wheel as a thread-safe timer service. Schedule a callback for later,
// cancel it by handle; a driver thread (Boost.Asio steady_timer armed for the next deadline, no
// periodic tick) runs callbacks when they fall due. The same job as one asio::steady_timer per
// callback, or a priority queue under a lock, at a fraction of the cost (docs/benchmarks.md).
//
// Times are on std::chrono::steady_clock, rounded up to the tick: a callback never runs early.
//
// Extreme times are saturated, never wrapped: a time in the past (a negative delay,
// Duration::min(), time_point::min()) means now, and the callback runs at the next firing; a time
// past the end of steady_clock's range (Duration::max(), time_point::max(), any delay that would
// overflow it: the range ends about 292 years after the machine booted) is held at that end, so
// "never" never comes. Such a callback stays pending, and cancellable, until cancel() or stop();
// the driver sleeps meanwhile.
//
// Rules for what a callback does (tests/unit/timer_service_test.cc checks each):
//  - Callbacks run on the driver thread, one at a time, without any lock held: they may
//    schedule, cancel, ask for pending(), stop the service, or destroy it.
//  - A callback that throws does not end the process or the service: the exception is caught on
//    the driver thread and handed to the error handler given to the constructor, or, without
//    one, written to stderr; the callbacks after it run as usual. Caught rather than let through,
//    because one failing callback must not stop every other timer of the process (letting it out
//    of the driver thread would call std::terminate); reported rather than dropped, because a
//    swallowed failure hides a bug.
//  - stop() (or the destructor) from inside a callback does not wait for the driver thread, which
//    is the one running it: it marks the service stopped, drops what is pending and returns; no
//    other callback runs after it; the driver thread exits once that callback returns, and when
//    the service was destroyed, that thread frees the service's state itself. From any other
//    thread, stop() waits for a running callback to return and for the driver thread to exit.
//  - After stop(), schedule_after() and schedule_at() return an empty handle (false, equal to
//    Handle{}) and destroy the callback without running it; cancel() of any handle returns false
//    and pending() is 0.
//
// Callbacks are stored in place, without an allocation, when they fit in 40 bytes and their move
// cannot throw (detail/small_callback.h); larger ones are allocated, as std::function would.
// Scheduling wakes the driver only when the new callback is due before the instant it sleeps for.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>

#include "delayq/clock.h"
#include "delayq/detail/small_callback.h"
#include "delayq/timing_wheel.h"

namespace delayq {

class TimerService {
 public:
  // Any callable `void()`, move-only ones included (a std::function converts too).
  using Callback = detail::SmallCallback;
  // A handle names one scheduled callback. A stale one (the callback ran, was cancelled or
  // dropped) never names a newer callback, however long the service runs (TimingWheel::Handle).
  using Handle = TimingWheel::Handle;
  // Gets what a callback threw, on the driver thread, without any lock held. If it throws in
  // turn, that is written to stderr and dropped.
  using ErrorHandler = std::function<void(std::exception_ptr)>;

  // Starts the driver thread. tick: 1 ms to 1 s. on_error: see the rules above; empty means
  // stderr.
  explicit TimerService(Duration tick = std::chrono::milliseconds(1), ErrorHandler on_error = {});
  // stop(); from inside a callback, without waiting for the driver thread (see above).
  ~TimerService();
  TimerService(const TimerService&) = delete;
  TimerService& operator=(const TimerService&) = delete;

  // Runs cb on the driver thread once `delay` (< 0 means 0; Duration::max() means never) has
  // passed. Thread-safe. After stop(): an empty handle, and cb is destroyed unrun.
  Handle schedule_after(Duration delay, Callback cb);
  // The same at an instant (the past, time_point::min() included, means now; time_point::max()
  // means never).
  Handle schedule_at(std::chrono::steady_clock::time_point when, Callback cb);

  // Returns true if the callback had not started and now never will; false if it already ran,
  // is running, or was cancelled. Pass only handles of this service: the handle carries no
  // owner, so another service's handle may name one of this service's entries. Thread-safe.
  bool cancel(Handle h);

  // Callbacks scheduled and neither run nor cancelled.
  size_t pending() const;

  // Stops the driver thread; callbacks not yet run are dropped (destroyed without running).
  // Once it returns, no callback starts. Idempotent and thread-safe. From inside a callback it
  // does not wait for the driver thread (see above).
  void stop();

 private:
  struct Impl;
  // Shared with the driver thread, which outlives the service when a callback destroys it.
  std::shared_ptr<Impl> impl_;
};

}  // namespace delayq
