// TimerService and its parts: SmallCallback (the callable stored in place), TimerTable (the
// single-threaded state, checked against a multimap model) and the service's contract on its
// own thread (never early, cancel, re-entrant callbacks, stop). No test depends on speed: the
// threaded ones wait for what must happen, with a generous limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "delayq/timer_service.h"
#include "wheel/timer_table.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using detail::SmallCallback;
using detail::TimerTable;
using Steady = std::chrono::steady_clock;

// Counts live copies of itself, so tests can see constructions and destructions.
struct Counted {
  explicit Counted(int* live, int* calls) : live(live), calls(calls) { ++*live; }
  Counted(Counted&& o) noexcept : live(o.live), calls(o.calls) { ++*live; }
  Counted(const Counted&) = delete;
  ~Counted() { --*live; }
  void operator()() const { ++*calls; }
  int* live;
  int* calls;
};

TEST(SmallCallback, StoresSmallCallablesInPlaceAndLargeOnesOnTheHeap) {
  struct Small {
    char b[SmallCallback::kInline];
    void operator()() const {}
  };
  struct Large {
    char b[SmallCallback::kInline + 1];
    void operator()() const {}
  };
  EXPECT_TRUE(SmallCallback::stored_inline<Small>());
  EXPECT_FALSE(SmallCallback::stored_inline<Large>());
  int n = 0;
  SmallCallback big([&n, pad = Large{}] { n += 1 + pad.b[0] * 0; });
  SmallCallback moved = std::move(big);
  EXPECT_FALSE(big);
  moved();
  EXPECT_EQ(n, 1);
}

TEST(SmallCallback, RelocatesAndDestroysEachCallableExactlyOnce) {
  int live = 0, calls = 0;
  {
    SmallCallback a(Counted(&live, &calls));
    EXPECT_EQ(live, 1);
    SmallCallback b = std::move(a);
    EXPECT_EQ(live, 1);
    b();
    SmallCallback c;
    c = std::move(b);
    c();
    EXPECT_EQ(live, 1);
    c = nullptr;
    EXPECT_EQ(live, 0);
    EXPECT_FALSE(c);
  }
  EXPECT_EQ(calls, 2);
}

TEST(SmallCallback, TakesMoveOnlyCallables) {
  auto p = std::make_unique<int>(7);
  int seen = 0;
  SmallCallback cb([p = std::move(p), &seen] { seen = *p; });
  SmallCallback other = std::move(cb);
  other();
  EXPECT_EQ(seen, 7);
}

// TimerTable against a model: random schedules (near, far, already due), cancels (of pending,
// fired and cancelled handles) and advances; every advance must hand out exactly the model's
// due entries, in (tick, schedule order), an entry scheduled already due counting as due now.
TEST(TimerTable, MatchesAMultimapModel) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    TimerTable table;
    std::map<std::pair<uint64_t, uint64_t>, uint64_t> model;  // (tick, seq) -> id
    std::vector<std::pair<TimerTable::Handle, std::pair<uint64_t, uint64_t>>> issued;
    std::vector<uint64_t> fired;
    std::vector<SmallCallback> due;
    uint64_t now = 0, seq = 0;
    for (int op = 0; op < 4000; ++op) {
      const int kind = static_cast<int>(rng() % 10);
      if (kind < 5) {
        const uint64_t reach = (rng() % 4 == 0) ? 20'000'000 : 5000;
        const uint64_t tick =
            now + rng() % reach - (rng() % 8 == 0 ? std::min(now, uint64_t{3}) : 0);
        const uint64_t id = seq++;
        // An entry already due fires at the next advance, after those scheduled before it.
        const auto key = std::make_pair(std::max(tick, now), id);
        issued.push_back({table.schedule(tick, [&fired, id] { fired.push_back(id); }), key});
        model.emplace(key, id);
      } else if (kind < 8 && !issued.empty()) {
        const auto& [h, key] = issued[rng() % issued.size()];
        SmallCallback out;
        const bool was_pending = model.erase(key) == 1;
        EXPECT_EQ(table.cancel(h, out), was_pending) << "seed " << seed << " op " << op;
        EXPECT_EQ(static_cast<bool>(out), was_pending);
      } else {
        now += (rng() % 3 == 0) ? rng() % 10'000'000 : rng() % 300;
        table.take_due(now, due);
        for (auto& cb : due) cb();
        due.clear();
        std::vector<uint64_t> expect;
        while (!model.empty() && model.begin()->first.first <= now) {
          expect.push_back(model.begin()->second);
          model.erase(model.begin());
        }
        ASSERT_EQ(fired, expect) << "seed " << seed << " op " << op << " now " << now;
        fired.clear();
      }
      ASSERT_EQ(table.size(), model.size());
    }
  }
}

