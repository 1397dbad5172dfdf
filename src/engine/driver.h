// The engine's sense of time: when waiting consumers should look again, and the moves of a
// ManualClock.
//
// There is no timer thread and no periodic tick. Consumers that wait (a thread in reserve(),
// or the waiting component's thread for reserve_async()) are their own timers: each sleeps
// until the earliest deadline the shards published (next_look()), then catches the shard up
// itself and takes the job. So a due job reaches a consumer in one thread hop, and an idle
// engine sleeps. With a ManualClock nobody sleeps on time: the clock's moves advance every
// shard, on the thread that moved it, before ManualClock::advance() returns.
// The deadlines are the cores' (Core::next_deadline()): due times, lease deadlines, and the next
// token of a topic whose rate limit refused a reserve() (core_limits.cc), which counts as jobs
// made ready when it comes, so that waiters look again.
#pragma once

#include <chrono>
#include <cstdint>

#include "delayq/clock.h"
#include "engine/shard.h"

namespace delayq::engine {

// Sleeps are timed on the steady clock, but due times are instants of the wall clock (the
// queue's Clock), which can step. A step back is harmless: a sleeper wakes early, finds nothing
// due and sleeps again, and a call that schedules something earlier wakes it. A step forward
// makes jobs due that a sleeper, counting down the old distance, would not see until it woke.
// So while a deadline is pending, no waiter sleeps longer than this before reading the clock
// again: after a step forward, what fell due is delivered within about this long.
inline constexpr Duration kClockRecheck = std::chrono::seconds(1);

class Driver {
 public:
  // `slack`: how long after a deadline a waiter may wake (EngineOptions::timer_slack), so that
  // one wake-up delivers every job due within it.
  Driver(Shards& shards, Clock& clock, Duration slack)
      : shards_(shards), clock_(clock), slack_(slack) {}
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;
  ~Driver() { stop(); }

  // When the earliest published deadline falls (on the steady clock, as far as the wall clock
  // says now) plus the slack, but no later than kClockRecheck from now; never (max) when there
  // is no deadline or the clock is manual (its moves do the work). For Waiting's next_look.
  std::chrono::steady_clock::time_point next_look() const;
  // Follows a manual clock (nothing for another clock).
  void start();
  // Stops following it; waits for a move being handled. Idempotent.
  void stop();

 private:
  Shards& shards_;
  Clock& clock_;
  const Duration slack_;
  uint64_t subscription_ = 0;
};

}  // namespace delayq::engine
