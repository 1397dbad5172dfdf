// TimingWheel: a hierarchical timing wheel over integer ticks.
//
// Levels of kSlots = 3600 slots; a slot of level k spans 3600^k ticks, so a level covers 3600
// of its slots and one slot of the level above:
//
//   level | slot span   | level range  | at 1 ms tick         | at 1 s tick
//   ------+-------------+--------------+----------------------+---------------------
//     0   | 1           | 3600         | 1 ms / 3.6 s         | 1 s / 1 h
//     1   | 3600        | 3600^2       | 3.6 s / 3.6 h        | 1 h / 150 days
//     2   | 3600^2      | 3600^3       | 3.6 h / 540 days     | 150 days / 1480 years
//
// Every entry keeps its absolute deadline (in ticks). An entry lives in the lowest level whose
// current block holds its deadline: level k when deadline and `elapsed` agree on every digit
// above k (digits in base 3600). Deadlines beyond the top level's current block go to the top
// level at slot (deadline / 3600^2) % 3600; the round they belong to, deadline / 3600^3, is the
// classic wheel's cycle-num. It is derived from the deadline, never counted down per tick.
//
// Worked example (level 0 and 1 only, elapsed = 7000): an entry due at 7100 shares 7000's level-1
// slot (7000 / 3600 == 7100 / 3600 == 1), so it goes to level 0, slot 7100 % 3600 = 3500. An
// entry due at 9000 does not (9000 / 3600 == 2) but shares the level-2 block, so it goes to level
// 1, slot 2. When time reaches 7200, the start of level-1 slot 2, that slot is emptied and 9000
// is re-inserted against elapsed = 7200: now it shares the level-1 slot, so it lands in level 0,
// slot 1800, and fires when time reaches 9000 exactly. Upper levels never round a deadline.
//
// Occupancy bitmaps (3600 bits and a summary word per level) let next_deadline() and advance()
// find the next occupied slot in a few bit scans; after a long sleep advance() jumps straight
// from one occupied slot to the next, never stepping through empty ones.
//
// Entries are nodes in a slab (32 bytes each), addressed by a Handle (index + generation).
// Slot lists are singly linked and cancel is lazy: it marks the node and decrements its slot's
// live count (clearing the slot's bit when that reaches zero); the node's memory is reclaimed
// when the slot is next emptied or reused. A stale handle (fired, cancelled) cancels nothing.
//
// Ordering: entries fire in deadline order; entries with the same deadline fire in the order
// they were scheduled.
//
// Not thread-safe: one thread owns a wheel (see TimerService for a threaded face).
#pragma once

#include <array>
#include <bit>
#include <cassert>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "delayq/detail/slab.h"

namespace delayq {

class TimingWheel {
 public:
  static constexpr uint64_t kSlots = 3600;
  static constexpr int kLevels = 3;
  // Ticks spanned by one slot of level k.
  static constexpr uint64_t slot_span(int k) {
    uint64_t s = 1;
    for (int i = 0; i < k; ++i) s *= kSlots;
    return s;
  }
  // Ticks covered by a whole level k (= one slot of level k + 1).
  static constexpr uint64_t level_span(int k) { return slot_span(k + 1); }
  // Deadlines are refused at or above this tick (far beyond any real use: ~5.8e8 years at 1 ms).
  static constexpr uint64_t kMaxTick = std::numeric_limits<uint64_t>::max() / 2;

  struct Handle {
    uint32_t index = 0;
    uint32_t gen = 0;  // 0 never names a live entry
    explicit operator bool() const { return gen != 0; }
    bool operator==(const Handle&) const = default;
  };

  // `start` is the tick the wheel begins at: deadlines at or before it are due at once.
  explicit TimingWheel(uint64_t start = 0);

  // Schedules `payload` to fire when advance() reaches `deadline` (a tick). A deadline at or
  // before elapsed() fires on the next advance(). Precondition: deadline < kMaxTick.
  // O(1); may grow the slab.
  Handle schedule(uint64_t deadline, uint64_t payload);

  // Cancels a pending entry. Returns false, changing nothing, if the handle is stale (the entry
  // fired or was cancelled) or was never issued by this wheel. O(1).
  bool cancel(Handle h);

