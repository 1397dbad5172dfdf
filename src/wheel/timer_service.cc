#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include "delayq/timer_service.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <mutex>
#include <thread>
#include <vector>

namespace delayq {

namespace asio = boost::asio;
using Steady = std::chrono::steady_clock;

struct TimerService::Impl {
  explicit Impl(Duration t) : tick(t), origin(Steady::now()), timer(io) {}

  const Duration tick;
  const Steady::time_point origin;
  mutable std::mutex mu;
  TimingWheel wheel;
  detail::Slab<Callback> callbacks;  // indexed by wheel payload
  std::vector<uint32_t> free_slots;
  uint64_t armed = UINT64_MAX;  // under mu: tick the driver's timer is (being) armed for
  asio::io_context io;
  asio::steady_timer timer;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread driver;

  uint64_t ceil_tick(Steady::time_point t) const {
    const int64_t ns = (t - origin).count();
    return ns <= 0 ? 0 : (static_cast<uint64_t>(ns) + tick.count() - 1) / tick.count();
  }
  uint64_t floor_tick(Steady::time_point t) const {
    const int64_t ns = (t - origin).count();
    return ns <= 0 ? 0 : static_cast<uint64_t>(ns) / tick.count();
  }

  // Driver thread.
  void arm() {
    std::optional<uint64_t> next;
    {
      std::lock_guard lock(mu);
      next = wheel.next_deadline();
      armed = next ? *next : UINT64_MAX;
    }
    if (!next) return;
    timer.expires_at(origin + tick * static_cast<int64_t>(*next));
    timer.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) fire();
    });
  }

  void fire() {
    std::vector<Callback> due;
    {
      std::lock_guard lock(mu);
      wheel.advance(floor_tick(Steady::now()), [&](uint64_t slot, uint64_t) {
        due.push_back(std::move(callbacks[slot]));
        callbacks[slot] = nullptr;
        free_slots.push_back(static_cast<uint32_t>(slot));
      });
    }
    for (Callback& cb : due) cb();
    arm();
  }
};

TimerService::TimerService(Duration tick)
    : impl_(std::make_unique<Impl>(std::clamp<Duration>(tick, std::chrono::milliseconds(1),
                                                        std::chrono::seconds(1)))) {
  impl_->work.emplace(impl_->io.get_executor());
  impl_->driver = std::thread([m = impl_.get()] { m->io.run(); });
}

TimerService::~TimerService() { stop(); }

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
    uint32_t slot;
    if (!m.free_slots.empty()) {
      slot = m.free_slots.back();
      m.free_slots.pop_back();
      m.callbacks[slot] = std::move(cb);
    } else {
      slot = m.callbacks.emplace_back();
      m.callbacks[slot] = std::move(cb);
    }
    h = m.wheel.schedule(tick, slot);
    if (tick < m.armed) {
      m.armed = tick;
      rearm = true;
    }
  }
  if (rearm) asio::post(m.io, [&m] { m.arm(); });
  return h;
}

bool TimerService::cancel(Handle h) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  if (!m.wheel.pending(h)) return false;
  const uint32_t slot = static_cast<uint32_t>(m.wheel.payload(h));
  m.wheel.cancel(h);
  m.callbacks[slot] = nullptr;
  m.free_slots.push_back(slot);
  return true;
}

size_t TimerService::pending() const {
  std::lock_guard lock(impl_->mu);
  return impl_->wheel.size();
}

}  // namespace delayq