// Waits until pred() holds or 30 s have passed; returns pred().
template <class P>
bool eventually(P pred) {
  const auto limit = Steady::now() + 30s;
  while (!pred() && Steady::now() < limit) std::this_thread::sleep_for(1ms);
  return pred();
}

TEST(TimerService, NeverRunsACallbackEarly) {
  TimerService timers;
  constexpr int kN = 200;
  std::vector<Steady::time_point> due(kN), ran(kN);
  std::atomic<int> done{0};
  for (int i = 0; i < kN; ++i) {
    const Duration delay = std::chrono::microseconds(i * 97 % 20000);
    due[i] = Steady::now() + delay;
    timers.schedule_after(delay, [&, i] {
      ran[i] = Steady::now();
      done.fetch_add(1);
    });
  }
  ASSERT_TRUE(eventually([&] { return done.load() == kN; }));
  timers.stop();
  for (int i = 0; i < kN; ++i) EXPECT_GE(ran[i], due[i]) << i;
}

TEST(TimerService, CancelStopsAPendingCallbackOnce) {
  TimerService timers;
  std::atomic<int> runs{0};
  const auto h = timers.schedule_after(1h, [&] { runs.fetch_add(1); });
  EXPECT_EQ(timers.pending(), 1u);
  EXPECT_TRUE(timers.cancel(h));
  EXPECT_FALSE(timers.cancel(h));
  EXPECT_EQ(timers.pending(), 0u);
  EXPECT_FALSE(timers.cancel(TimerService::Handle{}));
}

TEST(TimerService, CancelAfterTheCallbackRanReturnsFalse) {
  TimerService timers;
  std::atomic<int> runs{0};
  const auto h = timers.schedule_after(0ms, [&] { runs.fetch_add(1); });
  ASSERT_TRUE(eventually([&] { return runs.load() == 1; }));
  EXPECT_FALSE(timers.cancel(h));
}

// The driver sleeps until the earliest callback; one scheduled earlier must wake it.
TEST(TimerService, AnEarlierCallbackWakesTheDriver) {
  TimerService timers;
  std::atomic<bool> soon{false};
  timers.schedule_after(1h, [] {});
  timers.schedule_after(2ms, [&] { soon.store(true); });
  EXPECT_TRUE(eventually([&] { return soon.load(); }));
}

// Callbacks run without the lock: they may schedule, cancel and ask for pending().
TEST(TimerService, CallbacksMayScheduleAndCancel) {
  TimerService timers;
  std::atomic<bool> second{false}, third{false}, cancelled{false};
  const auto later = timers.schedule_after(1h, [&] { third.store(true); });
  timers.schedule_after(0ms, [&] {
    cancelled.store(timers.cancel(later));
    (void)timers.pending();
    timers.schedule_after(1ms, [&] { second.store(true); });
  });
  ASSERT_TRUE(eventually([&] { return second.load(); }));
  EXPECT_TRUE(cancelled.load());
  EXPECT_FALSE(third.load());
}

// A cancelled callable is destroyed after the lock is released: its destructor may call back.
TEST(TimerService, ACancelledCallableIsDestroyedWithoutTheLock) {
  TimerService timers;
  struct CallsBack {
    TimerService* t;
    std::shared_ptr<int> alive = std::make_shared<int>(0);
    CallsBack(TimerService* t) : t(t) {}
    CallsBack(CallsBack&& o) noexcept = default;
    ~CallsBack() {
      if (alive && alive.use_count() == 1) (void)t->pending();
    }
    void operator()() const {}
  };
  const auto h = timers.schedule_after(1h, CallsBack(&timers));
  EXPECT_TRUE(timers.cancel(h));
}

TEST(TimerService, StopDropsWhatIsPendingAndIsIdempotent) {
  int live = 0, calls = 0;
  {
    TimerService timers;
    timers.schedule_after(1h, Counted(&live, &calls));
    EXPECT_EQ(live, 1);
    timers.stop();
    timers.stop();
  }
  EXPECT_EQ(live, 0);
  EXPECT_EQ(calls, 0);
}

// Several threads schedule and cancel at once (for ThreadSanitizer); every callback either ran
// or was cancelled, never both.
TEST(TimerService, ThreadsScheduleAndCancelConcurrently) {
  TimerService timers;
  constexpr int kThreads = 4, kEach = 2000;
  std::atomic<int> ran{0}, cancelled{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<TimerService::Handle> hs;
      for (int i = 0; i < kEach; ++i)
        hs.push_back(timers.schedule_after(std::chrono::microseconds(rng() % 5000),
                                           [&] { ran.fetch_add(1); }));
      for (size_t i = 0; i < hs.size(); i += 2) cancelled += timers.cancel(hs[i]);
    });
  for (auto& th : threads) th.join();
  EXPECT_TRUE(eventually([&] { return ran.load() + cancelled.load() == kThreads * kEach; }));
  EXPECT_EQ(timers.pending(), 0u);
}

}  // namespace
}  // namespace delayq
