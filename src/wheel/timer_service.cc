#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include "delayq/timer_service.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "wheel/timer_table.h"

namespace delayq {

namespace asio = boost::asio;
using Steady = std::chrono::steady_clock;
static_assert(std::is_same_v<Steady::duration, Duration>, "steady_clock counts nanoseconds");

// floor(n / d) for a divisor fixed at construction, without a 64-bit `div` (22 % of a schedule
// before, docs/benchmarks.md): a floating-point estimate, then corrected to the exact quotient.
// For n < 2^63 and d >= 1e6 the estimate is within one of it, so each loop runs once at most.
class TickDivider {
 public:
  explicit TickDivider(uint64_t d) : d_(d), inv_(1.0 / static_cast<double>(d)) {}
  uint64_t floor(uint64_t n) const {
    uint64_t q = static_cast<uint64_t>(static_cast<double>(n) * inv_);
    while (q > 0 && q * d_ > n) --q;
    while ((q + 1) * d_ <= n) ++q;
    return q;
  }
  uint64_t ceil(uint64_t n) const {
    const uint64_t q = floor(n);
    return q * d_ == n ? q : q + 1;
  }

 private:
  uint64_t d_;
  double inv_;
};

struct TimerService::Impl {
  Impl(Duration t, ErrorHandler handler)
      : tick(t),
        div(static_cast<uint64_t>(t.count())),
        origin(Steady::now()),
        last_tick(std::min(span_ns(origin, Steady::time_point::max()),
                           uint64_t{std::numeric_limits<int64_t>::max()}) /
                  static_cast<uint64_t>(t.count())),
        on_error(std::move(handler)),
        timer(io) {}

  const Duration tick;
  const TickDivider div;
  const Steady::time_point origin;
  // Ticks after `origin` that fit in a steady_clock time_point: a deadline at or beyond it is
  // armed for time_point::max() (the end of the clock's range, about 292 years after boot).
  const uint64_t last_tick;
  const ErrorHandler on_error;
  mutable std::mutex mu;
  detail::TimerTable table;
  uint64_t armed = UINT64_MAX;  // under mu: tick the driver's timer is (being) armed for
  // Set once, under mu, by the first stop(). Read under mu by schedule, and without it by the
  // driver between two callbacks.
  std::atomic<bool> stopped{false};
  std::vector<Callback> due;  // driver thread only: the callbacks of one firing
  asio::io_context io;
  asio::steady_timer timer;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread driver;
  std::thread::id driver_id;  // set once, before the first schedule
  std::mutex join_mu;         // stop() from two threads: the second waits for the first's join

  // Nanoseconds from `from` to `to` (0 when `to` is not later), in uint64: exact for any pair of
  // time_points, where to - from may overflow int64.
  static uint64_t span_ns(Steady::time_point from, Steady::time_point to) {
    if (to <= from) return 0;
    return static_cast<uint64_t>(to.time_since_epoch().count()) -
           static_cast<uint64_t>(from.time_since_epoch().count());
  }
  // The tick count of `t`: 0 for any instant at or before `origin` (time_point::min() too),
  // never more than the clock's range holds (TickDivider's range is below 2^63).
  uint64_t ns_of(Steady::time_point t) const {
    return std::min(span_ns(origin, t), uint64_t{std::numeric_limits<int64_t>::max()});
  }
  uint64_t ceil_tick(Steady::time_point t) const { return div.ceil(ns_of(t)); }
  uint64_t floor_tick(Steady::time_point t) const { return div.floor(ns_of(t)); }
  // The instant a tick starts, held at time_point::max() past the clock's range (a deadline
  // that wrapped around into the past would wake the driver at once, and again, for ever).
  Steady::time_point instant_of(uint64_t t) const {
    return t >= last_tick ? Steady::time_point::max() : origin + tick * static_cast<int64_t>(t);
  }

