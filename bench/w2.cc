// W2 on TimerService and on one Asio steady_timer per entry (the heap's is in heap_scheduler.cc).
#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include "w2.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <optional>
#include <thread>

#include "delayq/timer_service.h"

namespace delayq::bench {
namespace {

namespace asio = boost::asio;

// One steady_timer per entry on an io_context run by one thread: the service's own timer thread
// of W2. Cancel is steady_timer::cancel(), which stops the handler unless it is already queued
// to run.
class AsioTimers {
 public:
  explicit AsioTimers(size_t n) : work_(asio::make_work_guard(io_)) {
    timers_.reserve(n);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~AsioTimers() { stop(); }

  asio::steady_timer* schedule_after(Duration delay, W2Fire fire) {
    timers_.push_back(std::make_unique<asio::steady_timer>(io_, delay));
    asio::steady_timer* t = timers_.back().get();
    t->async_wait([fire](const boost::system::error_code& ec) {
      if (!ec) fire();
    });
    return t;
  }
  bool cancel(asio::steady_timer* t) { return t->cancel() > 0; }
  void stop() {
    work_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::vector<std::unique_ptr<asio::steady_timer>> timers_;
  std::thread thread_;
};

}  // namespace

int run_w2_timer_service(const TimerRun& r) {
  TimerService timers(std::chrono::milliseconds(r.tick_ms));
  return run_w2_on(timers, "delayq-memory", r, ",\"tick_ms\":" + std::to_string(r.tick_ms));
}

int run_w2_asio(const TimerRun& r) {
  AsioTimers timers(r.jobs);
  return run_w2_on(timers, "asio-steady-timer", r, ",\"threads\":1");
}

}  // namespace delayq::bench
