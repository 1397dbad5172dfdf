// Micro-benchmarks: the TimingWheel against two baselines, at 1K, 100K, 1M and 4M pending entries.
//
//   wheel  delayq::TimingWheel (public header only).
//   heap   std::priority_queue of {deadline, seq, payload} plus what a heap needs for
//          cancel-by-handle (see HeapTimers below).
//   asio   one boost::asio::steady_timer per entry, async_wait on one io_context: the cost of
//          Asio's own timer queue (a binary heap of timers inside the reactor).
//
// Operations (benchmark name = <operation>/<structure>/<pending>):
//   schedule_5s      insert one entry due uniformly in [now+1, now+5000] ticks (5 s at 1 ms)
//   schedule_spread  the same, due log-uniformly in [now+1, now+2^35) ticks (up to ~1 year at
//                    1 ms): about a third of the entries in each of the wheel's three levels
//   cancel           cancel one random pending entry by its handle
//   expire_5s        fire every entry (deadlines as schedule_5s), cost per fired entry
//   expire_spread    the same with the schedule_spread deadlines
//   hold             steady state at N pending: each fired entry is scheduled again at its
//                    deadline + U[1, 5000] ticks (the classic "hold" timer benchmark)
//
// Method. A benchmark runs rounds: untimed set-up that puts N entries in the structure, then a
// batch of operations timed with the benchmark's manual clock (schedule and cancel: 10% of N;
// expire: all N; hold: one clock step). Wheel and heap are rebuilt for every schedule/cancel
// round; Asio timers, too costly to rebuild, are put back by the inverse operations. Iteration
// counts are fixed per N to keep the whole run short (about 1.5 min on 2 cores); one iteration
// is one round. `Time` is per round: read ns_per_op (ns per operation) and items_per_second.
// Rounds disturbed by another process are re-run or CPU-timed (see run_round; the counters
// retries, cpu_timed_rounds and dirty_rounds say how often). Ticks are 1 ms; the wheel starts at
// tick kStart, the heap uses the same ticks, Asio gets the same offsets as milliseconds.
//
// Counters: ns_per_op; pending (N); bytes_per_entry = TimingWheel::memory_bytes() / N and
// malloc_bytes_per_entry (heap growth while filling N, all structures) on schedule_*; hold adds
// user_ns_per_op (user-mode CPU, see ManualClock for why Asio needs it).
//
// Extra flag: --sizes=1000,100000 runs only those pending counts.
//
// Kept whole over ~400 lines: each operation is written three times side by side (wheel, heap,
// Asio) over the same draws, rounds and counters, so that the three can be read against each other.

#include <utility>  // before any Boost.Asio header: Boost 1.74 + g++ 12 need std::exchange

#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "delayq/timing_wheel.h"

namespace {

using delayq::TimingWheel;
using WallClock = std::chrono::steady_clock;

constexpr uint64_t kStart = 1'000'000'123;  // the wheel's first tick: ~11.6 days of 1 ms ticks
constexpr uint64_t kNearSpan = 5000;       // 5 s at 1 ms
constexpr unsigned kSpreadBits = 35;       // 2^35 ms ~ 1 year

std::vector<int64_t> g_sizes = {1'000, 100'000, 1'000'000, 4'000'000};

// ---- randomness: splitmix64, and bounded draws by multiply-high ----

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) {  // uniform in [0, n)
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t s_;
};

enum class Spread { kNear, kWide };

// Delay in ticks (>= 1) for one entry.
uint64_t draw_delay(Rng& r, Spread s) {
  if (s == Spread::kNear) return 1 + r.below(kNearSpan);
  const unsigned e = static_cast<unsigned>(r.below(kSpreadBits));
  return (uint64_t{1} << e) + r.below(uint64_t{1} << e);
}

std::vector<uint64_t> draw_delays(Rng& r, Spread s, size_t n) {
  std::vector<uint64_t> v(n);
  for (uint64_t& d : v) d = draw_delay(r, s);
  return v;
}

// Delays of the hold model's stationary state: with increments uniform in [1, H], the time left
// until an entry fires is (nearly) triangular on [1, H]; starting there needs no warm-up.
uint64_t draw_residual(Rng& r) {
  const double x = std::ceil(static_cast<double>(kNearSpan) * (1.0 - std::sqrt(r.unit())));
  return std::max<uint64_t>(1, static_cast<uint64_t>(x));
}

