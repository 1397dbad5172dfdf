// HeapScheduler: the classic hand-written scheduler, the baseline of issue 13 ("what they would
// otherwise write"). A std::priority_queue of (due, seq, job) under one std::mutex, and one timer
// thread sleeping on a std::condition_variable until the earliest due instant; when it wakes it
// pops every due job and hands them, in due order and with no lock held, to `on_due`.
//
// Written as a careful user would, so that ratios against it are fair:
// - a schedule notifies the timer thread only when its job becomes the earliest (the thread
//   sleeps until the earliest due instant, so any later job needs no wake-up);
// - cancel is O(1) and lazy: a state byte per sequence number (the "generation table" of the
//   micro-benchmarks' heap), the cancelled entry dropped when it reaches the top;
// - due jobs are moved out of the heap, never copied.
// Sequence numbers are dense from 0, so the state table grows by one byte per job ever scheduled:
// fine for a benchmark, not for a process that runs for months.
//
// Thread-safe: schedule and cancel from any thread; on_due runs on the timer thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <utility>
#include <vector>

#include "delayq/clock.h"

namespace delayq::bench {

template <class Job>
class HeapScheduler {
 public:
  using Steady = std::chrono::steady_clock;
  using Id = uint64_t;
  using OnDue = std::function<void(std::vector<Job>&)>;

  // Starts the timer thread. on_due gets the jobs that fell due at one wake-up, earliest first
  // (ties in schedule order); it may schedule and cancel.
  explicit HeapScheduler(OnDue on_due) : on_due_(std::move(on_due)), thread_([this] { run(); }) {}
  ~HeapScheduler() { stop(); }
  HeapScheduler(const HeapScheduler&) = delete;
  HeapScheduler& operator=(const HeapScheduler&) = delete;

  Id schedule_after(Duration delay, Job job) {
    return schedule_at(Steady::now() + std::max(delay, Duration::zero()), std::move(job));
  }

  Id schedule_at(Steady::time_point due, Job job) {
    bool earliest;
    Id id;
    {
      std::lock_guard l(mu_);
      id = state_.size();
      state_.push_back(kPending);
      earliest = heap_.empty() || due < heap_.top().due;
      heap_.push(Entry{due, id, std::move(job)});
    }
    if (earliest) cv_.notify_one();
    return id;
  }

  // True if the job had not been handed to on_due and now never will be.
  bool cancel(Id id) {
    std::lock_guard l(mu_);
    if (id >= state_.size() || state_[id] != kPending) return false;
    state_[id] = kCancelled;
    return true;
  }

  // Stops the timer thread; jobs not yet due are dropped. Idempotent; not from on_due.
  void stop() {
    {
      std::lock_guard l(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  enum : uint8_t { kPending, kFired, kCancelled };
  struct Entry {
    Steady::time_point due;
    Id seq;
    Job job;
    bool operator>(const Entry& o) const { return due != o.due ? due > o.due : seq > o.seq; }
  };

  void run() {
    std::vector<Job> due;
    std::unique_lock l(mu_);
    while (!stop_) {
      if (heap_.empty()) {
        cv_.wait(l);
        continue;
      }
      const Steady::time_point now = Steady::now();
      if (heap_.top().due > now) {
        cv_.wait_until(l, heap_.top().due);
        continue;
      }
      take_due(now, due);
      l.unlock();
      on_due_(due);
      due.clear();
      l.lock();
    }
  }

  // Under mu_: moves every job due at `now` and not cancelled into `out`.
  void take_due(Steady::time_point now, std::vector<Job>& out) {
    while (!heap_.empty() && heap_.top().due <= now) {
      // top() is const; the entry is popped at once, and pop() compares only due and seq.
      Entry& e = const_cast<Entry&>(heap_.top());
      if (state_[e.seq] == kPending) {
        state_[e.seq] = kFired;
        out.push_back(std::move(e.job));
      }
      heap_.pop();
    }
  }

  const OnDue on_due_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
  std::vector<uint8_t> state_;  // by sequence number
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace delayq::bench
