// TimerTable: TimerService's state without its thread, its lock or its clock: the wheel, and the
// callbacks it fires, stored in place (SmallCallback) in a slab indexed by the wheel's payload.
// Single-threaded: TimerService holds it under its mutex; tests drive it tick by tick.
//
// Promises (the model test checks them against a multimap): a callback is taken only at or after
// its tick, in tick order, ties in schedule order; cancel succeeds once, for a pending callback,
// and hands its callback back; take_due never hands out a cancelled callback.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "delayq/detail/slab.h"
#include "delayq/detail/small_callback.h"
#include "delayq/timing_wheel.h"

namespace delayq::detail {

class TimerTable {
 public:
  using Callback = SmallCallback;
  using Handle = TimingWheel::Handle;

  Handle schedule(uint64_t tick, Callback&& cb) {
    uint32_t slot;
    if (free_.empty()) {
      slot = callbacks_.emplace_back();
    } else {
      slot = free_.back();
      free_.pop_back();
    }
    callbacks_[slot] = std::move(cb);
    return wheel_.schedule(tick, slot);
  }

  // True if h named a pending callback, which will now never be taken: it is moved to `out`,
  // for the caller to destroy (TimerService does so after unlocking).
  bool cancel(Handle h, Callback& out) {
    if (!wheel_.pending(h)) return false;
    const auto slot = static_cast<uint32_t>(wheel_.payload(h));
    out = std::move(callbacks_[slot]);
    free_.push_back(slot);
    wheel_.cancel(h);
    return true;
  }

  // Appends every callback due at `now` to `out`, in tick order (ties in schedule order).
  void take_due(uint64_t now, std::vector<Callback>& out) {
    wheel_.advance(now, [&](uint64_t slot, uint64_t) {
      out.push_back(std::move(callbacks_[static_cast<uint32_t>(slot)]));
      free_.push_back(static_cast<uint32_t>(slot));
    });
  }

  // Appends every pending callback to `out`, in tick order, leaving the table empty; its wheel
  // then stands at the end of time, where every later schedule is due at once. For a table that
  // is done with (TimerService::stop()).
  void take_all(std::vector<Callback>& out) { take_due(UINT64_MAX, out); }

  // A lower bound on the earliest pending tick (TimingWheel::next_deadline).
  std::optional<uint64_t> next_deadline() const { return wheel_.next_deadline(); }
  size_t size() const { return wheel_.size(); }

 private:
  TimingWheel wheel_;
  Slab<Callback> callbacks_;    // by wheel payload
  std::vector<uint32_t> free_;  // slots of callbacks_ not in use
};

}  // namespace delayq::detail