// A ring of pre-drawn hold increments, so the timed loops of all structures pay the same
// (tiny) cost for their randomness.
class IncRing {
 public:
  explicit IncRing(uint64_t seed) : v_(kSize) {
    Rng r(seed);
    for (uint64_t& x : v_) x = 1 + r.below(kNearSpan);
  }
  uint64_t next() { return v_[i_++ & (kSize - 1)]; }

 private:
  static constexpr size_t kSize = 1 << 16;
  std::vector<uint64_t> v_;
  size_t i_ = 0;
};

// A random order of [0, n): windows of it pick distinct entries to cancel.
std::vector<uint32_t> permutation(Rng& r, size_t n) {
  std::vector<uint32_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint32_t>(i);
  for (size_t i = n; i > 1; --i) std::swap(p[i - 1], p[r.below(i)]);
  return p;
}

size_t heap_bytes_in_use() { return mallinfo2().uordblks + mallinfo2().hblkhd; }

// ---- rounds, timing and counters ----

// Operations per round for schedule and cancel: 10% of N (the structure grows or shrinks by at
// most that much within a round).
size_t batch_for(size_t n) { return std::max<size_t>(n / 10, 100); }

int64_t rounds_batch(int64_t n) {  // schedule, cancel
  if (n <= 1'000) return 2000;
  if (n <= 100'000) return 40;
  if (n <= 1'000'000) return 10;
  return 4;
}
int64_t rounds_expire(int64_t n) {  // each round fires all N
  if (n <= 1'000) return 1000;
  if (n <= 100'000) return 10;
  if (n <= 1'000'000) return 2;
  return 1;
}
// Hold: each round advances the clock by hold_step(n) ticks, which fires ~max(1024, n/2500)
// entries (mean increment 2500 ticks); ~2M entries fire in all.
uint64_t hold_step(int64_t n) {
  const uint64_t per_round = 1024 * (kNearSpan / 2);
  return std::max<uint64_t>(1, (per_round + static_cast<uint64_t>(n) - 1) / static_cast<uint64_t>(n));
}
int64_t rounds_hold(int64_t n) {
  const double per_round = static_cast<double>(n) * hold_step(n) / (kNearSpan / 2.0);
  return std::max<int64_t>(1, static_cast<int64_t>(2e6 / per_round));
}

// User-mode CPU seconds of this thread (kernel time, e.g. Asio's timerfd syscalls, excluded).
double user_seconds() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec) + static_cast<double>(ru.ru_utime.tv_usec) * 1e-6;
}

double seconds_since(WallClock::time_point t0) {
  return std::chrono::duration<double>(WallClock::now() - t0).count();
}

// Involuntary context switches of this thread so far. The 2-core machines this runs on are
// shared; a timed window that contains a switch measured another process's time slice too.
long involuntary_switches() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nivcsw;
}

// CPU seconds used by this thread (user + kernel); not advanced while it is preempted.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Tally {
  double seconds = 0;        // timed seconds that count
  double user_seconds = -1;  // user-mode CPU seconds (hold only)
  uint64_t ops = 0;          // operations that count
  long retries = 0;          // tries thrown away because the thread was preempted
  long cpu_timed = 0;        // long rounds that were preempted and count their thread CPU time
  long dirty = 0;            // rounds that count although preempted (every try was)
};

constexpr int kTries = 5;
constexpr double kLongRound = 2e-3;  // seconds

// One round: prepare() untimed, body() timed (it returns how many operations it did), finish()
// untimed. Rounds are timed by the wall clock. A short try during which the thread was preempted
// is thrown away and the round run again (finish() and prepare() must bring the structure back to
// the same state), up to kTries times, the fastest try counting if all were preempted. A long
// one (> kLongRound, where retrying would rarely help) counts its thread CPU time instead: the
// two clock_gettime syscalls that adds are noise at that length.
template <class Prepare, class Body, class Finish>
void run_round(benchmark::State& st, Tally& t, Prepare&& prepare, Body&& body, Finish&& finish) {
  double best = -1;
  uint64_t best_ops = 0;
  bool clean = false;
  for (int i = 0; i < kTries && !clean; ++i) {
    prepare();
    const long csw = involuntary_switches();
    const double c0 = thread_cpu_seconds();
    const auto t0 = WallClock::now();
    const uint64_t ops = body();
    double s = seconds_since(t0);
    const double cpu = thread_cpu_seconds() - c0;
    clean = involuntary_switches() == csw;
    finish();
    if (!clean && s > kLongRound) {
      s = std::min(s, cpu);
      clean = true;
      ++t.cpu_timed;
    }
    if (best < 0 || s < best) {
      best = s;
      best_ops = ops;
    }
    if (!clean && i + 1 < kTries) ++t.retries;
  }
  t.dirty += !clean;
  st.SetIterationTime(best);
  t.seconds += best;
  t.ops += best_ops;
}