  // Driver thread.
  void arm() {
    std::optional<uint64_t> next;
    {
      std::lock_guard lock(mu);
      if (stopped.load(std::memory_order_relaxed)) return;
      next = table.next_deadline();
      armed = next ? *next : UINT64_MAX;
    }
    if (!next) return;
    timer.expires_at(instant_of(*next));
    timer.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) fire();
    });
  }

  void fire() {
    {
      std::lock_guard lock(mu);
      if (stopped.load(std::memory_order_relaxed)) return;
      table.take_due(floor_tick(Steady::now()), due);
    }
    for (Callback& cb : due) {
      // A stop() (from a callback of this firing, or another thread) drops the rest.
      if (stopped.load(std::memory_order_acquire)) break;
      try {
        cb();
      } catch (...) {
        report(std::current_exception());
      }
    }
    due.clear();  // destroys the callables, still without the lock
    arm();
  }

  void report(std::exception_ptr e) const noexcept {
    if (!on_error) return print("a callback threw", e);
    try {
      on_error(std::move(e));
    } catch (...) {
      print("the error handler threw", std::current_exception());
    }
  }

  static void print(const char* what, std::exception_ptr e) noexcept {
    const char* text = "an exception that is not a std::exception";
    try {
      std::rethrow_exception(std::move(e));
    } catch (const std::exception& x) {
      text = x.what();
    } catch (...) {
    }
    // fprintf, not fmt: delayq::wheel is usable on its own, with no library but Boost's headers.
    std::fprintf(stderr, "delayq::TimerService: %s: %s\n", what, text);
  }

  void stop() {
    std::vector<Callback> dropped;  // destroyed last, without the lock, after the join
    {
      std::lock_guard lock(mu);
      if (!stopped.load(std::memory_order_relaxed)) {
        stopped.store(true, std::memory_order_release);
        table.take_all(dropped);
      }
    }
    io.stop();  // run() returns once the handler running now (a firing) returns
    // From a callback (or a destructor or error handler that one set off), this is the driver
    // thread: joining it would be joining itself. It exits by itself once the callback returns.
    if (std::this_thread::get_id() == driver_id) return;
    std::lock_guard lock(join_mu);
    if (driver.joinable()) driver.join();
  }
};

TimerService::TimerService(Duration tick, ErrorHandler on_error)
    : impl_(std::make_shared<Impl>(
          std::clamp<Duration>(tick, std::chrono::milliseconds(1), std::chrono::seconds(1)),
          std::move(on_error))) {
  impl_->work.emplace(impl_->io.get_executor());
  // The thread holds the state too: destroyed from inside a callback, the service lets go of its
  // share at once and the thread frees the state once it has left the callback.
  impl_->driver = std::thread([m = impl_] { m->io.run(); });
  impl_->driver_id = impl_->driver.get_id();
}

TimerService::~TimerService() {
  Impl& m = *impl_;
  m.stop();
  // From inside a callback stop() did not join: the thread is left to end by itself, and frees
  // the state (its own copy of impl_) as it does.
  if (std::this_thread::get_id() == m.driver_id) m.driver.detach();
}

void TimerService::stop() {
  impl_->stop();
}

TimerService::Handle TimerService::schedule_after(Duration delay, Callback cb) {
  const Steady::time_point now = Steady::now();
  // now + delay, held at the end of the clock's range rather than wrapped into the past.
  const Duration room = Steady::time_point::max() - std::max(now, Steady::time_point{});
  const Steady::time_point when = delay <= Duration::zero() ? now
                                  : delay < room            ? now + delay
                                                            : Steady::time_point::max();
  return schedule_at(when, std::move(cb));
}

TimerService::Handle TimerService::schedule_at(Steady::time_point when, Callback cb) {
  Impl& m = *impl_;
  const uint64_t tick = m.ceil_tick(when);
  bool rearm = false;
  Handle h;
  {
    std::lock_guard lock(m.mu);
    if (m.stopped.load(std::memory_order_relaxed)) return Handle{};  // cb is destroyed unrun
    h = m.table.schedule(tick, std::move(cb));
    if (tick < m.armed) {  // due before the driver wakes: it must re-arm
      m.armed = tick;
      rearm = true;
    }
  }
  if (rearm) asio::post(m.io, [&m] { m.arm(); });
  return h;
}

bool TimerService::cancel(Handle h) {
  Impl& m = *impl_;
  Callback dropped;
  {
    std::lock_guard lock(m.mu);
    if (!m.table.cancel(h, dropped)) return false;
  }
  return true;  // `dropped` is destroyed here, without the lock: its destructor may call back
}

size_t TimerService::pending() const {
  std::lock_guard lock(impl_->mu);
  return impl_->table.size();
}

}  // namespace delayq
