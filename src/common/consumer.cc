// Queue::consume(): worker threads over any backend's reserve / ack / nack.
#include <exception>

#include "common/waiting.h"
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

Consumer::~Consumer() { stop(); }

void Consumer::stop() {
  if (!state_) return;
  state_->stop.store(true);
  // Threads that are still running are blocked in the queue, which is alive while they are.
  if (state_->running.load() > 0) state_->queue->wake_waiters();
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

uint64_t Consumer::handled() const { return state_ ? state_->handled.load() : 0; }

Consumer Queue::consume(std::string topic, Handler handler, size_t concurrency) {
  Consumer c;
  c.state_ = std::make_shared<Consumer::State>();
  c.state_->queue = this;
  const size_t n = concurrency == 0 ? 1 : concurrency;
  c.state_->running.store(static_cast<int>(n));
  for (size_t i = 0; i < n; ++i) {
    c.threads_.emplace_back([st = c.state_, topic, handler] {
      const std::vector<std::string> topics{topic};
      Queue& q = *st->queue;
      while (!st->stop.load()) {
        Result<Delivery> d = q.reserve_interruptible(topics, std::chrono::hours(1), st->stop);
        if (d.is(Errc::timeout)) continue;
        if (!d) break;  // closed, or stopped
        std::optional<HandlerResult> r;
        try {
          r = handler(*d);
        } catch (...) {
          r.reset();  // a throwing handler is a failed attempt
        }
        Status s;
        if (!r) {
          s = q.nack(d->token);
        } else if (r->action == HandlerResult::Action::ack) {
          s = q.ack(d->token);
        } else if (r->action == HandlerResult::Action::retry) {
          // A negative delay means "now"; one beyond max_delay falls back to the policy.
          std::optional<Duration> delay = r->delay;
          if (delay && *delay < Duration::zero()) delay = Duration::zero();
          s = q.nack(d->token, delay);
          if (s.is(Errc::invalid_argument)) s = q.nack(d->token);
        } else {
          s = q.dead_letter(d->token);
        }
        // A refused settlement (the lease ran out meanwhile) needs no action here: the job
        // was already retried by the queue.
        (void)s;
        st->handled.fetch_add(1);
      }
      st->running.fetch_sub(1);
    });
  }
  return c;
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

}  // namespace delayq