void report(benchmark::State& st, const Tally& t, size_t pending) {
  st.SetItemsProcessed(static_cast<int64_t>(t.ops));
  st.counters["ns_per_op"] = t.ops ? t.seconds * 1e9 / static_cast<double>(t.ops) : 0.0;
  st.counters["pending"] = static_cast<double>(pending);
  st.counters["retries"] = static_cast<double>(t.retries);
  st.counters["cpu_timed_rounds"] = static_cast<double>(t.cpu_timed);
  st.counters["dirty_rounds"] = static_cast<double>(t.dirty);
  if (t.user_seconds >= 0 && t.ops) {
    st.counters["user_ns_per_op"] = t.user_seconds * 1e9 / static_cast<double>(t.ops);
  }
}

// ---- baseline A: a binary heap with cancel-by-handle ----
//
// std::priority_queue cannot remove an arbitrary element, so cancel is lazy, the usual way to
// cancel in a heap that keeps no position index: every entry carries (slot, gen) naming a cell of
// a side table of generations. cancel(handle) checks and bumps the cell's generation and frees the
// slot (O(1), no heap work); a pop whose entry's generation no longer matches drops it as a
// tombstone. seq breaks deadline ties first-scheduled-first, as the wheel promises.
//
// Why this is a fair baseline: it gives the heap the same deal the wheel has. The wheel's cancel
// is lazy as well (the node stays linked until its slot is emptied), both keep stale handles
// harmless by generation, both slabs recycle freed cells, and both pay the deferred cleanup when
// the dead entry would have expired. The other classic choice, an indexed heap with eager
// O(log N) removal, is exactly what Asio's timer_queue does, so baseline B covers it.
class HeapTimers {
 public:
  struct Handle {
    uint32_t slot = 0;
    uint32_t gen = 0;
  };

  Handle schedule(uint64_t deadline, uint64_t payload) {
    uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<uint32_t>(gen_.size());
      gen_.push_back(0);
    }
    uint32_t g = ++gen_[slot];
    if (g == 0) g = gen_[slot] = 1;
    heap_.push(Entry{deadline, seq_++, payload, slot, g});
    ++live_;
    return Handle{slot, g};
  }

  bool cancel(Handle h) {
    if (h.slot >= gen_.size() || gen_[h.slot] != h.gen || h.gen == 0) return false;
    retire(h.slot);
    return true;
  }

  // Fires every live entry due at or before now, in (deadline, seq) order.
  template <class F>
  size_t advance(uint64_t now, F&& on_fire) {
    size_t fired = 0;
    while (!heap_.empty() && heap_.top().deadline <= now) {
      const Entry e = heap_.top();
      heap_.pop();
      if (gen_[e.slot] != e.gen) continue;  // cancelled: a tombstone
      retire(e.slot);
      ++fired;
      on_fire(e.payload, e.deadline);
    }
    return fired;
  }

  size_t size() const { return live_; }
  size_t heap_entries() const { return heap_.size(); }  // live + tombstones

 private:
  struct Entry {
    uint64_t deadline;
    uint64_t seq;
    uint64_t payload;
    uint32_t slot;
    uint32_t gen;
  };
  struct Later {  // priority_queue keeps the "largest" on top: invert for a min-heap
    bool operator()(const Entry& a, const Entry& b) const {
      return a.deadline != b.deadline ? a.deadline > b.deadline : a.seq > b.seq;
    }
  };

  void retire(uint32_t slot) {
    if (++gen_[slot] == 0) gen_[slot] = 1;  // any issued handle for this slot is now stale
    free_.push_back(slot);
    --live_;
  }

  std::priority_queue<Entry, std::vector<Entry>, Later> heap_;
  std::vector<uint32_t> gen_;   // per slot: the generation of its current (or last) entry
  std::vector<uint32_t> free_;  // free slots, reused LIFO
  uint64_t seq_ = 0;
  size_t live_ = 0;
};

