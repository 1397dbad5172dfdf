// The wheel against a std::multimap reference model: same schedules, cancels and advances, and
// the same firings in the same order. Kept whole: every case drives the one wheel API against
// the one model and helpers at the top, and the memory cases close it.
#include "delayq/timing_wheel.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <unordered_map>
#include <vector>

namespace delayq {
namespace {

using Fired = std::vector<std::pair<uint64_t, uint64_t>>;  // (deadline, payload)

// The model: a multimap keeps equal keys in insertion order, which is the wheel's promise for
// equal deadlines.
class Model {
 public:
  void schedule(uint64_t deadline, uint64_t payload) {
    const uint64_t key = std::max(deadline, elapsed_);
    it_[payload] = m_.emplace(key, std::make_pair(deadline, payload));
  }
  bool cancel(uint64_t payload) {
    auto f = it_.find(payload);
    if (f == it_.end()) return false;
    m_.erase(f->second);
    it_.erase(f);
    return true;
  }
  Fired advance(uint64_t now) {
    Fired out;
    while (!m_.empty() && m_.begin()->first <= now) {
      out.push_back(m_.begin()->second);
      it_.erase(m_.begin()->second.second);
      m_.erase(m_.begin());
    }
    elapsed_ = std::max(elapsed_, now);
    return out;
  }
  std::optional<uint64_t> min() const {
    if (m_.empty()) return std::nullopt;
    return m_.begin()->first;
  }
  size_t size() const { return m_.size(); }

 private:
  using Map = std::multimap<uint64_t, std::pair<uint64_t, uint64_t>>;
  Map m_;
  std::unordered_map<uint64_t, Map::iterator> it_;
  uint64_t elapsed_ = 0;
};

Fired advance(TimingWheel& w, uint64_t now) {
  Fired out;
  w.advance(now, [&](uint64_t payload, uint64_t deadline) { out.emplace_back(deadline, payload); });
  return out;
}

constexpr uint64_t kL1 = TimingWheel::level_span(0);  // 3600
constexpr uint64_t kL2 = TimingWheel::level_span(1);  // 3600^2
constexpr uint64_t kL3 = TimingWheel::level_span(2);  // 3600^3: the top level's revolution

TEST(TimingWheel, LevelTableDerivesFromSlots) {
  EXPECT_EQ(TimingWheel::slot_span(0), 1u);
  EXPECT_EQ(TimingWheel::slot_span(1), 3600u);
  EXPECT_EQ(TimingWheel::slot_span(2), 3600u * 3600u);
  EXPECT_EQ(kL3, 3600ull * 3600ull * 3600ull);
}

TEST(TimingWheel, FiresExactlyAtDeadlineNeverEarly) {
  TimingWheel w;
  for (uint64_t d : std::vector<uint64_t>{1, 3599, 3600, 3601, 7199, kL2 + 17, kL3 - 1, kL3 + 5,
                     5 * kL3 + 123456}) {
    TimingWheel::Handle h = w.schedule(d, d);
    EXPECT_TRUE(w.pending(h));
    EXPECT_TRUE(advance(w, d - 1).empty()) << "fired early: " << d;
    const Fired f = advance(w, d);
    ASSERT_EQ(f.size(), 1u) << d;
    EXPECT_EQ(f[0].first, d);
    EXPECT_FALSE(w.pending(h));
  }
  EXPECT_TRUE(w.empty());
}

TEST(TimingWheel, NextDeadlineIsALowerBoundThatConverges) {
  TimingWheel w;
  const uint64_t d = 2 * kL2 + 5 * kL1 + 42;
  w.schedule(d, 1);
  uint64_t steps = 0;
  for (;;) {
    std::optional<uint64_t> nd = w.next_deadline();
    ASSERT_TRUE(nd);
    ASSERT_LE(*nd, d);
    if (*nd == d) break;
    EXPECT_TRUE(advance(w, *nd).empty());
    ASSERT_LT(++steps, 4u) << "one step per level at most";
  }
  EXPECT_EQ(advance(w, d).size(), 1u);
  EXPECT_FALSE(w.next_deadline());
}

TEST(TimingWheel, EqualDeadlinesFireInScheduleOrderAcrossCascades) {
  TimingWheel w;
  const uint64_t d = kL2 + 3 * kL1 + 7;
  w.schedule(d, 1);               // lands at level 2 from elapsed 0
  advance(w, kL2 + 10);           // moves it down
  w.schedule(d, 2);               // level 1 now
  advance(w, kL2 + 3 * kL1 + 1);  // both in level 0
  w.schedule(d, 3);
  const Fired f = advance(w, d);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].second, 1u);
  EXPECT_EQ(f[1].second, 2u);
  EXPECT_EQ(f[2].second, 3u);
}

