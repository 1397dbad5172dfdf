#include "delayq/timing_wheel.h"

#include <algorithm>

namespace delayq {

TimingWheel::TimingWheel(uint64_t start) : levels_(kLevels), elapsed_(start) {
  for (Level& l : levels_) {
    l.slot.fill(Slot{});
    l.bits.fill(0);
    l.summary = 0;
  }
}

void TimingWheel::free_blocks(uint32_t head) {
  while (head != kNil) {
    const uint32_t next = blocks_[head].next;
    blocks_[head].next = free_block_;
    free_block_ = head;
    head = next;
  }
}

// Rewrites the slot's references without the stale ones, in order, into the front of its own
// chain, and frees the blocks left over.
void TimingWheel::compact(Slot& s, uint32_t loc) {
  uint32_t out = s.head;
  uint32_t used = 0;
  for (uint32_t b = s.head; b != kNil; b = blocks_[b].next) {
    const uint32_t n = blocks_[b].n;
    for (uint32_t i = 0; i < n; ++i) {
      const Ref r = blocks_[b].ref[i];
      if (!valid(r, loc)) continue;
      if (used == kRefsPerBlock) {
        blocks_[out].n = used;
        out = blocks_[out].next;
        used = 0;
      }
      blocks_[out].ref[used++] = r;
    }
  }
  blocks_[out].n = used;
  free_blocks(blocks_[out].next);
  blocks_[out].next = kNil;
  s.tail = out;
  s.refs = s.live;
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
  const uint32_t loc = static_cast<uint32_t>(level) * kSlots + slot;
  uint32_t b = l.slot[slot].head;
  l.slot[slot] = Slot{};  // entries put back into this slot (later rounds) start a new chain
  clear_bit(l, slot);
  // References are in schedule order: re-placing them in order keeps equal deadlines firing
  // first-scheduled first.
  while (b != kNil) {
    const Block& blk = blocks_[b];
    const uint32_t n = blk.n;
    if (blk.next != kNil) __builtin_prefetch(&blocks_[blk.next]);
    for (uint32_t i = 0; i < n; ++i) __builtin_prefetch(&nodes_[ref_index(blk.ref[i])]);
    for (uint32_t i = 0; i < n; ++i) {
      const Ref r = blocks_[b].ref[i];  // re-read: place() may grow the block slab
      if (valid(r, loc)) place(ref_index(r));
    }
    const uint32_t next = blocks_[b].next;
    blocks_[b].next = free_block_;
    free_block_ = b;
    b = next;
  }
}

size_t TimingWheel::memory_bytes() const {
  return nodes_.memory_bytes() + blocks_.memory_bytes() + levels_.capacity() * sizeof(Level) +
         due_.capacity() * sizeof(Ref);
}

}  // namespace delayq