// ---- baseline B: Asio timers ----
//
// One steady_timer per entry, constructed per schedule (Asio allocates no node for the timer
// itself; async_wait allocates the handler's operation through Asio's recycling allocator), on one
// io_context with concurrency hint 1, as a single-threaded driver would use it. steady_timer is
// Boost 1.74's default: its executor is the type-erased any_io_executor. Deadlines for schedule
// and cancel are a day ahead, so nothing fires while the io_context is polled to clean up.

using AsioTimer = boost::asio::steady_timer;

struct AsioSink {
  uint64_t sum = 0;
  uint64_t fired = 0;
};

// Completion handler: counts a firing, ignores operation_aborted (cancel, destroy).
struct AsioHandler {
  AsioSink* sink;
  uint64_t payload;
  void operator()(const boost::system::error_code& ec) const {
    if (ec) return;
    sink->sum += payload;
    ++sink->fired;
  }
};

std::chrono::milliseconds ms(uint64_t ticks) {
  return std::chrono::milliseconds(static_cast<int64_t>(ticks));
}

// For the hold model Asio needs a clock the benchmark moves. ManualClock is that clock; ZeroWait
// makes the reactor re-arm its timerfd to fire at once, so every poll() checks the timer queue
// against ManualClock::now() (the default traits would sleep in real time until the next deadline
// of the manual clock). The price is two epoll_wait + two timerfd_settime per poll(), and arming
// an already-expired timerfd is slow on a VM (~26 us per call measured on the 2-core dev VM,
// against ~0.5 us for a deadline 1 s ahead). That is wake-up cost, which a wheel-based driver
// pays too, not timer-queue cost: the hold benchmarks therefore also report user_ns_per_op,
// user-mode CPU per operation (getrusage, tick-sampled: a few % of noise), which leaves the
// kernel's share out, and fire >= 1024 entries per poll.
struct ManualClock {
  using rep = int64_t;
  using period = std::milli;
  using duration = std::chrono::duration<rep, period>;
  using time_point = std::chrono::time_point<ManualClock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept { return time_point(duration(ticks)); }
  static inline int64_t ticks = 0;
};
struct ZeroWait {
  static ManualClock::duration to_wait_duration(const ManualClock::duration&) {
    return ManualClock::duration::zero();
  }
  static ManualClock::duration to_wait_duration(const ManualClock::time_point&) {
    return ManualClock::duration::zero();
  }
};
using ManualTimer = boost::asio::basic_waitable_timer<ManualClock, ZeroWait>;

// ---- schedule ----

// Wheel and heap: every round builds a fresh structure (untimed): N pending entries, plus k that
// fire at once, so the k timed schedules find k warm free nodes/slots, as they would in a running
// service (a schedule there mostly reuses what a recent firing freed), and neither a slab chunk
// nor a vector reallocation is first touched inside the timed batch.

void schedule_wheel(benchmark::State& st, Spread spread) {
  const size_t n = static_cast<size_t>(st.range(0)), k = batch_for(n);
  Rng rng(11);
  const std::vector<uint64_t> fill = draw_delays(rng, spread, n);
  const std::vector<uint64_t> pool = draw_delays(rng, spread, std::max<size_t>(8 * k, 1 << 16));
  std::unique_ptr<TimingWheel> w;
  bool measured = false;
  auto build = [&] {
    w.reset();
    const size_t before = heap_bytes_in_use();
    w = std::make_unique<TimingWheel>(kStart);
    for (size_t i = 0; i < n; ++i) w->schedule(kStart + 1 + fill[i], i);
    if (!measured) {
      st.counters["bytes_per_entry"] = static_cast<double>(w->memory_bytes()) / n;
      st.counters["malloc_bytes_per_entry"] =
          static_cast<double>(heap_bytes_in_use() - before) / n;
      measured = true;
    }
    for (size_t j = 0; j < k; ++j) w->schedule(kStart + 1, n + j);
    w->advance(kStart + 1, [](uint64_t, uint64_t) {});
  };
  const uint64_t* d = pool.data();
  auto batch = [&]() -> uint64_t {
    TimingWheel& wheel = *w;
    const uint64_t now = wheel.elapsed();
    for (size_t j = 0; j < k; ++j) wheel.schedule(now + d[j], n + j);
    return k;
  };
  Tally t;
  for (auto _ : st) {
    d = d + 2 * k <= pool.data() + pool.size() ? d + k : pool.data();
    run_round(st, t, build, batch, [] {});
  }
  if (w->size() != n + k) st.SkipWithError("unexpected pending count");
  report(st, t, n);
}

