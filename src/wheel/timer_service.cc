#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include "delayq/timer_service.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "timer_table.h"

namespace delayq {

namespace asio = boost::asio;
using Steady = std::chrono::steady_clock;

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
  explicit Impl(Duration t)
      : tick(t), div(static_cast<uint64_t>(t.count())), origin(Steady::now()), timer(io) {}

  const Duration tick;
  const TickDivider div;
  const Steady::time_point origin;
  mutable std::mutex mu;
  detail::TimerTable table;
  uint64_t armed = UINT64_MAX;  // under mu: tick the driver's timer is (being) armed for
  std::vector<Callback> due;    // driver thread only: the callbacks of one firing
  asio::io_context io;
  asio::steady_timer timer;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread driver;

  uint64_t ceil_tick(Steady::time_point t) const {
    const int64_t ns = (t - origin).count();
    return ns <= 0 ? 0 : div.ceil(static_cast<uint64_t>(ns));
  }
  uint64_t floor_tick(Steady::time_point t) const {
    const int64_t ns = (t - origin).count();
    return ns <= 0 ? 0 : div.floor(static_cast<uint64_t>(ns));
  }

  // Driver thread.
  void arm() {
    std::optional<uint64_t> next;
    {
      std::lock_guard lock(mu);
      next = table.next_deadline();
      armed = next ? *next : UINT64_MAX;
    }
    if (!next) return;
    timer.expires_at(origin + tick * static_cast<int64_t>(*next));
    timer.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) fire();
    });
  }

  void fire() {
    {
      std::lock_guard lock(mu);
      table.take_due(floor_tick(Steady::now()), due);
    }
    for (Callback& cb : due) cb();
    due.clear();  // destroys the callables, still without the lock
    arm();
  }
};

TimerService::TimerService(Duration tick)
    : impl_(std::make_unique<Impl>(
          std::clamp<Duration>(tick, std::chrono::milliseconds(1), std::chrono::seconds(1)))) {
  impl_->work.emplace(impl_->io.get_executor());
  impl_->driver = std::thread([m = impl_.get()] { m->io.run(); });
}

TimerService::~TimerService() {
  stop();
}

void TimerService::stop() {
  Impl& m = *impl_;
  if (!m.work) return;
  asio::post(m.io, [&m] { m.timer.cancel(); });
  m.work.reset();
  m.io.stop();
  if (m.driver.joinable()) m.driver.join();
}

TimerService::Handle TimerService::schedule_after(Duration delay, Callback cb) {
  return schedule_at(Steady::now() + std::max(delay, Duration::zero()), std::move(cb));
}

TimerService::Handle TimerService::schedule_at(Steady::time_point when, Callback cb) {
  Impl& m = *impl_;
  const uint64_t tick = m.ceil_tick(when);
  bool rearm = false;
  Handle h;
  {
    std::lock_guard lock(m.mu);
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
