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
// Entries are 24-byte nodes in a slab, addressed by a Handle (index + generation). A slot holds
// references to its nodes (index + generation, 8 bytes) in a chain of 64-byte blocks: schedule
// appends to the slot's last block, and emptying a slot reads its references in order (prefetching
// the nodes), never chasing one node's pointer to find the next. Cancel frees the node at once
// and leaves a stale reference, which is skipped when the slot is emptied; a slot whose stale
// references outnumber its live ones is compacted, so memory follows the live entries even when
// most entries are cancelled (order timeouts: most orders are paid). A stale handle (fired,
// cancelled) cancels nothing, however long the wheel runs: a node's generation moves on with
// each schedule and each release and never comes back to a value it had; a node that has used
// up its 32-bit generations (2^31 schedules of that one node) is retired, never reused, which
// costs 24 bytes per 2^31 schedules (10 KB a day at 10 million schedules a second).
//
// Ticks at the ends of the range: a deadline at or before elapsed() (tick 0 included) fires on
// the next advance(); a deadline at or beyond kMaxTick is held at kMaxTick - 1, the end of time
// (~2.9e8 years at a 1 ms tick), so no deadline can wrap around into the past. advance() takes
// any tick up to UINT64_MAX.
//
// Ordering: entries fire in deadline order; entries with the same deadline fire in the order
// they were scheduled.
//
// Not thread-safe: one thread owns a wheel (see TimerService for a threaded face).
#pragma once

#include <algorithm>
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
  // Deadlines at or above this tick are held at kMaxTick - 1 (far beyond any real use: ~2.9e8
  // years at 1 ms).
  static constexpr uint64_t kMaxTick = std::numeric_limits<uint64_t>::max() / 2;

  struct Handle {
    uint32_t index = 0;
    uint32_t gen = 0;  // 0 never names a live entry; never reissued for the same index
    explicit operator bool() const { return gen != 0; }
    bool operator==(const Handle&) const = default;
  };

  // `start` is the tick the wheel begins at: deadlines at or before it are due at once.
  explicit TimingWheel(uint64_t start = 0);

  // Schedules `payload` to fire when advance() reaches `deadline` (a tick). A deadline at or
  // before elapsed() fires on the next advance(); one at or beyond kMaxTick is held at
  // kMaxTick - 1 (and reported so by deadline() and on_fire). O(1); may grow the slab.
  Handle schedule(uint64_t deadline, uint64_t payload);

  // Cancels a pending entry. Returns false, changing nothing, if the handle is stale (the entry
  // fired or was cancelled) or was never issued by this wheel. O(1).
  bool cancel(Handle h);

  // True if h names an entry that has not fired and was not cancelled.
  bool pending(Handle h) const {
    return h.gen != 0 && h.index < nodes_.size() && nodes_[h.index].gen == h.gen &&
           nodes_[h.index].loc != kFree;
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

  // Declared here, defined only by tests (tests/unit/timing_wheel_test.cc): reaches the private
  // state to build cases that take billions of operations to reach (a node's last generations).
  struct TestAccess;
  friend struct TestAccess;

 private:
  static constexpr uint32_t kNil = 0xffffffffu;
  static constexpr uint32_t kDue = 0xfffffffeu;   // loc of an entry in the due list
  static constexpr uint32_t kFree = 0xfffffffdu;  // loc of a free node
  // The last generation a node may reach. A free node on the free list has at most
  // kLastGen - 2, so its next schedule and release stay within it; release() retires a node
  // instead of letting its generation wrap around to values its old handles hold.
  static constexpr uint32_t kLastGen = 0xffffffffu;
  static constexpr size_t kWords = (kSlots + 63) / 64;
  static_assert(kWords <= 64, "the summary word must cover a level's bitmap");

  struct Node {
    uint64_t deadline;
    uint64_t payload;  // while free: the next free node
    uint32_t gen;      // goes up when the node is scheduled, fires or is cancelled
    uint32_t loc;      // level * kSlots + slot, kDue, or kFree
  };
  static_assert(sizeof(Node) == 24);

  // A reference to a node: (gen << 32) | index. Stale once the node's gen moved on.
  using Ref = uint64_t;
  static Ref ref_of(uint32_t idx, uint32_t gen) { return (uint64_t{gen} << 32) | idx; }
  static uint32_t ref_index(Ref r) { return static_cast<uint32_t>(r); }

  static constexpr uint32_t kRefsPerBlock = 7;
  struct Block {
    Ref ref[kRefsPerBlock];
    uint32_t next;  // next block of the slot, or of the free list
    uint32_t n;     // refs used
  };
  static_assert(sizeof(Block) == 64);

  struct Slot {
    uint32_t head = kNil, tail = kNil;  // block chain, oldest first
    uint32_t live = 0;                  // pending entries
    uint32_t refs = 0;                  // references held (live + stale)
  };

  struct Level {
    std::array<Slot, kSlots> slot;
    std::array<uint64_t, kWords> bits;  // bit set <=> slot.live > 0
    uint64_t summary;                   // bit w set <=> bits[w] != 0
  };

  struct Expiration {
    int level;
    uint32_t slot;
    uint64_t time;  // tick at which the slot's range starts
  };

  uint32_t alloc(uint64_t deadline, uint64_t payload);
  void release(uint32_t idx);
  bool valid(Ref r, uint32_t loc) const {
    const Node& n = nodes_[ref_index(r)];
    return n.gen == static_cast<uint32_t>(r >> 32) && n.loc == loc;
  }
  void place(uint32_t idx);  // files a node by its deadline against elapsed_
  void append(Slot& s, Ref r);
  uint32_t alloc_block();
  void free_blocks(uint32_t head);
  void compact(Slot& s, uint32_t loc);
  void set_bit(Level& l, uint32_t slot);
  void clear_bit(Level& l, uint32_t slot);
  // Next occupied slot at or after `from`; kNil when none.
  static uint32_t find_from(const Level& l, uint32_t from);
  std::optional<Expiration> next_expiration() const;
  // Empties a slot into the due list or lower levels (in schedule order).
  void drain_slot(int level, uint32_t slot);

  detail::Slab<Node> nodes_;
  uint32_t free_node_ = kNil;
  detail::Slab<Block, 10> blocks_;
  uint32_t free_block_ = kNil;
  std::vector<Level> levels_;
  std::vector<Ref> due_;  // entries with deadline <= elapsed_, in firing order
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
  if (free_node_ != kNil) {
    idx = free_node_;
    free_node_ = static_cast<uint32_t>(nodes_[idx].payload);
  } else {
    idx = nodes_.emplace_back();
  }
  Node& n = nodes_[idx];
  n.deadline = deadline;
  n.payload = payload;
  ++n.gen;  // from 0 (a new node) or at most kLastGen - 2 (a free one): never 0, never wraps
  return idx;
}