void schedule_heap(benchmark::State& st, Spread spread) {
  const size_t n = static_cast<size_t>(st.range(0)), k = batch_for(n);
  Rng rng(11);
  const std::vector<uint64_t> fill = draw_delays(rng, spread, n);
  const std::vector<uint64_t> pool = draw_delays(rng, spread, std::max<size_t>(8 * k, 1 << 16));
  std::unique_ptr<HeapTimers> h;
  bool measured = false;
  auto build = [&] {
    h.reset();
    const size_t before = heap_bytes_in_use();
    h = std::make_unique<HeapTimers>();
    for (size_t i = 0; i < n; ++i) h->schedule(kStart + 1 + fill[i], i);
    if (!measured) {
      st.counters["malloc_bytes_per_entry"] =
          static_cast<double>(heap_bytes_in_use() - before) / n;
      measured = true;
    }
    for (size_t j = 0; j < k; ++j) h->schedule(kStart + 1, n + j);
    h->advance(kStart + 1, [](uint64_t, uint64_t) {});
  };
  const uint64_t* d = pool.data();
  auto batch = [&]() -> uint64_t {
    HeapTimers& heap = *h;
    for (size_t j = 0; j < k; ++j) heap.schedule(kStart + 1 + d[j], n + j);
    return k;
  };
  Tally t;
  for (auto _ : st) {
    d = d + 2 * k <= pool.data() + pool.size() ? d + k : pool.data();
    run_round(st, t, build, batch, [] {});
  }
  if (h->size() != n + k) st.SkipWithError("unexpected pending count");
  report(st, t, n);
}

void schedule_asio(benchmark::State& st, Spread spread) {
  const size_t n = static_cast<size_t>(st.range(0)), k = batch_for(n);
  Rng rng(11);
  boost::asio::io_context io(1);
  AsioSink sink;
  const auto base = WallClock::now() + std::chrono::hours(24);
  const size_t before = heap_bytes_in_use();
  std::vector<AsioTimer> timers;
  timers.reserve(n + k);  // the timed emplace_back never moves a timer
  for (size_t i = 0; i < n; ++i) {
    AsioTimer& tm = timers.emplace_back(io);
    tm.expires_at(base + ms(draw_delay(rng, spread)));
    tm.async_wait(AsioHandler{&sink, i});
  }
  st.counters["malloc_bytes_per_entry"] =
      static_cast<double>(heap_bytes_in_use() - before) / n;
  const std::vector<uint64_t> pool = draw_delays(rng, spread, std::max<size_t>(8 * k, 1 << 16));
  const uint64_t* d = pool.data();
  auto next_window = [&] { d = d + 2 * k <= pool.data() + pool.size() ? d + k : pool.data(); };
  auto batch = [&]() -> uint64_t {
    for (size_t j = 0; j < k; ++j) {
      AsioTimer& tm = timers.emplace_back(io);
      tm.expires_at(base + ms(d[j]));
      tm.async_wait(AsioHandler{&sink, n + j});
    }
    return k;
  };
  auto restore = [&] {  // destroying a timer cancels it; poll() runs the aborted handlers
    while (timers.size() > n) timers.pop_back();
    io.poll();
  };
  batch();
  restore();
  Tally t;
  for (auto _ : st) {
    next_window();
    run_round(st, t, [] {}, batch, restore);
  }
  if (sink.fired != 0) st.SkipWithError("asio timers fired during schedule");
  report(st, t, n);
}

// ---- cancel ----
//
// Each round cancels k distinct random pending entries (a window of a random permutation).

void cancel_wheel(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0)), k = batch_for(n);
  Rng rng(12);
  const std::vector<uint64_t> fill = draw_delays(rng, Spread::kNear, n);
  const std::vector<uint32_t> order = permutation(rng, n);
  std::unique_ptr<TimingWheel> w;
  std::vector<TimingWheel::Handle> handles(n);
  auto build = [&] {
    w.reset();
    w = std::make_unique<TimingWheel>(kStart);
    for (size_t i = 0; i < n; ++i) handles[i] = w->schedule(kStart + fill[i], i);
  };
  const uint32_t* pick = order.data();
  size_t failed = 0;
  auto body = [&]() -> uint64_t {
    TimingWheel& wheel = *w;
    for (size_t j = 0; j < k; ++j) failed += !wheel.cancel(handles[pick[j]]);
    return k;
  };
  Tally t;
  for (auto _ : st) {
    pick = pick + 2 * k <= order.data() + n ? pick + k : order.data();
    run_round(st, t, build, body, [] {});
  }
  if (failed) st.SkipWithError("a wheel cancel failed");
  report(st, t, n);
}

