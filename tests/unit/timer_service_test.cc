// TimerService and its parts: SmallCallback (the callable stored in place), TimerTable (the
// single-threaded state, checked against a multimap model) and the service's contract on its
// own thread (never early, cancel, re-entrant callbacks, stop). No test depends on speed: the
// threaded ones wait for what must happen, with a generous limit.
//
// Kept whole over ~400 lines: SmallCallback and TimerTable are parts of the one TimerService, and
// their tests and the service's share the Counted callable that checks every construction and
// destruction.
#include <gtest/gtest.h>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
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

// ---- extreme times ----

// CPU time this process has used (all its threads).
Duration process_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// "Never" never comes: Duration::max() (and any delay past the end of steady_clock's range, about
// 292 years after boot) and time_point::max() are held at the end of that range instead of
// wrapping into the past. They stay pending and cancellable, and the driver sleeps meanwhile
// (it does not spin on a deadline it cannot arm for). A callback due soon after them still runs.
TEST(TimerService, NeverIsNeverAndLeavesTheDriverAsleep) {
  TimerService timers;
  std::atomic<int> early{0};
  std::atomic<bool> marker{false};
  std::vector<TimerService::Handle> never{
      timers.schedule_after(Duration::max(), [&] { early.fetch_add(1); }),
      timers.schedule_at(Steady::time_point::max(), [&] { early.fetch_add(1); }),
      timers.schedule_after(Duration::max() - 1ns, [&] { early.fetch_add(1); }),
      timers.schedule_after(std::chrono::hours(24 * 365 * 200), [&] { early.fetch_add(1); }),
      timers.schedule_at(Steady::time_point::max() - 1ns, [&] { early.fetch_add(1); }),
      timers.schedule_after(
          std::chrono::duration_cast<Duration>(Steady::time_point::max() - Steady::now()),
          [&] { early.fetch_add(1); }),
  };
  const Duration cpu_before = process_cpu();
  const auto wall_before = Steady::now();
  std::this_thread::sleep_for(300ms);
  timers.schedule_after(20ms, [&] { marker.store(true); });
  ASSERT_TRUE(eventually([&] { return marker.load(); }));
  std::this_thread::sleep_for(100ms);
  const Duration cpu = process_cpu() - cpu_before;
  const Duration wall = Steady::now() - wall_before;
  EXPECT_EQ(early.load(), 0);
  EXPECT_EQ(timers.pending(), never.size());
  // A driver spinning on a wrapped-around deadline burns a core; asleep it uses next to nothing.
  EXPECT_LT(cpu, wall / 3) << "the driver kept busy while waiting for 'never'";
  for (const TimerService::Handle& h : never) EXPECT_TRUE(timers.cancel(h));
  EXPECT_EQ(timers.pending(), 0u);
}

// The past runs now: a negative delay, Duration::min(), an instant before the service started and
// time_point::min() (which once wrapped around to the far future and never ran).
TEST(TimerService, ThePastAndTheStartOfTimeRunAtOnce) {
  TimerService timers;
  std::atomic<int> ran{0};
  timers.schedule_at(Steady::time_point::min(), [&] { ran.fetch_add(1); });
  timers.schedule_at(Steady::time_point::min() + 1ns, [&] { ran.fetch_add(1); });
  timers.schedule_at(Steady::time_point{}, [&] { ran.fetch_add(1); });
  timers.schedule_at(Steady::now() - 1h, [&] { ran.fetch_add(1); });
  timers.schedule_after(Duration::min(), [&] { ran.fetch_add(1); });
  timers.schedule_after(-1h, [&] { ran.fetch_add(1); });
  timers.schedule_after(0ns, [&] { ran.fetch_add(1); });
  EXPECT_TRUE(eventually([&] { return ran.load() == 7; })) << ran.load() << " of 7 ran";
  EXPECT_EQ(timers.pending(), 0u);
}

// ---- callbacks that throw ----

// An exception from a callback is caught on the driver thread and handed to the error handler;
// the callbacks after it (the same tick included) still run, and the service goes on.
TEST(TimerService, ACallbackThatThrowsIsReportedAndTheOthersStillRun) {
  std::mutex mu;
  std::vector<std::string> errors;
  TimerService timers(1ms, [&](std::exception_ptr e) {
    std::lock_guard lock(mu);
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      errors.push_back(x.what());
    } catch (int i) {
      errors.push_back("int " + std::to_string(i));
    }
  });
  std::atomic<int> ran{0};
  const auto at = Steady::now() + 5ms;  // one instant: one firing
  timers.schedule_at(at, [&] { ran.fetch_add(1); });
  timers.schedule_at(at, [] { throw std::runtime_error("boom"); });
  timers.schedule_at(at, [&] { ran.fetch_add(1); });
  timers.schedule_at(at, [] { throw 7; });
  timers.schedule_at(at, [&] { ran.fetch_add(1); });
  ASSERT_TRUE(eventually([&] { return ran.load() == 3; }));
  timers.schedule_after(1ms, [&] { ran.fetch_add(1); });
  ASSERT_TRUE(eventually([&] { return ran.load() == 4; }));
  std::lock_guard lock(mu);
  EXPECT_EQ(errors, (std::vector<std::string>{"boom", "int 7"}));
}

