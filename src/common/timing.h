// What every backend shares to fill TopicTiming (include/delayq/job.h) the same way: which
// lateness bucket a delivery falls in, and where the windows of "what fires when" end. The Redis
// backend's scripts mirror both (src/redis/lua/prelude.lua: LATE_BOUNDS, due_windows()); a test
// holds them to these.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "delayq/job.h"

namespace delayq::timing {

inline constexpr size_t kBuckets = Lateness::kBounds.size() + 1;

namespace detail {

constexpr std::array<int64_t, Lateness::kBounds.size()> bounds_ns() {
  std::array<int64_t, Lateness::kBounds.size()> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = Lateness::kBounds[i].count();
  return out;
}
inline constexpr auto kBoundsNs = bounds_ns();

// For each bit width w of a lateness in ns, the first bucket that a value of that width can fall
// in (the first bound at or above 2^(w-1)). Consecutive bounds are at least a factor of 2 apart,
// so from there at most two comparisons find the bucket.
constexpr std::array<uint8_t, 65> first_buckets() {
  std::array<uint8_t, 65> out{};
  for (int w = 0; w <= 64; ++w) {
    const uint64_t lowest = w == 0 ? 0 : uint64_t{1} << (w - 1);
    size_t i = 0;
    while (i < kBoundsNs.size() && static_cast<uint64_t>(kBoundsNs[i]) < lowest) ++i;
    out[static_cast<size_t>(w)] = static_cast<uint8_t>(i);
  }
  return out;
}
inline constexpr auto kFirstBucket = first_buckets();

constexpr bool bounds_double() {
  for (size_t i = 1; i < kBoundsNs.size(); ++i)
    if (kBoundsNs[i] < 2 * kBoundsNs[i - 1]) return false;
  return true;
}
static_assert(bounds_double(), "lateness_bucket() relies on each bound being twice the last");

}  // namespace detail

// The bucket of a lateness of `ns` >= 0 nanoseconds: the first whose bound is >= ns, or the last
// (+Inf). A few nanoseconds: it runs on every delivery.
inline size_t lateness_bucket(int64_t ns) {
  size_t i = detail::kFirstBucket[static_cast<size_t>(std::bit_width(static_cast<uint64_t>(ns)))];
  while (i < detail::kBoundsNs.size() && ns > detail::kBoundsNs[i]) ++i;
  return i;
}

// Counts one delivery handed out `ns` after its due time (a negative one as 0, and as clamped).
inline void record(Lateness& l, int64_t ns) {
  if (ns < 0) {
    ++l.clamped;
    ns = 0;
  }
  ++l.buckets[lateness_bucket(ns)];
  ++l.count;
  l.sum_seconds += static_cast<double>(ns) * 1e-9;
}

inline void add(Lateness& into, const Lateness& more) {
  for (size_t i = 0; i < kBuckets; ++i) into.buckets[i] += more.buckets[i];
  into.count += more.count;
  into.sum_seconds += more.sum_seconds;
  into.clamped += more.clamped;
}

inline void add(DueWindows& into, const DueWindows& more) {
  into.next_minute += more.next_minute;
  into.next_hour += more.next_hour;
  into.next_day += more.next_day;
  into.next_week += more.next_week;
  into.beyond += more.beyond;
}

// Parts of one topic from several shards (or nodes): windows and lateness added, the oldest
// ready job the oldest of all.
inline void add(TopicTiming& into, const TopicTiming& more) {
  add(into.due, more.due);
  if (more.oldest_ready > into.oldest_ready) into.oldest_ready = more.oldest_ready;
  add(into.first, more.first);
  add(into.retry, more.retry);
}

// The bound of the bucket that holds the quantile `q` (0 < q <= 1) of `l`'s deliveries (the
// delivery of rank ceil(q * count)): nullopt when there are none, Duration::max() when it lies in
// the last bucket (more than 4 h). What a histogram can tell: "p99 at most 25 ms".
inline std::optional<Duration> quantile_bound(const Lateness& l, double q) {
  if (l.count == 0) return std::nullopt;
  const double rank = std::max(1.0, std::ceil(q * static_cast<double>(l.count)));
  uint64_t seen = 0;
  for (size_t i = 0; i < Lateness::kBounds.size(); ++i) {
    seen += l.buckets[i];
    if (static_cast<double>(seen) >= rank) return Lateness::kBounds[i];
  }
  return Duration::max();
}

// Where the windows of DueWindows end, as of `now`: a delayed job due before `minute` is in
// next_minute, else before `hour` in next_hour, and so on; at or after `week`, beyond. Each end
// is a whole unit after `now` rounded down to a finer one, so that a backend can count jobs in
// absolute bins of 1 s, 1 min and 1 h and answer exactly (the engine: src/engine/due_bins.h).
struct DueBounds {
  TimePoint minute, hour, day, week;
};
// `now` held a little over a week from either end of representable time, where the rounding
// and the sums below would overflow (only a clock far off, or a test, goes there).
inline TimePoint bounded_now(TimePoint now) {
  constexpr Duration kMargin = std::chrono::hours(24 * 8);
  return std::clamp(now, TimePoint::min() + kMargin, TimePoint::max() - kMargin);
}
inline DueBounds due_bounds(TimePoint now) {
  using namespace std::chrono;
  now = bounded_now(now);
  const TimePoint hour = floor<hours>(now);
  return DueBounds{floor<seconds>(now) + 60s, floor<minutes>(now) + 60min, hour + 24h, hour + 168h};
}

// Counts one delayed job due at `due` in its window (the reference the backends are tested
// against, and what a backend that sees every job may use).
inline void count_due(DueWindows& w, TimePoint due, const DueBounds& b) {
  if (due < b.minute)
    ++w.next_minute;
  else if (due < b.hour)
    ++w.next_hour;
  else if (due < b.day)
    ++w.next_day;
  else if (due < b.week)
    ++w.next_week;
  else
    ++w.beyond;
}

}  // namespace delayq::timing