void cancel_heap(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0)), k = batch_for(n);
  Rng rng(12);
  const std::vector<uint64_t> fill = draw_delays(rng, Spread::kNear, n);
  const std::vector<uint32_t> order = permutation(rng, n);
  std::unique_ptr<HeapTimers> h;
  std::vector<HeapTimers::Handle> handles(n);
  auto build = [&] {
    h.reset();
    h = std::make_unique<HeapTimers>();
    for (size_t i = 0; i < n; ++i) handles[i] = h->schedule(kStart + fill[i], i);
  };
  const uint32_t* pick = order.data();
  size_t failed = 0;
  auto body = [&]() -> uint64_t {
    HeapTimers& heap = *h;
    for (size_t j = 0; j < k; ++j) failed += !heap.cancel(handles[pick[j]]);
    return k;
  };
  Tally t;
  for (auto _ : st) {
    pick = pick + 2 * k <= order.data() + n ? pick + k : order.data();
    run_round(st, t, build, body, [] {});
  }
  if (failed) st.SkipWithError("a heap cancel failed");
  report(st, t, n);
}

void cancel_asio(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0)), k = batch_for(n);
  Rng rng(12);
  boost::asio::io_context io(1);
  AsioSink sink;
  const auto base = WallClock::now() + std::chrono::hours(24);
  std::vector<AsioTimer> timers;
  timers.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    AsioTimer& tm = timers.emplace_back(io);
    tm.expires_at(base + ms(draw_delay(rng, Spread::kNear)));
    tm.async_wait(AsioHandler{&sink, i});
  }
  const std::vector<uint32_t> order = permutation(rng, n);
  const uint32_t* pick = order.data();
  size_t failed = 0;
  auto body = [&]() -> uint64_t {
    for (size_t j = 0; j < k; ++j) failed += timers[pick[j]].cancel() != 1;
    return k;
  };
  auto restore = [&] {  // run the aborted handlers, then wait again with the same expiry
    io.poll();
    for (size_t j = 0; j < k; ++j) timers[pick[j]].async_wait(AsioHandler{&sink, pick[j]});
  };
  Tally t;
  for (auto _ : st) {
    pick = pick + 2 * k <= order.data() + n ? pick + k : order.data();
    run_round(st, t, [] {}, body, restore);
  }
  if (failed) st.SkipWithError("an asio cancel failed");
  report(st, t, n);
}

// ---- expire ----
//
// Each round schedules N entries (untimed), then times firing all of them.

void expire_wheel(benchmark::State& st, Spread spread) {
  const size_t n = static_cast<size_t>(st.range(0));
  Rng rng(13);
  TimingWheel w(kStart);
  uint64_t sum = 0, last = 0;
  size_t wrong = 0;
  auto fill = [&] {
    const uint64_t base = w.elapsed();
    last = base;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t d = base + draw_delay(rng, spread);
      last = std::max(last, d);
      w.schedule(d, i);
    }
  };
  auto fire = [&]() -> uint64_t {
    return w.advance(last, [&](uint64_t payload, uint64_t) { sum += payload; });
  };
  Tally t;
  for (auto _ : st) {
    run_round(st, t, fill, fire, [&] { wrong += !w.empty(); });
  }
  benchmark::DoNotOptimize(sum);
  if (wrong || t.ops != n * static_cast<uint64_t>(st.iterations())) {
    st.SkipWithError("the wheel did not fire every entry");
  }
  report(st, t, n);
}

void expire_heap(benchmark::State& st, Spread spread) {
  const size_t n = static_cast<size_t>(st.range(0));
  Rng rng(13);
  HeapTimers h;
  uint64_t sum = 0, now = kStart;
  size_t wrong = 0;
  auto fill = [&] {
    const uint64_t base = now;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t d = base + draw_delay(rng, spread);
      now = std::max(now, d);
      h.schedule(d, i);
    }
  };
  auto fire = [&]() -> uint64_t {
    return h.advance(now, [&](uint64_t payload, uint64_t) { sum += payload; });
  };
  Tally t;
  for (auto _ : st) {
    run_round(st, t, fill, fire, [&] { wrong += h.size() != 0; });
  }
  benchmark::DoNotOptimize(sum);
  if (wrong || t.ops != n * static_cast<uint64_t>(st.iterations())) {
    st.SkipWithError("the heap did not fire every entry");
  }
  report(st, t, n);
}

