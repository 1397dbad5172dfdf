// What fires when, for one topic of a core: its delayed jobs counted by due time in absolute
// bins of 1 s, 1 min and 1 h (each job once per size), so that stats() can tell how many fall due
// in the next minute, hour, day and week (timing::due_bounds) by adding up at most 60, 60 and 168
// bins, whatever the number of jobs, and never visiting one.
//
// The windows' ends are whole seconds, minutes and hours (timing.h), so the bins answer exactly:
// every delayed job of a core that has advanced to `now` is due after `now`, and a job is due
// before the end `floor(now, 1 s) + 60 s` exactly when its second's bin is one of the 60 from
// now's. Memory: one 16-byte entry per second, minute and hour that holds a delayed job (so at most
// three per delayed job, and far fewer when jobs share seconds), in tables at most half full; a
// bin is dropped when it empties.
//
// add() and remove() run on every push of a delayed job and every job that falls due: the bins are
// an open-addressing table (bin_counts.h: no allocation per bin), and each size keeps the slot it
// last touched at hand, so that jobs falling due in the same second, minute or hour (the common
// case) cost a comparison rather than a lookup.
//
// For list_jobs() (Core::browse), the 1-s bins also list their jobs: each second's slot holds the
// first of an intrusive doubly-linked list through the jobs' own prev/next links (which a delayed
// job does not otherwise use), so the topic's delayed jobs can be visited second by second, in
// time order, without a per-job structure of their own. Adding links the job at the list's front
// (the slot is already at hand: two or three stores, and the previous front, usually the job
// pushed just before, is touched); removing unlinks it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "delayq/job.h"
#include "engine/bin_counts.h"

namespace delayq::engine {

class DueBins {
 public:
  static constexpr uint32_t kNoJob = BinCounts::kNoHead;

  // Counts job `j`, due at `due`, and links it into its second's list. `jobs[i]` must have
  // uint32_t members prev and next, which the list owns while the job is counted here.
  template <class Jobs>
  void add(TimePoint due, uint32_t j, Jobs& jobs) {
    const size_t i = add(due);
    auto& job = jobs[j];
    job.prev = kNoJob;
    job.next = levels_[0].bins.head(i);
    if (job.next != kNoJob) jobs[job.next].prev = j;
    levels_[0].bins.head(i) = j;
  }
  // Precondition: `job` was added at `due` and not removed since.
  template <class Job, class Jobs>
  void remove(TimePoint due, Job& job, Jobs& jobs) {
    if (job.prev != kNoJob)
      jobs[job.prev].next = job.next;
    else
      levels_[0].bins.head(second_slot(due)) = job.next;
    if (job.next != kNoJob) jobs[job.next].prev = job.prev;
    job.prev = job.next = kNoJob;
    remove(due);
  }
  // The counts alone (no list): add() returns the second's slot.
  size_t add(TimePoint due);
  // Precondition: a job due at `due` was added and not removed since.
  void remove(TimePoint due);

  // The second (since 1970, rounded down) that `t` falls in.
  static int64_t second_of(TimePoint t) { return bin_of(t, 1'000'000'000); }
  // The first second at or after `sec` that holds a job, if any. Walks hours, then that hour's
  // minutes, then that minute's seconds (at most 60 probes each), and jumps an empty stretch of
  // hours with BinCounts::next_at_or_after.
  std::optional<int64_t> next_second(int64_t sec) const;
  // The first job of second `sec`'s list (kNoJob: none).
  uint32_t first_in_second(int64_t sec) const;
  // A copy that takes no more memory than its bins need (BinCounts::fitted), for reading.
  DueBins fitted() const;
  // The windows of the jobs counted, as of `now` (no job due by then), `delayed` of them in all.
  DueWindows windows(TimePoint now, uint64_t delayed) const;

 private:
  struct Level {
    int64_t width_ns;
    BinCounts bins;
    size_t last = BinCounts::npos;  // the slot last touched (checked by its key before use)
  };
  static int64_t bin_of(TimePoint t, int64_t width_ns);
  // The 1-s slot of a counted `due` (through the `last` cache).
  size_t second_slot(TimePoint due);
  // The jobs in bins [from, to) of `l`.
  static uint64_t sum(const Level& l, int64_t from, int64_t to);

  std::array<Level, 3> levels_{Level{1'000'000'000, {}}, Level{60'000'000'000, {}},
                               Level{3'600'000'000'000, {}}};
};

}  // namespace delayq::engine
