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
#pragma once

#include <array>
#include <cstdint>

#include "delayq/job.h"
#include "engine/bin_counts.h"

namespace delayq::engine {

class DueBins {
 public:
  void add(TimePoint due);
  // Precondition: a job due at `due` was added and not removed since.
  void remove(TimePoint due);
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
  // The jobs in bins [from, to) of `l`.
  static uint64_t sum(const Level& l, int64_t from, int64_t to);

  std::array<Level, 3> levels_{Level{1'000'000'000, {}}, Level{60'000'000'000, {}},
                               Level{3'600'000'000'000, {}}};
};

}  // namespace delayq::engine
