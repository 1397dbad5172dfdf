// Queue::consume(): worker threads over any backend's reserve / ack / nack, taking jobs and
// sending acks in batches (the contract is in queue.h, above consume()).
#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "common/rules.h"
#include "common/waiting.h"
#include "delayq/clock.h"
#include "delayq/queue.h"

namespace delayq {

struct Consumer::State {
  Queue* queue = nullptr;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> handled{0};
  std::atomic<int> running{0};
};

Consumer& Consumer::operator=(Consumer&& other) noexcept {
  if (this != &other) {
    stop();
    state_ = std::move(other.state_);
    threads_ = std::move(other.threads_);
  }
  return *this;
}

Consumer::~Consumer() {
  stop();
}

void Consumer::stop() {
  if (!state_) return;
  state_->stop.store(true);
  // Threads that are still running are blocked in the queue, which is alive while they are.
  if (state_->running.load() > 0) state_->queue->wake_waiters();
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

uint64_t Consumer::handled() const {
  return state_ ? state_->handled.load() : 0;
}

namespace {

using Steady = std::chrono::steady_clock;

// The handler time one batch may hold: the jobs of a batch wait for the ones before them, and
// their acks for the end of the batch, about this long at most.
constexpr Steady::duration kBatchBudget = std::chrono::milliseconds(1);
constexpr size_t kMaxBatch = 64;

// One consume() thread: takes a batch, hands its jobs to the handler one by one, settles each as
// the handler decided (acks gathered for ack_batch, the rest at once), and sizes the next batch
// by how fast the handler was.
class Worker {
 public:
  // Queue::reserve_batch_interruptible() of the queue (protected: consume() binds it).
  using ReserveBatch = std::function<Result<std::vector<Delivery>>(
      std::span<const std::string>, size_t, Duration, const std::atomic<bool>&)>;

  Worker(Queue& q, ReserveBatch reserve, std::atomic<bool>& stop, std::atomic<uint64_t>& handled,
         const Handler& h)
      : q_(q), reserve_(std::move(reserve)), stop_(stop), handled_(handled), handler_(h) {}

  void run(const std::vector<std::string>& topics) {
    while (!stop_.load()) {
      Result<std::vector<Delivery>> batch =
          reserve_(topics, batch_size(), std::chrono::hours(1), stop_);
      if (batch.is(Errc::timeout)) continue;
      if (!batch) break;  // closed, or stopped
      handle(*batch);
      flush();
    }
    flush();
  }

 private:
  void handle(std::vector<Delivery>& batch) {
    const Steady::time_point arrived = Steady::now();
    const TimePoint wall = SystemClock::instance().now();
    for (Delivery& d : batch) {
      // Stopped, or too little of the lease left to be worth starting: back undone. The first
      // job is always handed out, as reserve() would (a lease timed on another machine's clock
      // may look short here).
      const Duration left = rules::distance(wall, d.lease_deadline);
      const bool late = &d != &batch.front() && Steady::now() - arrived >= left / 2;
      if (stop_.load() || late) {
        (void)q_.release(d.token);
        continue;
      }
      if (!acks_.empty() && Steady::now() - oldest_ack_ >= kBatchBudget) flush();
      settle(d, call(d));
    }
  }

  // The handler's decision; nothing for a handler that threw (a failed attempt). Times it.
  std::optional<HandlerResult> call(const Delivery& d) {
    const Steady::time_point start = Steady::now();
    std::optional<HandlerResult> r;
    try {
      r = handler_(d);
    } catch (...) {
      r.reset();
    }
    const double ns = std::chrono::duration<double, std::nano>(Steady::now() - start).count();
    ns_per_job_ = ns_per_job_ < 0 ? ns : 0.8 * ns_per_job_ + 0.2 * ns;
    return r;
  }

  void settle(const Delivery& d, const std::optional<HandlerResult>& r) {
    if (r && r->action == HandlerResult::Action::ack) {
      if (acks_.empty()) oldest_ack_ = Steady::now();
      acks_.push_back(d.token);
      return;
    }
    Status s;
    if (!r) {
      s = q_.nack(d.token);
    } else if (r->action == HandlerResult::Action::retry) {
      // A negative delay means "now"; one beyond max_delay falls back to the policy.
      std::optional<Duration> delay = r->delay;
      if (delay && *delay < Duration::zero()) delay = Duration::zero();
      s = q_.nack(d.token, delay);
      if (s.is(Errc::invalid_argument)) s = q_.nack(d.token);
    } else {
      s = q_.dead_letter(d.token);
    }
    // A refused settlement (the lease ran out meanwhile) needs no action here: the job was
    // already retried by the queue.
    (void)s;
    handled_.fetch_add(1);
  }

  void flush() {
    if (acks_.empty()) return;
    (void)q_.ack_batch(acks_);  // refusals: as in settle()
    handled_.fetch_add(acks_.size());
    acks_.clear();
  }

  // As many jobs as the handler gets through in kBatchBudget: one until it was timed.
  size_t batch_size() const {
    if (ns_per_job_ < 0) return 1;
    const double budget = std::chrono::duration<double, std::nano>(kBatchBudget).count();
    const double n = budget / std::max(ns_per_job_, 1.0);
    return static_cast<size_t>(std::clamp(n, 1.0, static_cast<double>(kMaxBatch)));
  }

  Queue& q_;
  ReserveBatch reserve_;
  std::atomic<bool>& stop_;
  std::atomic<uint64_t>& handled_;
  const Handler& handler_;
  std::vector<Token> acks_;  // handled, to be acked together
  Steady::time_point oldest_ack_{};
  double ns_per_job_ = -1;  // the handler's time per job, a moving average
};

}  // namespace

Consumer Queue::consume(std::string topic, Handler handler, size_t concurrency) {
  Consumer c;
  c.state_ = std::make_shared<Consumer::State>();
  c.state_->queue = this;
  const size_t n = concurrency == 0 ? 1 : concurrency;
  c.state_->running.store(static_cast<int>(n));
  for (size_t i = 0; i < n; ++i) {
    auto reserve = [this](std::span<const std::string> topics, size_t max, Duration timeout,
                          const std::atomic<bool>& stop) {
      return reserve_batch_interruptible(topics, max, timeout, stop);
    };
    c.threads_.emplace_back([st = c.state_, topic, handler, reserve] {
      Worker(*st->queue, reserve, st->stop, st->handled, handler).run({topic});
      st->running.fetch_sub(1);
    });
  }
  return c;
}

std::vector<Status> Queue::ack_batch(std::span<const Token> tokens) {
  std::vector<Status> out;
  out.reserve(tokens.size());
  for (const Token& t : tokens) out.push_back(ack(t));
  return out;
}

Result<Delivery> Queue::reserve_interruptible(std::span<const std::string> topics, Duration timeout,
                                              const std::atomic<bool>& stop) {
  // A backend that does not wait through Waiting itself: each try is a reserve() of at most
  // 100 ms, so that `stop` is seen within that, and the next try follows at once.
  Waiting waiting;
  auto attempt = [&](Waiting::Steady::time_point deadline) {
    const Waiting::Steady::time_point now = Waiting::Steady::now();
    const Duration slice = std::min<Duration>(deadline - now, std::chrono::milliseconds(100));
    Result<Delivery> d = reserve(topics, slice);
    const bool wait = d.is(Errc::timeout);
    return Waiting::Attempt{std::move(d), wait, now};
  };
  return waiting.wait(attempt, timeout, &stop);
}

Result<std::vector<Delivery>> Queue::reserve_batch_interruptible(
    std::span<const std::string> topics, size_t /*max*/, Duration timeout,
    const std::atomic<bool>& stop) {
  Result<Delivery> d = reserve_interruptible(topics, timeout, stop);
  if (!d) return d.status();
  std::vector<Delivery> out;
  out.push_back(std::move(*d));
  return out;
}

}  // namespace delayq