  // True if h names an entry that has not fired and was not cancelled.
  bool pending(Handle h) const {
    return h.index < nodes_.size() && nodes_[h.index].gen == h.gen && nodes_[h.index].live();
  }
  // The deadline of a pending entry (precondition: pending(h)).
  uint64_t deadline(Handle h) const { return nodes_[h.index].deadline; }
  // The payload of a pending entry (precondition: pending(h)).
  uint64_t payload(Handle h) const { return nodes_[h.index].payload; }

  // Fires every entry whose deadline is <= now, in deadline order, calling
  // on_fire(payload, deadline) for each, then sets elapsed() to max(elapsed(), now).
  // on_fire may schedule and cancel entries (an entry it schedules at or before `now` fires in
  // this same call); it must not call advance(). Returns the number of entries fired.
  template <class F>
  size_t advance(uint64_t now, F&& on_fire);

  // A lower bound on the earliest pending deadline: exact when that entry sits in level 0 or is
  // already due, the start of its slot when it sits higher (an advance() to that tick then moves
  // it down and the next call is more exact). nullopt when nothing is pending. A few bit scans.
  std::optional<uint64_t> next_deadline() const;

  uint64_t elapsed() const { return elapsed_; }
  size_t size() const { return live_; }
  bool empty() const { return live_ == 0; }
  // Bytes held by the slab and the level arrays (for memory accounting).
  size_t memory_bytes() const;

 private:
  static constexpr uint32_t kNil = 0xffffffffu;
  static constexpr uint32_t kDue = 0xfffffffeu;   // loc of an entry in the due list
  static constexpr uint32_t kFree = 0xfffffffdu;  // loc of a node on the free list
  static constexpr size_t kWords = (kSlots + 63) / 64;
  static_assert(kWords <= 64, "the summary word must cover a level's bitmap");

  struct Node {
    uint64_t deadline;
    uint64_t payload;
    uint32_t next;
    uint32_t gen;
    uint32_t loc;   // level * kSlots + slot, kDue, or kFree
    uint32_t dead;  // 1 once cancelled while still linked
    bool live() const { return loc != kFree && dead == 0; }
  };
  static_assert(sizeof(Node) == 32);

  struct Level {
    std::array<uint32_t, kSlots> head;   // LIFO list; reversed when the slot is emptied
    std::array<uint32_t, kSlots> count;  // live entries in the slot
    std::array<uint64_t, kWords> bits;   // bit set <=> count > 0
    uint64_t summary;                    // bit w set <=> bits[w] != 0
  };

  struct Expiration {
    int level;
    uint32_t slot;
    uint64_t time;  // tick at which the slot's range starts
  };

  uint32_t alloc(uint64_t deadline, uint64_t payload);
  void release(uint32_t idx);
  void place(uint32_t idx);  // links a node by its deadline against elapsed_
  void set_bit(Level& l, uint32_t slot);
  void clear_bit(Level& l, uint32_t slot);
  // Next occupied slot at or after `from` (circular when wrap); kNil when none.
  static uint32_t find_from(const Level& l, uint32_t from);
  std::optional<Expiration> next_expiration() const;
  // Empties a slot into the due list or lower levels (in schedule order).
  void drain_slot(int level, uint32_t slot);

