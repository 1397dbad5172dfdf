// The engine's schedule table (Queue::schedule; the calls are engine_schedules.cc, the firing
// schedule_firing.cc): each schedule's spec, parsed rule and planner state, under one mutex,
// taken before any shard's lock and held while occurrences fire. The running schedules are also
// kept in `due`, ordered by next occurrence, so that a wake-up looks only at those due (O(k log N)
// for k of N) and the earliest is at hand: it is published in next_ns. Who fires them: with a ManualClock, each move of the clock, on the
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
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
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
  // Where it is in Schedules::due (its next occurrence then), empty when it is not there.
  std::optional<TimePoint> indexed{};
};
// An entry of Schedules::table, with its id.
using ScheduleSlot = std::pair<const std::string, ScheduleEntry>;

class Schedules {
 public:
  Schedules() = default;
  Schedules(const Schedules&) = delete;
  Schedules& operator=(const Schedules&) = delete;
  ~Schedules() { stop(); }

  std::mutex mu;
  std::map<std::string, ScheduleEntry, std::less<>> table;  // under mu
  // Under mu: each running (not paused) schedule that has a next occurrence, by (that
  // occurrence, id); the id is a view of the table's key. Kept in step by index()/unindex().
  std::set<std::pair<TimePoint, std::string_view>> due;
  // The earliest next occurrence of a running schedule (ns since 1970), INT64_MAX: none.
  std::atomic<int64_t> next_ns{INT64_MAX};

  // Under mu, after any change to a table entry's next occurrence or pause: puts it in `due`
  // where it now belongs (or takes it out). `id` is the entry's key in the table.
  void index(const std::string& id, ScheduleEntry& e);
  // Under mu, before the entry leaves the table (or is replaced): takes it out of `due`.
  void unindex(const std::string& id, ScheduleEntry& e);
  // Under mu, for tests (test_hooks.h): what is wrong with `due` and next_ns; empty if nothing.
  std::string index_damage() const;
  // Under mu: next_ns from `due`, and the thread told if it moved earlier.
  void publish();
  // From now on a thread calls `fire` when next_ns comes (not with a manual clock); it starts
  // with the first deadline publish() sees. `fire` returns false when something due could not
  // fire (the engine stopped, a push was refused): the thread then looks again only
  // kClockRecheck later; otherwise, at once if more fell due meanwhile.
  void start(Clock& clock, std::function<bool()> fire);
  // Stops and joins it. Idempotent.
  void stop();

 private:
  void run(Clock& clock, const std::function<bool()>& fire);
  std::mutex thread_mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // thread_mu_
  Clock* clock_ = nullptr;  // thread_mu_; set by start()
  std::function<bool()> fire_;
  std::thread thread_;
};

}  // namespace delayq::engine
