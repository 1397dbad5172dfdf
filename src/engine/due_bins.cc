// DueBins (due_bins.h).
#include "engine/due_bins.h"

#include <cassert>

#include "common/timing.h"

namespace delayq::engine {

int64_t DueBins::bin_of(TimePoint t, int64_t width_ns) {
  const int64_t ns = t.time_since_epoch().count();
  // Floor division: an instant before 1970 belongs to the bin that starts before it. No negation:
  // a restored record may hold the earliest TimePoint, whose negation does not fit.
  const int64_t q = ns / width_ns;
  return ns % width_ns < 0 ? q - 1 : q;
}

size_t DueBins::add(TimePoint due) {
  for (Level& l : levels_) {
    const int64_t b = bin_of(due, l.width_ns);
    if (l.last == BinCounts::npos || l.bins.key(l.last) != b) l.last = l.bins.insert(b);
    ++l.bins.count(l.last);
  }
  return levels_[0].last;  // each level has its own table: the later inserts left it valid
}

size_t DueBins::second_slot(TimePoint due) {
  Level& l = levels_[0];
  const int64_t b = bin_of(due, l.width_ns);
  if (l.last == BinCounts::npos || l.bins.key(l.last) != b) l.last = l.bins.find(b);
  assert(l.last != BinCounts::npos);
  return l.last;
}

namespace {
int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return a % b < 0 ? q - 1 : q;
}
}  // namespace

std::optional<int64_t> DueBins::next_second(int64_t s) const {
  const BinCounts& secs = levels_[0].bins;
  const BinCounts& mins = levels_[1].bins;
  const BinCounts& hours = levels_[2].bins;
  for (;;) {
    const int64_t h = floor_div(s, 3600);
    if (hours.find(h) == BinCounts::npos) {
      const std::optional<int64_t> n = hours.next_at_or_after(h + 1);
      if (!n) return std::nullopt;
      s = *n * 3600;
      continue;
    }
    const int64_t m = floor_div(s, 60);
    if (mins.find(m) == BinCounts::npos) {
      s = (m + 1) * 60;  // a counted hour has a counted minute: the walk ends within it
      continue;
    }
    if (secs.find(s) != BinCounts::npos) return s;
    ++s;
  }
}

uint32_t DueBins::first_in_second(int64_t sec) const {
  const size_t i = levels_[0].bins.find(sec);
  return i == BinCounts::npos ? kNoJob : levels_[0].bins.head(i);
}

void DueBins::remove(TimePoint due) {
  for (Level& l : levels_) {
    const int64_t b = bin_of(due, l.width_ns);
    const size_t i = l.last != BinCounts::npos && l.bins.key(l.last) == b ? l.last : l.bins.find(b);
    assert(i != BinCounts::npos && l.bins.count(i) > 0);
    if (i == BinCounts::npos) continue;
    if (--l.bins.count(i) == 0) {
      l.bins.erase(i);
      l.last = BinCounts::npos;
    } else {
      l.last = i;
    }
  }
}

DueBins DueBins::fitted() const {
  DueBins d;
  for (size_t i = 0; i < levels_.size(); ++i) d.levels_[i].bins = levels_[i].bins.fitted();
  return d;
}

uint64_t DueBins::sum(const Level& l, int64_t from, int64_t to) {
  uint64_t n = 0;
  if (l.bins.capacity() <= static_cast<size_t>(to - from)) {
    // A table smaller than the window: visit it all.
    l.bins.for_each([&](int64_t b, uint64_t count) {
      if (b >= from && b < to) n += count;
    });
    return n;
  }
  for (int64_t b = from; b < to; ++b)
    if (const size_t i = l.bins.find(b); i != BinCounts::npos) n += l.bins.count(i);
  return n;
}

DueWindows DueBins::windows(TimePoint now, uint64_t delayed) const {
  const timing::DueBounds e = timing::due_bounds(now);
  const Level& sec = levels_[0];
  const Level& min = levels_[1];
  const Level& hour = levels_[2];
  // Jobs due before each end: the bins from now's up to the end's, which is a bin boundary.
  const uint64_t minute = sum(sec, bin_of(now, sec.width_ns), bin_of(e.minute, sec.width_ns));
  const uint64_t in_hour = sum(min, bin_of(now, min.width_ns), bin_of(e.hour, min.width_ns));
  const int64_t from_h = bin_of(now, hour.width_ns);
  const uint64_t in_day = sum(hour, from_h, bin_of(e.day, hour.width_ns));
  const uint64_t in_week =
      in_day + sum(hour, bin_of(e.day, hour.width_ns), bin_of(e.week, hour.width_ns));
  // Each window holds the one before (timing.h), so none of these differences is negative.
  assert(minute <= in_hour && in_hour <= in_day && in_week <= delayed);
  const auto less = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
  return DueWindows{minute, less(in_hour, minute), less(in_day, in_hour), less(in_week, in_day),
                    less(delayed, in_week)};
}

}  // namespace delayq::engine