// Asio: deadlines already in the past (distinct, in the same spread), so run() finds them all due
// at its first check and runs N handlers; the cost per handler includes popping Asio's heap.
void expire_asio(benchmark::State& st, Spread spread) {
  const size_t n = static_cast<size_t>(st.range(0));
  Rng rng(13);
  boost::asio::io_context io(1);
  AsioSink sink;
  std::vector<AsioTimer> timers;
  timers.reserve(n);
  for (size_t i = 0; i < n; ++i) timers.emplace_back(io);
  // The steady clock's epoch is boot time; any time before now() is in the past.
  const uint64_t max_delay = spread == Spread::kNear ? kNearSpan : (uint64_t{1} << kSpreadBits);
  const auto past = WallClock::now() - ms(max_delay) - std::chrono::seconds(1);
  auto arm = [&] {
    for (size_t i = 0; i < n; ++i) {
      timers[i].expires_at(past + ms(draw_delay(rng, spread)));
      timers[i].async_wait(AsioHandler{&sink, i});
    }
  };
  auto fire = [&]() -> uint64_t {
    const uint64_t before = sink.fired;
    io.run();
    return sink.fired - before;
  };
  Tally t;
  for (auto _ : st) {
    run_round(st, t, arm, fire, [&] { io.restart(); });
  }
  benchmark::DoNotOptimize(sink.sum);
  if (t.ops != n * static_cast<uint64_t>(st.iterations())) {
    st.SkipWithError("asio did not fire every timer");
  }
  report(st, t, n);
}

// ---- hold ----
//
// N entries pending in their stationary state; each round moves the clock hold_step(N) ticks and
// every entry that fires is scheduled again at its own deadline + U[1, 5000]. An operation is one
// firing plus one schedule. Rounds cannot be re-run here: a round during which the thread was
// preempted counts its thread CPU time (cpu_timed_rounds).

template <class Step>
void hold_loop(benchmark::State& st, Tally& t, Step&& step) {
  const double u0 = user_seconds();
  for (auto _ : st) {
    const long csw = involuntary_switches();
    const double c0 = thread_cpu_seconds();
    const auto t0 = WallClock::now();
    const uint64_t ops = step();
    double s = seconds_since(t0);
    const double cpu = thread_cpu_seconds() - c0;
    if (involuntary_switches() != csw) {
      // Long rounds (a cascade from level 1, a big batch) are the likeliest to be preempted, so
      // dropping them would bias the result: count their thread CPU time instead.
      s = std::min(s, cpu);
      ++t.cpu_timed;
    }
    st.SetIterationTime(s);
    t.seconds += s;
    t.ops += ops;
  }
  t.user_seconds = user_seconds() - u0;
}

void hold_wheel(benchmark::State& st) {
  const int64_t n = st.range(0);
  const uint64_t step = hold_step(n);
  Rng rng(14);
  IncRing inc(15);
  TimingWheel w(kStart);
  for (int64_t i = 0; i < n; ++i) w.schedule(kStart + draw_residual(rng), static_cast<uint64_t>(i));
  uint64_t now = kStart;
  auto on_fire = [&](uint64_t payload, uint64_t deadline) {
    w.schedule(deadline + inc.next(), payload);
  };
  Tally t;
  hold_loop(st, t, [&]() -> uint64_t {
    now += step;
    return w.advance(now, on_fire);
  });
  if (w.size() != static_cast<size_t>(n)) st.SkipWithError("pending count drifted");
  st.counters["bytes_per_entry"] = static_cast<double>(w.memory_bytes()) / n;
  report(st, t, n);
}

void hold_heap(benchmark::State& st) {
  const int64_t n = st.range(0);
  const uint64_t step = hold_step(n);
  Rng rng(14);
  IncRing inc(15);
  HeapTimers h;
  for (int64_t i = 0; i < n; ++i) h.schedule(kStart + draw_residual(rng), static_cast<uint64_t>(i));
  uint64_t now = kStart;
  // HeapTimers::advance takes the entry off the heap before calling back, so scheduling from the
  // callback is safe.
  auto on_fire = [&](uint64_t payload, uint64_t deadline) {
    h.schedule(deadline + inc.next(), payload);
  };
  Tally t;
  hold_loop(st, t, [&]() -> uint64_t {
    now += step;
    return h.advance(now, on_fire);
  });
  if (h.size() != static_cast<size_t>(n)) st.SkipWithError("pending count drifted");
  report(st, t, n);
}