TEST(TimingWheel, StaleHandlesCancelNothing) {
  TimingWheel w;
  TimingWheel::Handle a = w.schedule(10, 1);
  EXPECT_TRUE(w.cancel(a));
  EXPECT_FALSE(w.cancel(a));
  TimingWheel::Handle b = w.schedule(10, 2);  // may reuse a's node
  EXPECT_FALSE(w.cancel(a));
  EXPECT_TRUE(w.pending(b));
  EXPECT_EQ(advance(w, 10).size(), 1u);
  EXPECT_FALSE(w.cancel(b));
  EXPECT_FALSE(w.cancel(TimingWheel::Handle{12345, 1}));
  EXPECT_FALSE(w.cancel(TimingWheel::Handle{}));
}

}  // namespace

// The test hook declared in timing_wheel.h: sets a free node's generation, as ~2^31 schedules
// and cancels of that node would (a free node's generation is at most kLastGen - 2: see
// release()).
struct TimingWheel::TestAccess {
  static void set_free_generation(TimingWheel& w, uint32_t index, uint32_t gen) {
    ASSERT_EQ(w.nodes_[index].loc, kFree);
    ASSERT_LE(gen, kLastGen - 2);
    w.nodes_[index].gen = gen;
  }
};

namespace {

// A handle stays stale for good: a node's generation moves on with each use and never comes
// back to a value it had (once 32 bits of generations are used up, the node is retired). Built
// at the end of the range with the test hook; each of the last generations is one the node
// reaches by reuse (the odd and even ones alike).
TEST(TimingWheel, AStaleHandleNeverMatchesANewerEntryAtTheEndOfTheGenerations) {
  for (const uint32_t start : {UINT32_MAX - 5, UINT32_MAX - 4, UINT32_MAX - 3, UINT32_MAX - 2}) {
    SCOPED_TRACE(start);
    TimingWheel w;
    std::vector<TimingWheel::Handle> issued{w.schedule(10, 0)};  // generation 1
    ASSERT_TRUE(w.cancel(issued[0]));
    TimingWheel::TestAccess::set_free_generation(w, issued[0].index, start);
    for (uint64_t i = 1; i <= 6; ++i) {
      const TimingWheel::Handle h = w.schedule(10 + i, i);
      ASSERT_TRUE(h);
      ASSERT_TRUE(w.pending(h));
      for (const TimingWheel::Handle& old : issued) {
        EXPECT_NE(h, old) << "reissued: index " << h.index << " generation " << h.gen;
        EXPECT_FALSE(w.pending(old));
        EXPECT_FALSE(w.cancel(old)) << "a stale handle cancelled a newer entry";
      }
      ASSERT_TRUE(w.pending(h));
      issued.push_back(h);
      if (i % 2) {
        ASSERT_TRUE(w.cancel(h));
      } else {
        ASSERT_EQ(advance(w, 10 + i).size(), 1u);  // firing frees the node too
      }
    }
    EXPECT_TRUE(w.empty());
  }
}

TEST(TimingWheel, CancelledSlotIsSkippedByNextDeadline) {
  TimingWheel w;
  TimingWheel::Handle a = w.schedule(100, 1);
  w.schedule(200, 2);
  EXPECT_EQ(w.next_deadline(), 100u);
  w.cancel(a);
  EXPECT_EQ(w.next_deadline(), 200u);
  w.schedule(100, 3);  // reuses the slot that still links the cancelled node
  const Fired f = advance(w, 1000);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].second, 3u);
  EXPECT_EQ(f[1].second, 2u);
}