// Without an error handler the exception is written to stderr. A handler that throws itself is
// reported there too; neither stops the service.
TEST(TimerService, WithoutAHandlerTheExceptionGoesToStderr) {
  std::atomic<int> ran{0};
  ::testing::internal::CaptureStderr();
  {
    TimerService timers;
    timers.schedule_after(0ms, [] { throw std::logic_error("no handler here"); });
    timers.schedule_after(2ms, [&] { ran.fetch_add(1); });
    EXPECT_TRUE(eventually([&] { return ran.load() == 1; }));
  }
  {
    TimerService timers(1ms, [](std::exception_ptr) { throw std::runtime_error("handler"); });
    timers.schedule_after(0ms, [] { throw std::runtime_error("callback"); });
    timers.schedule_after(2ms, [&] { ran.fetch_add(1); });
    EXPECT_TRUE(eventually([&] { return ran.load() == 2; }));
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("delayq::TimerService: a callback threw: no handler here"), std::string::npos)
      << err;
  EXPECT_NE(err.find("delayq::TimerService: the error handler threw: handler"), std::string::npos)
      << err;
}

// ---- stop and destruction from inside a callback; scheduling after stop ----

// stop() from a callback does not join the driver (it is the thread running it): it returns at
// once, no other callback runs afterwards (not even one due at the same tick), what was pending
// is dropped, and the destructor, on another thread, joins as usual.
TEST(TimerService, StopFromInsideACallbackStopsWithoutWaitingForItself) {
  int live = 0, calls = 0;
  std::atomic<bool> stopped{false};
  std::atomic<int> after{0};
  {
    TimerService timers;
    // First: the temporary's destructor (this thread) is done before the driver can stop.
    timers.schedule_after(1h, Counted(&live, &calls));
    const auto at = Steady::now() + 5ms;
    timers.schedule_at(at, [&] {
      timers.stop();
      timers.stop();  // idempotent there too
      stopped.store(true);
    });
    timers.schedule_at(at, [&] { after.fetch_add(1); });  // same tick, after the stop
    ASSERT_TRUE(eventually([&] { return stopped.load(); }));
    EXPECT_EQ(timers.pending(), 0u);
    EXPECT_FALSE(timers.schedule_after(0ms, [&] { after.fetch_add(1); }));
    EXPECT_EQ(live, 0) << "stop() drops what is pending";
  }
  EXPECT_EQ(after.load(), 0);
  EXPECT_EQ(calls, 0);
}

// stop() from another thread waits for the callback running now to return; the callbacks of the
// same firing that had not started are dropped, not run.
TEST(TimerService, StopFromAnotherThreadWaitsForTheRunningCallback) {
  TimerService timers;
  std::atomic<bool> started{false}, finished{false};
  std::atomic<int> after{0};
  const auto at = Steady::now() + 5ms;
  timers.schedule_at(at, [&] {
    started.store(true);
    std::this_thread::sleep_for(100ms);
    finished.store(true);
  });
  timers.schedule_at(at, [&] { after.fetch_add(1); });
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  timers.stop();
  EXPECT_TRUE(finished.load());
  EXPECT_EQ(after.load(), 0);
  EXPECT_EQ(timers.pending(), 0u);
}

// Destroying the service from one of its callbacks: no join of itself (which aborted with
// "Resource deadlock avoided"); the driver thread finishes that callback, drops what is pending
// and exits, taking the service's state with it.
TEST(TimerService, DestroyedFromInsideItsOwnCallback) {
  auto token = std::make_shared<int>(0);
  const std::weak_ptr<int> alive = token;  // expires when the pending callable is destroyed
  std::atomic<int> after{0};
  std::atomic<bool> destroyed{false};
  auto* timers = new TimerService();
  const auto at = Steady::now() + 5ms;
  timers->schedule_at(at, [&, timers] {
    delete timers;
    destroyed.store(true);
  });
  timers->schedule_at(at, [&] { after.fetch_add(1); });
  timers->schedule_after(1h, [&, t = std::move(token)] { after.fetch_add(1); });
  ASSERT_TRUE(eventually([&] { return destroyed.load(); }));
  EXPECT_TRUE(eventually([&] { return alive.expired(); }))
      << "the pending callable was never dropped";
  EXPECT_EQ(after.load(), 0);

  // The same through a std::unique_ptr the callback resets.
  std::unique_ptr<TimerService> owned = std::make_unique<TimerService>();
  std::atomic<bool> reset{false};
  owned->schedule_after(0ms, [&] {
    owned.reset();
    reset.store(true);
  });
  EXPECT_TRUE(eventually([&] { return reset.load(); }));
}

// After stop() a schedule is refused plainly: the handle is empty, cancel() of it returns false,
// nothing is pending and the callable is destroyed without running.
TEST(TimerService, ScheduleAfterStopReturnsAnEmptyHandle) {
  int live = 0, calls = 0;
  TimerService timers;
  timers.stop();
  const TimerService::Handle h = timers.schedule_after(0ms, Counted(&live, &calls));
  EXPECT_FALSE(h);
  EXPECT_EQ(h, TimerService::Handle{});
  EXPECT_FALSE(timers.cancel(h));
  EXPECT_FALSE(timers.schedule_at(Steady::now(), Counted(&live, &calls)));
  EXPECT_EQ(timers.pending(), 0u);
  EXPECT_EQ(live, 0);
  std::this_thread::sleep_for(20ms);
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