struct HoldCtx {
  IncRing inc{15};
  uint64_t fired = 0;
};

struct Rearm {
  ManualTimer* timer;
  HoldCtx* ctx;
  void operator()(const boost::system::error_code& ec) const {
    if (ec) return;
    ++ctx->fired;
    timer->expires_at(timer->expiry() + ManualClock::duration(ctx->inc.next()));
    timer->async_wait(*this);
  }
};

void hold_asio(benchmark::State& st) {
  const int64_t n = st.range(0);
  const uint64_t step = hold_step(n);
  Rng rng(14);
  HoldCtx ctx;
  boost::asio::io_context io(1);
  std::vector<ManualTimer> timers;
  timers.reserve(static_cast<size_t>(n));
  ManualClock::ticks = static_cast<int64_t>(kStart);
  for (int64_t i = 0; i < n; ++i) {
    ManualTimer& tm = timers.emplace_back(io);
    tm.expires_at(ManualClock::now() + ManualClock::duration(draw_residual(rng)));
    tm.async_wait(Rearm{&tm, &ctx});
  }
  Tally t;
  hold_loop(st, t, [&]() -> uint64_t {
    const uint64_t before = ctx.fired;
    ManualClock::ticks += static_cast<int64_t>(step);
    io.poll();
    return ctx.fired - before;
  });
  report(st, t, static_cast<size_t>(n));
}

// ---- registration ----

void add(const std::string& name, std::function<void(benchmark::State&)> fn,
         int64_t (*rounds)(int64_t)) {
  for (int64_t n : g_sizes) {
    benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(name.c_str(), fn);
    b->Arg(n)->Iterations(rounds(n))->Unit(benchmark::kMicrosecond);
    b->UseManualTime();
  }
}

void register_all() {
  using std::placeholders::_1;
  for (Spread s : {Spread::kNear, Spread::kWide}) {
    const std::string tag = s == Spread::kNear ? "5s" : "spread";
    add("schedule_" + tag + "/wheel", std::bind(schedule_wheel, _1, s), rounds_batch);
    add("schedule_" + tag + "/heap", std::bind(schedule_heap, _1, s), rounds_batch);
    add("schedule_" + tag + "/asio", std::bind(schedule_asio, _1, s), rounds_batch);
  }
  add("cancel/wheel", cancel_wheel, rounds_batch);
  add("cancel/heap", cancel_heap, rounds_batch);
  add("cancel/asio", cancel_asio, rounds_batch);
  for (Spread s : {Spread::kNear, Spread::kWide}) {
    const std::string tag = s == Spread::kNear ? "5s" : "spread";
    add("expire_" + tag + "/wheel", std::bind(expire_wheel, _1, s), rounds_expire);
    add("expire_" + tag + "/heap", std::bind(expire_heap, _1, s), rounds_expire);
    add("expire_" + tag + "/asio", std::bind(expire_asio, _1, s), rounds_expire);
  }
  add("hold/wheel", hold_wheel, rounds_hold);
  add("hold/heap", hold_heap, rounds_hold);
  add("hold/asio", hold_asio, rounds_hold);
}

// Takes --sizes=a,b,c out of argv before Google Benchmark parses it.
void parse_sizes(int& argc, char** argv) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const char* prefix = "--sizes=";
    if (std::strncmp(argv[i], prefix, std::strlen(prefix)) == 0) {
      g_sizes.clear();
      std::string list = argv[i] + std::strlen(prefix);
      size_t pos = 0;
      while (pos < list.size()) {
        size_t comma = list.find(',', pos);
        if (comma == std::string::npos) comma = list.size();
        g_sizes.push_back(std::atoll(list.substr(pos, comma - pos).c_str()));
        pos = comma + 1;
      }
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
}

}  // namespace

int main(int argc, char** argv) {
  parse_sizes(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("tick", "1 ms (wheel ticks; Asio deadlines in std::chrono::milliseconds)");
  benchmark::AddCustomContext("ns_per_op", "wall-clock ns per operation (see file comment)");
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