TEST(TimingWheel, CallbackMayScheduleAndCancel) {
  TimingWheel w;
  TimingWheel::Handle victim = w.schedule(50, 99);
  w.schedule(10, 1);
  Fired out;
  w.advance(60, [&](uint64_t p, uint64_t d) {
    out.emplace_back(d, p);
    if (p == 1) {
      w.cancel(victim);
      w.schedule(20, 2);  // in the past of `now`: fires in this same advance
      w.schedule(70, 3);  // later
    }
  });
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].second, 2u);
  EXPECT_EQ(advance(w, 70).size(), 1u);
}

// The ends of the tick range. A deadline at or before elapsed() fires on the next advance(),
// tick 0 included; one at or beyond kMaxTick is held at kMaxTick - 1 (the end of time: ~2.9e8
// years at a 1 ms tick), and is never taken for an earlier tick.
TEST(TimingWheel, DeadlinesAtTheEndsOfTheTickRange) {
  constexpr uint64_t kEnd = TimingWheel::kMaxTick - 1;
  {
    TimingWheel w;
    w.schedule(0, 1);
    EXPECT_EQ(advance(w, 0), (Fired{{0, 1}}));
  }
  {
    TimingWheel w(5 * kL3);
    w.schedule(0, 1);
    w.schedule(5 * kL3 - 1, 2);
    EXPECT_EQ(w.next_deadline(), 5 * kL3);
    EXPECT_EQ(advance(w, 5 * kL3), (Fired{{0, 1}, {5 * kL3 - 1, 2}}));
  }
  // Near the end: started three revolutions of the top level before it.
  const uint64_t start = kEnd - 3 * kL3 - 12345;
  TimingWheel w(start);
  const TimingWheel::Handle last = w.schedule(kEnd, 1);
  const TimingWheel::Handle beyond = w.schedule(TimingWheel::kMaxTick, 2);
  const TimingWheel::Handle far_beyond = w.schedule(UINT64_MAX, 3);
  w.schedule(kEnd - 1, 4);
  for (const TimingWheel::Handle& h : {last, beyond, far_beyond}) {
    ASSERT_TRUE(w.pending(h));
    EXPECT_EQ(w.deadline(h), kEnd);
  }
  // Stepping the way a driver does (to next_deadline()) reaches them without firing early.
  Fired fired;
  for (int steps = 0; fired.empty(); ++steps) {
    ASSERT_LT(steps, 20) << "next_deadline() makes no progress";
    const std::optional<uint64_t> nd = w.next_deadline();
    ASSERT_TRUE(nd);
    ASSERT_GE(*nd, w.elapsed());
    ASSERT_LE(*nd, kEnd - 1);
    fired = advance(w, *nd);
  }
  EXPECT_EQ(fired, (Fired{{kEnd - 1, 4}}));
  EXPECT_TRUE(advance(w, kEnd - 1).empty());
  EXPECT_EQ(advance(w, UINT64_MAX), (Fired{{kEnd, 1}, {kEnd, 2}, {kEnd, 3}}));
  EXPECT_EQ(w.elapsed(), UINT64_MAX);
  // After the end every deadline is in the past: due at the next advance, in schedule order.
  w.schedule(7, 5);
  w.schedule(UINT64_MAX, 6);
  EXPECT_EQ(w.next_deadline(), UINT64_MAX);
  EXPECT_EQ(advance(w, UINT64_MAX), (Fired{{7, 5}, {kEnd, 6}}));
  EXPECT_TRUE(w.empty());
}