  detail::Slab<Node> nodes_;
  uint32_t free_head_ = kNil;
  std::vector<Level> levels_;
  std::vector<uint32_t> due_;  // entries with deadline <= elapsed_, in firing order
  size_t due_pos_ = 0;
  uint64_t elapsed_;
  size_t live_ = 0;
  // A lower bound on the tick at which any occupied slot next comes due (0 while the due list
  // holds entries): advance() to a tick below it only moves elapsed_, without a bit scan.
  uint64_t horizon_ = UINT64_MAX;
};

// ---- implementation of the hot paths ----

inline uint32_t TimingWheel::alloc(uint64_t deadline, uint64_t payload) {
  uint32_t idx;
  if (free_head_ != kNil) {
    idx = free_head_;
    free_head_ = nodes_[idx].next;
  } else {
    idx = nodes_.emplace_back();
    nodes_[idx] = Node{0, 0, kNil, 0, kFree, 0};
  }
  Node& n = nodes_[idx];
  n.deadline = deadline;
  n.payload = payload;
  n.dead = 0;
  if (++n.gen == 0) n.gen = 1;  // skip the "never issued" generation on wrap-around
  return idx;
}

inline void TimingWheel::release(uint32_t idx) {
  Node& n = nodes_[idx];
  n.loc = kFree;
  n.dead = 0;
  n.next = free_head_;
  free_head_ = idx;
}

inline void TimingWheel::set_bit(Level& l, uint32_t slot) {
  l.bits[slot >> 6] |= uint64_t{1} << (slot & 63);
  l.summary |= uint64_t{1} << (slot >> 6);
}

inline void TimingWheel::clear_bit(Level& l, uint32_t slot) {
  uint64_t& w = l.bits[slot >> 6];
  w &= ~(uint64_t{1} << (slot & 63));
  if (w == 0) l.summary &= ~(uint64_t{1} << (slot >> 6));
}

inline void TimingWheel::place(uint32_t idx) {
  Node& n = nodes_[idx];
  const uint64_t d = n.deadline;
  if (d <= elapsed_) {
    n.loc = kDue;
    due_.push_back(idx);
    horizon_ = 0;
    return;
  }
  // The lowest level whose current block (a slot of the level above) holds d.
  int k = 0;
  while (k < kLevels - 1 && d / level_span(k) != elapsed_ / level_span(k)) ++k;
  const uint32_t slot = static_cast<uint32_t>((d / slot_span(k)) % kSlots);
  // The slot comes due at d rounded down to its span (for a later round of the top level, in
  // that round: skipping earlier passes over the slot loses nothing).
  const uint64_t start = d - d % slot_span(k);
  if (start < horizon_) horizon_ = start;
  Level& l = levels_[k];
  if (l.count[slot] == 0 && l.head[slot] != kNil) {
    // Only cancelled nodes remain linked here: reclaim them before reuse.
    for (uint32_t i = l.head[slot]; i != kNil;) {
      const uint32_t next = nodes_[i].next;
      release(i);
      i = next;
    }
    l.head[slot] = kNil;
  }
  n.next = l.head[slot];
  n.loc = static_cast<uint32_t>(k) * kSlots + slot;
  l.head[slot] = idx;
  if (l.count[slot]++ == 0) set_bit(l, slot);
}

inline TimingWheel::Handle TimingWheel::schedule(uint64_t deadline, uint64_t payload) {
  assert(deadline < kMaxTick);
  const uint32_t idx = alloc(deadline, payload);
  place(idx);
  ++live_;
  return Handle{idx, nodes_[idx].gen};
}

inline bool TimingWheel::cancel(Handle h) {
  if (!pending(h)) return false;
  Node& n = nodes_[h.index];
  n.dead = 1;
  if (++n.gen == 0) n.gen = 1;
  --live_;
  if (n.loc != kDue) {
    Level& l = levels_[n.loc / kSlots];
    const uint32_t slot = n.loc % kSlots;
    if (--l.count[slot] == 0) clear_bit(l, slot);
  }
  return true;
}

template <class F>
size_t TimingWheel::advance(uint64_t now, F&& on_fire) {
  // Below the horizon no slot comes due: only time moves.
  if (now < horizon_ && due_pos_ >= due_.size()) {
    if (now > elapsed_) elapsed_ = now;
    return 0;
  }
  size_t fired = 0;
  for (;;) {
    // Fire what is due, in order. on_fire may append to due_ (or cancel entries in it).
    while (due_pos_ < due_.size()) {
      const uint32_t idx = due_[due_pos_++];
      Node& n = nodes_[idx];
      if (n.dead) {
        release(idx);
        continue;
      }
      const uint64_t payload = n.payload, deadline = n.deadline;
      if (++n.gen == 0) n.gen = 1;
      release(idx);
      --live_;
      ++fired;
      on_fire(payload, deadline);
    }
    due_.clear();
    due_pos_ = 0;
    const std::optional<Expiration> e = next_expiration();
    if (!e || e->time > now) {
      horizon_ = e ? e->time : UINT64_MAX;
      break;
    }
    elapsed_ = e->time;
    drain_slot(e->level, e->slot);
  }
  if (now > elapsed_) elapsed_ = now;
  return fired;
}

}  // namespace delayq
