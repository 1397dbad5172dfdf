#include "delayq/timing_wheel.h"

#include <algorithm>

namespace delayq {

TimingWheel::TimingWheel(uint64_t start) : levels_(kLevels), elapsed_(start) {
  for (Level& l : levels_) {
    l.head.fill(kNil);
    l.count.fill(0);
    l.bits.fill(0);
    l.summary = 0;
  }
}

uint32_t TimingWheel::find_from(const Level& l, uint32_t from) {
  if (from >= kSlots) return kNil;
  const uint32_t word = from >> 6;
  const uint64_t here = l.bits[word] & (~uint64_t{0} << (from & 63));
  if (here) return word * 64 + static_cast<uint32_t>(std::countr_zero(here));
  const uint64_t later = l.summary & (~uint64_t{0} << (word + 1));
  if (!later) return kNil;
  const uint32_t w = static_cast<uint32_t>(std::countr_zero(later));
  return w * 64 + static_cast<uint32_t>(std::countr_zero(l.bits[w]));
}

std::optional<TimingWheel::Expiration> TimingWheel::next_expiration() const {
  for (int k = 0; k < kLevels; ++k) {
    const Level& l = levels_[k];
    if (l.summary == 0) continue;
    const uint64_t span = slot_span(k);
    const uint64_t block = (elapsed_ / level_span(k)) * level_span(k);
    const uint32_t cur = static_cast<uint32_t>((elapsed_ / span) % kSlots);
    if (k < kLevels - 1) {
      // Entries below the top level all lie in the current block, after `cur`.
      const uint32_t s = find_from(l, cur);
      assert(s != kNil);
      return Expiration{k, s, block + s * span};
    }
    // Top level: slots after `cur` come this revolution, the others (including `cur`, which can
    // only hold later rounds) the next one. For a later round this is a lower bound: draining
    // the slot puts such entries back.
    uint32_t s = find_from(l, cur + 1);
    if (s != kNil) return Expiration{k, s, block + s * span};
    s = find_from(l, 0);
    assert(s != kNil && s <= cur);
    return Expiration{k, s, block + level_span(k) + s * span};
  }
  return std::nullopt;
}

std::optional<uint64_t> TimingWheel::next_deadline() const {
  if (due_pos_ < due_.size()) return elapsed_;
  const std::optional<Expiration> e = next_expiration();
  if (!e) return std::nullopt;
  return e->time;
}

void TimingWheel::drain_slot(int level, uint32_t slot) {
  Level& l = levels_[level];
  uint32_t i = l.head[slot];
  l.head[slot] = kNil;
  l.count[slot] = 0;
  clear_bit(l, slot);
  // The list is newest first: reverse it so entries are re-placed in schedule order, which keeps
  // equal deadlines firing first-scheduled first.
  uint32_t prev = kNil;
  while (i != kNil) {
    const uint32_t next = nodes_[i].next;
    nodes_[i].next = prev;
    prev = i;
    i = next;
  }
  for (i = prev; i != kNil;) {
    const uint32_t next = nodes_[i].next;
    if (nodes_[i].dead) {
      release(i);
    } else {
      place(i);
    }
    i = next;
  }
}

size_t TimingWheel::memory_bytes() const {
  return nodes_.memory_bytes() + levels_.capacity() * sizeof(Level) +
         due_.capacity() * sizeof(uint32_t);
}

}  // namespace delayq