inline void TimingWheel::release(uint32_t idx) {
  Node& n = nodes_[idx];
  n.loc = kFree;
  // Stales every handle and reference to the node. A node past kLastGen - 2 has no generation
  // left that it never had: it is retired, left off the free list for good.
  if (++n.gen > kLastGen - 2) return;
  n.payload = free_node_;
  free_node_ = idx;
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

inline uint32_t TimingWheel::alloc_block() {
  uint32_t b;
  if (free_block_ != kNil) {
    b = free_block_;
    free_block_ = blocks_[b].next;
  } else {
    b = blocks_.emplace_back();
  }
  blocks_[b].next = kNil;
  return b;
}

// Every block of a chain but the last is full (compact() keeps it so), so the last block's fill
// follows from s.refs and appending only writes to the block: no read that could miss.
inline void TimingWheel::append(Slot& s, Ref r) {
  const uint32_t used = s.refs % kRefsPerBlock;
  if (used == 0) {
    const uint32_t b = alloc_block();
    if (s.tail == kNil) s.head = b; else blocks_[s.tail].next = b;
    s.tail = b;
  }
  Block& b = blocks_[s.tail];
  b.ref[used] = r;
  b.n = used + 1;
  ++s.refs;
}

inline void TimingWheel::place(uint32_t idx) {
  Node& n = nodes_[idx];
  const uint64_t d = n.deadline;
  if (d <= elapsed_) {
    n.loc = kDue;
    due_.push_back(ref_of(idx, n.gen));
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
  Slot& s = l.slot[slot];
  n.loc = static_cast<uint32_t>(k) * kSlots + slot;
  append(s, ref_of(idx, n.gen));
  if (s.live++ == 0) set_bit(l, slot);
}

inline TimingWheel::Handle TimingWheel::schedule(uint64_t deadline, uint64_t payload) {
  const uint32_t idx = alloc(std::min(deadline, kMaxTick - 1), payload);
  place(idx);
  ++live_;
  return Handle{idx, nodes_[idx].gen};
}

inline bool TimingWheel::cancel(Handle h) {
  if (!pending(h)) return false;
  const uint32_t loc = nodes_[h.index].loc;
  release(h.index);
  --live_;
  if (loc != kDue) {
    Level& l = levels_[loc / kSlots];
    const uint32_t slot = loc % kSlots;
    Slot& s = l.slot[slot];
    if (--s.live == 0) {
      clear_bit(l, slot);
      free_blocks(s.head);  // every reference left is stale
      s = Slot{};
    } else if (s.refs > 2 * s.live + kRefsPerBlock) {
      compact(s, loc);
    }
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
      const Ref r = due_[due_pos_++];
      if (!valid(r, kDue)) continue;  // cancelled
      const uint32_t idx = ref_index(r);
      const uint64_t payload = nodes_[idx].payload, deadline = nodes_[idx].deadline;
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