TEST(TimingWheel, JumpsOverEmptySlotsAfterLongSleep) {
  TimingWheel w;
  w.schedule(10 * kL3 + 1, 1);  // ten top-level revolutions away
  // One advance call covers it: the number of slot visits is bounded by levels and rounds, not
  // by the ticks in between (4.7e11 here), so this returns at once.
  EXPECT_EQ(advance(w, 20 * kL3).size(), 1u);
  EXPECT_EQ(w.elapsed(), 20 * kL3);
}

// Randomised: a mix of schedule / cancel / advance over deadlines spread across all levels and
// past the top level, checked step by step against the model.
void RunRandomised(uint64_t seed, int ops) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  TimingWheel w;
  Model m;
  std::unordered_map<uint64_t, TimingWheel::Handle> handles;
  std::vector<uint64_t> live;
  uint64_t now = 0, next_payload = 1;
  auto rand_delta = [&]() -> uint64_t {
    switch (rng() % 6) {
      case 0: return rng() % 8;             // due now or almost
      case 1: return rng() % kL1;           // level 0
      case 2: return rng() % kL2;           // level 1
      case 3: return rng() % kL3;           // level 2
      case 4: return rng() % (4 * kL3);     // past the top level: rounds
      default: return (rng() % 5) * kL1;    // slot boundaries
    }
  };
  for (int i = 0; i < ops; ++i) {
    const uint64_t r = rng() % 100;
    if (r < 55) {
      const uint64_t d = now + rand_delta() - (rng() % 4 == 0 ? std::min<uint64_t>(now, 3) : 0);
      const uint64_t p = next_payload++;
      handles[p] = w.schedule(d, p);
      m.schedule(d, p);
      live.push_back(p);
    } else if (r < 70 && !live.empty()) {
      const size_t k = rng() % live.size();
      const uint64_t p = live[k];
      live[k] = live.back();
      live.pop_back();
      const bool expect = m.cancel(p);
      ASSERT_EQ(w.cancel(handles[p]), expect) << "cancel " << p;
      ASSERT_FALSE(w.cancel(handles[p]));
    } else {
      std::optional<uint64_t> nd = w.next_deadline();
      std::optional<uint64_t> mm = m.min();
      ASSERT_EQ(nd.has_value(), mm.has_value());
      if (nd) {
        ASSERT_LE(*nd, *mm) << "next_deadline must be a lower bound";
      }
      uint64_t target = now + rand_delta();
      if (rng() % 3 == 0 && nd) target = *nd;  // as a driver would
      now = std::max(now, target);
      const Fired got = advance(w, now);
      const Fired want = m.advance(now);
      ASSERT_EQ(got, want) << "at now=" << now;
      for (const auto& f : got) ASSERT_LE(f.first, now);
    }
    ASSERT_EQ(w.size(), m.size());
  }
  // Drain everything the way a driver does: sleep until next_deadline(), advance, repeat. Each
  // step must make progress (a lower bound that never moved would spin a driver forever).
  size_t steps = 0;
  const size_t max_steps = 8 * (w.size() + 4);
  while (std::optional<uint64_t> nd = w.next_deadline()) {
    ASSERT_LT(++steps, max_steps) << "next_deadline() stopped making progress at " << *nd;
    now = std::max(now, *nd);
    ASSERT_EQ(advance(w, now), m.advance(now));
  }
  EXPECT_EQ(m.size(), 0u);
}

TEST(TimingWheel, RandomisedAgainstMultimap) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    RunRandomised(seed, 4000);
    if (HasFatalFailure()) return;
  }
}

