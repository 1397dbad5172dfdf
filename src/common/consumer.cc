// Queue::consume(): worker threads over any backend's reserve / ack / nack, taking jobs and
// sending acks in batches (the contract is in queue.h, above consume()).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <exception>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "common/fork_guard.h"
#include "common/rules.h"
#include "common/waiting.h"
#include "delayq/clock.h"
#include "delayq/queue.h"

namespace delayq {

struct Consumer::State {
  // The queue, while it is open: its close() (Queue::stop_consumers) stops this consumer and
  // clears it, under mu.
  Queue* queue = nullptr;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> handled{0};
  const ForkGuard fork;
  std::mutex mu;
  std::condition_variable ended_cv;  // a thread ended (running went down)
  int running = 0;                   // under mu: threads not yet ended
  std::vector<std::thread> threads;  // under mu; taken by the first stop, which joins them
  std::vector<std::thread::id> ids;  // under mu: the threads' ids, for a stop from a handler
};

struct Queue::Consumers {
  std::mutex mu;
  std::vector<std::weak_ptr<Consumer::State>> states;  // under mu
};

std::shared_ptr<Queue::Consumers> Queue::make_consumers() {
  return std::make_shared<Consumers>();
}

// Stops the consumer of `st` and waits until its threads ended, except the calling thread when it
// is one of them (a stop from a handler: it ends when its handler returns, detached). The first
// caller joins the threads; a concurrent one waits for that. `forget_queue`: the queue is
// closing, and the state must not reach it afterwards.
void Consumer::halt(State& st, bool forget_queue) {
  if (st.fork.forked()) {
    // In a child forked after the open: the threads stayed in the parent (common/fork_guard.h).
    (void)new std::vector<std::thread>(std::move(st.threads));
    return;
  }
  st.stop.store(true);
  const std::thread::id self = std::this_thread::get_id();
  std::vector<std::thread> mine;
  int own = 0;  // 1 when called from one of the consumer's handlers
  {
    std::lock_guard lock(st.mu);
    own = std::find(st.ids.begin(), st.ids.end(), self) != st.ids.end() ? 1 : 0;
    // Threads that are still running may be blocked in the queue, which is alive while it is set.
    if (st.queue != nullptr && st.running > 0) st.queue->wake_waiters();
    mine = std::move(st.threads);
    st.threads.clear();
  }
  for (std::thread& t : mine) {
    if (t.get_id() == self)
      t.detach();  // ends when its handler returns
    else
      t.join();
  }
  // A concurrent stop may have taken the threads: wait until they ended all the same, so that
  // nothing uses the queue after this returns. Not from a handler of this consumer: two handlers
  // stopping it at once would wait for each other (the one that took the threads joins the other).
  std::unique_lock lock(st.mu);
  st.ended_cv.wait(lock, [&] { return own == 1 || st.running == 0; });
  if (forget_queue) st.queue = nullptr;
}

Consumer& Consumer::operator=(Consumer&& other) noexcept {
  if (this != &other) {
    stop();
    state_ = std::move(other.state_);
  }
  return *this;
}

Consumer::~Consumer() {
  stop();
}

void Consumer::stop() {
  if (state_) halt(*state_, false);
}

void Queue::stop_consumers() {
  std::vector<std::shared_ptr<Consumer::State>> live;
  {
    std::lock_guard lock(consumers_->mu);
    for (const std::weak_ptr<Consumer::State>& w : consumers_->states)
      if (std::shared_ptr<Consumer::State> st = w.lock()) live.push_back(std::move(st));
    consumers_->states.clear();
  }
  for (const auto& st : live) Consumer::halt(*st, true);
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
  Consumer::State& st = *c.state_;
  st.queue = this;
  const size_t n = concurrency == 0 ? 1 : concurrency;
  {
    // Registered before its threads start: a close() from now on stops them. Finished states are
    // dropped here too, so the list stays as long as the consumers alive.
    std::lock_guard lock(consumers_->mu);
    std::erase_if(consumers_->states, [](const auto& w) { return w.expired(); });
    consumers_->states.push_back(c.state_);
  }
  std::lock_guard lock(st.mu);
  for (size_t i = 0; i < n; ++i) {
    auto reserve = [this](std::span<const std::string> topics, size_t max, Duration timeout,
                          const std::atomic<bool>& stop) {
      return reserve_batch_interruptible(topics, max, timeout, stop);
    };
    ++st.running;
    st.threads.emplace_back([state = c.state_, q = this, topic, handler, reserve] {
      Worker(*q, reserve, state->stop, state->handled, handler).run({topic});
      {
        std::lock_guard end(state->mu);
        --state->running;
      }
      state->ended_cv.notify_all();
    });
    st.ids.push_back(st.threads.back().get_id());
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
