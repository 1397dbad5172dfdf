// The engine's schedule table (Queue::schedule; the calls are engine_schedules.cc): each
// schedule's spec, parsed rule and planner state, under one mutex, taken before any shard's lock
// and held while occurrences fire. The earliest next occurrence of a running schedule is
// published in next_ns. Who fires them: with a ManualClock, each move of the clock, on the
// thread that moved it, before the move returns (as jobs fall due); with another clock, this
// table's own thread, which sleeps until next_ns (no longer than kClockRecheck, so that a step
// of the wall clock forward is seen), since consumers, the engine's only other timers, may not
// be waiting.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "schedule/record.h"
#include "schedule/rule.h"

namespace delayq::engine {

struct ScheduleEntry {
  schedule::StoredSchedule stored;
  schedule::Rule rule;
  // The latest occurrences that pushed a job (since the engine opened, and the last one fired
  // before), oldest first: where ScheduleInfo::live_jobs looks.
  std::deque<TimePoint> recent;
  static constexpr size_t kRecent = 64;
};

class Schedules {
 public:
  Schedules() = default;
  Schedules(const Schedules&) = delete;
  Schedules& operator=(const Schedules&) = delete;
  ~Schedules() { stop(); }

  std::mutex mu;
  std::map<std::string, ScheduleEntry, std::less<>> table;  // under mu
  // The earliest next occurrence of a running schedule (ns since 1970), INT64_MAX: none.
  std::atomic<int64_t> next_ns{INT64_MAX};

  // Under mu: next_ns from the table, and the thread told if it moved earlier.
  void publish();
  // From now on a thread calls `fire` when next_ns comes (not with a manual clock); it starts
  // with the first deadline publish() sees.
  void start(Clock& clock, std::function<void()> fire);
  // Stops and joins it. Idempotent.
  void stop();

 private:
  void run(Clock& clock, const std::function<void()>& fire);
  std::mutex thread_mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // thread_mu_
  Clock* clock_ = nullptr;  // thread_mu_; set by start()
  std::function<void()> fire_;
  std::thread thread_;
};

}  // namespace delayq::engine