// Few distinct deadlines and many cancels: slots hold long chains of stale references and get
// compacted over and over, interleaved with firing, against the model.
TEST(TimingWheel, RandomisedHeavyCancelOnCrowdedSlots) {
  for (uint64_t seed = 200; seed <= 215; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    TimingWheel w;
    Model m;
    std::vector<std::pair<uint64_t, TimingWheel::Handle>> live;
    uint64_t now = 0, p = 1;
    for (int i = 0; i < 20000; ++i) {
      const uint64_t r = rng() % 100;
      if (r < 50) {
        const uint64_t d = now + 1 + (rng() % 4) * (rng() % 2 ? 1 : kL1);
        live.emplace_back(p, w.schedule(d, p));
        m.schedule(d, p);
        ++p;
      } else if (r < 95 && !live.empty()) {
        const size_t k = rng() % live.size();
        ASSERT_EQ(w.cancel(live[k].second), m.cancel(live[k].first));
        live[k] = live.back();
        live.pop_back();
      } else {
        now += rng() % 3;
        ASSERT_EQ(advance(w, now), m.advance(now)) << "at " << now;
      }
      ASSERT_EQ(w.size(), m.size());
    }
    now += 4 * kL1;
    ASSERT_EQ(advance(w, now), m.advance(now));
  }
}

TEST(TimingWheel, RandomisedWithFarStartingPoint) {
  // Start deep into the tick range so block arithmetic is not only exercised near zero.
  for (uint64_t seed = 100; seed <= 110; ++seed) {
    std::mt19937_64 rng(seed);
    const uint64_t start = rng() % (1ull << 50);
    TimingWheel w(start);
    Model m;
    m.advance(start);
    uint64_t now = start;
    for (int i = 0; i < 3000; ++i) {
      if (rng() % 2) {
        const uint64_t d = now + rng() % (2 * kL3);
        w.schedule(d, i);
        m.schedule(d, i);
      } else {
        now += rng() % kL2;
        ASSERT_EQ(advance(w, now), m.advance(now)) << "seed " << seed;
      }
    }
  }
}

// docs/design.md, "Nodes and slot blocks": a slot is 16 bytes, so a level is 3600 of them, its
// bitmap (57 words) and its summary word; an empty wheel holds its three levels and nothing else.
TEST(TimingWheel, AnEmptyWheelHoldsOnlyItsLevels) {
  const size_t level = 3600 * 16 + 57 * 8 + 8;
  EXPECT_EQ(level, 58064u);
  EXPECT_EQ(TimingWheel().memory_bytes(), 3 * level);
}

TEST(TimingWheel, MemoryPerEntryIsAtMost64Bytes) {
  TimingWheel w;
  const size_t n = 200000;
  for (size_t i = 0; i < n; ++i) w.schedule(1 + i * 7919 % (kL3 * 2), i);
  EXPECT_LE(static_cast<double>(w.memory_bytes()) / n, 64.0);
}

// Order timeouts: every tick 300 orders arrive with a 30-minute timeout (1800 ticks here) and
// 95% of them are paid, i.e. cancelled, within a minute. Memory must follow the live entries,
// not every entry ever scheduled in the window.
TEST(TimingWheel, MemoryFollowsLiveEntriesWhenMostAreCancelled) {
  TimingWheel w;
  std::mt19937_64 rng(5);
  std::vector<std::vector<TimingWheel::Handle>> by_tick;
  size_t fired = 0;
  for (uint64_t t = 0; t < 2500; ++t) {
    by_tick.emplace_back();
    for (int i = 0; i < 300; ++i) by_tick.back().push_back(w.schedule(t + 1800, i));
    if (t >= 60)
      for (TimingWheel::Handle h : by_tick[t - 60])
        if (rng() % 100 < 95) w.cancel(h);
    fired += advance(w, t).size();
  }
  ASSERT_GT(w.size(), 10000u);
  const double per_live = static_cast<double>(w.memory_bytes()) / w.size();
  EXPECT_LE(per_live, 96.0) << w.size() << " live entries hold " << w.memory_bytes() << " bytes";
  EXPECT_GT(fired, 0u);
}

}  // namespace
}  // namespace delayq
