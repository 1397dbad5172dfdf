// A count per bin (a 64-bit bin number), for DueBins (due_bins.h): an open-addressing table with
// linear probing and backward-shift deletion, so that a bin costs no allocation of its own (a
// node-based map allocates when a bin gets its first job and frees when it loses its last: for
// jobs spread over weeks, that is every push and every job falling due). The table doubles when
// half full and does not shrink: it stays sized for the most bins it held at once.
//
// Each bin also has a `head`, a job index the table only carries (DueBins keeps the first job of
// a second's list there, for list_jobs()); a slot is 16 bytes either way.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace delayq::engine {

class BinCounts {
 public:
  static constexpr size_t npos = std::numeric_limits<size_t>::max();
  static constexpr uint32_t kNoHead = std::numeric_limits<uint32_t>::max();

  // The slot of bin `b`, or npos.
  size_t find(int64_t b) const {
    if (slots_.empty()) return npos;
    for (size_t i = home(b);; i = next(i)) {
      if (slots_[i].key == b) return i;
      if (slots_[i].key == kEmpty) return npos;
    }
  }
  // The slot of bin `b`, added with a count of 0 when absent. Slots found before are void.
  size_t insert(int64_t b) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    for (size_t i = home(b);; i = next(i)) {
      if (slots_[i].key == b) return i;
      if (slots_[i].key == kEmpty) {
        slots_[i] = Slot{b, 0};
        ++size_;
        return i;
      }
    }
  }
  // Removes the bin in slot `i`. Slots found before are void.
  void erase(size_t i) {
    // Backward shift: each later entry of the run moves into the hole if its home is not after
    // the hole, so that every entry stays reachable from its home without tombstones.
    size_t hole = i;
    for (size_t j = next(i); slots_[j].key != kEmpty; j = next(j)) {
      const size_t h = home(slots_[j].key);
      if (((j - h) & mask()) >= ((j - hole) & mask())) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --size_;
  }
  // A copy in the smallest table that holds its bins (at most half full), for a copy that is
  // only read: the table itself keeps the size of its peak.
  BinCounts fitted() const {
    BinCounts c;
    if (size_ == 0) return c;
    c.slots_.assign(std::bit_ceil(2 * size_), Slot{});
    c.shift_ = 64 - std::countr_zero(c.slots_.size());
    for_each([&](int64_t b, uint32_t n) { c.slots_[c.insert(b)].count = n; });
    return c;
  }
  int64_t key(size_t i) const { return slots_[i].key; }
  // A core holds fewer than 2^32 jobs (job indices are 32 bits), so a count fits 32 bits.
  uint32_t& count(size_t i) { return slots_[i].count; }
  uint32_t count(size_t i) const { return slots_[i].count; }
  uint32_t& head(size_t i) { return slots_[i].head; }
  uint32_t head(size_t i) const { return slots_[i].head; }
  // The smallest bin >= `from`, if any: probes `from` onwards for as many bins as the table has
  // slots, then visits the table. At most twice capacity() steps, whatever the gap.
  std::optional<int64_t> next_at_or_after(int64_t from) const {
    if (size_ == 0) return std::nullopt;
    // Bins are seconds, minutes or hours since 1970: `from + k` is far from overflowing.
    for (size_t k = 0; k < slots_.size(); ++k)
      if (find(from + static_cast<int64_t>(k)) != npos) return from + static_cast<int64_t>(k);
    std::optional<int64_t> best;
    for (const Slot& s : slots_)
      if (s.key != kEmpty && s.key >= from && (!best || s.key < *best)) best = s.key;
    return best;
  }
  size_t size() const { return size_; }
  // How many slots for_each() visits.
  size_t capacity() const { return slots_.size(); }
  // fn(bin, count) for every bin.
  template <class F>
  void for_each(F&& fn) const {
    for (const Slot& s : slots_)
      if (s.key != kEmpty) fn(s.key, s.count);
  }

 private:
  // No bin is this far before 1970 (bins are of 1 s or more).
  static constexpr int64_t kEmpty = std::numeric_limits<int64_t>::min();
  struct Slot {
    int64_t key = kEmpty;
    uint32_t count = 0;
    uint32_t head = kNoHead;
  };

  size_t mask() const { return slots_.size() - 1; }
  size_t next(size_t i) const { return (i + 1) & mask(); }
  // Fibonacci hashing: consecutive bins spread over the table.
  size_t home(int64_t b) const {
    return static_cast<size_t>((static_cast<uint64_t>(b) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow() {
    const size_t n = std::max<size_t>(16, 2 * slots_.size());
    std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(n));
    shift_ = 64 - std::countr_zero(slots_.size());
    size_ = 0;
    for (const Slot& s : old)
      if (s.key != kEmpty) slots_[insert(s.key)] = s;
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
  int shift_ = 64;
};

}  // namespace delayq::engine
