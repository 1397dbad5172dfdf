// Waiting (see waiting.h): blocking waits on the caller's thread, async waits on one thread of
// the component's own.
#include "common/waiting.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace delayq {

Status Waiting::closed_error() {
  return Status(Errc::closed, "the queue is closed");
}
Status Waiting::stopped_error() {
  return Status(Errc::closed, "the consumer was stopped");
}
Status Waiting::withdrawn_error() {
  return Status(Errc::cancelled, "the reserve was withdrawn (stop requested) before a job came");
}

Waiting::Waiting(std::function<Steady::time_point()> next_look)
    : next_look_(std::move(next_look)) {}

Waiting::~Waiting() {
  close(closed_error());
  if (on_own_thread()) {
    std::fprintf(stderr, "delayq: a queue was destroyed from its own reserve_async callback\n");
    std::abort();
  }
  join();
}

Waiting::Steady::time_point Waiting::next_look() const {
  return next_look_ ? next_look_() : Steady::time_point::max();
}

Result<Delivery> Waiting::wait(const Try& attempt, Duration timeout,
                               const std::atomic<bool>* stop) {
  const Steady::time_point deadline =
      Steady::now() + std::clamp(timeout, Duration::zero(), kForever);
  auto stopped = [stop] { return stop != nullptr && stop->load(); };
  for (;;) {
    if (closed()) return closed_status();
    if (stopped()) return stopped_error();
    const uint64_t seen = epoch_.load();
    Attempt a = attempt(deadline);
    if (!a.wait) return std::move(a.result);
    // Asleep until a job is made ready (the epoch moves), it is time to look again, or the
    // wait ends. Counted in before next_look() is read: see "No lost wake-ups" in waiting.h.
    std::unique_lock lock(mu_);
    sleepers_.fetch_add(1);
    bool timed_out = false;
    while (epoch_.load() == seen && !closed_.load() && !stopped()) {
      const Steady::time_point wake = std::min({deadline, a.look_again, next_look()});
      if (cv_.wait_until(lock, wake) == std::cv_status::timeout) {
        timed_out = Steady::now() >= deadline && epoch_.load() == seen;
        break;
      }
    }
    sleepers_.fetch_sub(1);
    if (stopped()) return stopped_error();
    if (timed_out) return std::move(a.result);
  }
}

void Waiting::wait_async(Try attempt, Duration timeout, Done done, std::stop_token stop) {
  if (fork_.forked()) return done(fork_.refusal());  // before mu_, which a lost thread may hold
  auto w = std::make_unique<AsyncWait>();
  w->attempt = std::move(attempt);
  w->deadline = Steady::now() + std::clamp(timeout, Duration::zero(), kForever);
  w->done = std::move(done);
  w->stop = std::move(stop);
  // Registered before mu_ is taken: it runs at once if the stop came already, and takes mu_.
  if (w->stop.stop_possible()) w->on_stop.emplace(w->stop, [this] { poke(); });
  std::unique_lock lock(mu_);
  if (closed_.load()) {
    const Status why = why_;
    lock.unlock();
    finish(*w, why);
    return;
  }
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { serve(); });
    thread_id_ = thread_.get_id();
  }
  async_.push_back(std::move(w));
  ++pokes_;
  lock.unlock();
  cv_.notify_all();
}

void Waiting::ready() {
  epoch_.fetch_add(1);
  if (sleepers_.load() > 0) {
    { std::lock_guard lock(mu_); }
    cv_.notify_all();
  }
}

void Waiting::sooner() {
  if (sleepers_.load() > 0) interrupt();
}

void Waiting::interrupt() {
  { std::lock_guard lock(mu_); }
  cv_.notify_all();
}

void Waiting::poke() {
  {
    std::lock_guard lock(mu_);
    ++pokes_;
  }
  cv_.notify_all();
}

void Waiting::close(Status why) {
  {
    std::lock_guard lock(mu_);
    if (!closed_.load() || (why_.is(Errc::closed) && !why.is(Errc::closed))) why_ = std::move(why);
    closed_.store(true);
  }
  cv_.notify_all();
}

Status Waiting::closed_status() const {
  if (fork_.forked()) return fork_.refusal();  // before mu_, which a lost thread may hold
  std::lock_guard lock(mu_);
  return why_;
}

void Waiting::join() {
  std::thread t;
  {
    std::lock_guard lock(mu_);
    t = std::move(thread_);
  }
  if (!t.joinable()) return;
  t.join();
  std::lock_guard lock(mu_);
  thread_id_ = {};  // a joined thread's id may be given to a new thread
}

bool Waiting::on_own_thread() const {
  std::lock_guard lock(mu_);
  return thread_id_ == std::this_thread::get_id();
}

void Waiting::finish(AsyncWait& w, Result<Delivery> r) {
  w.on_stop.reset();
  w.done(std::move(r));
}

void Waiting::serve() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (closed_.load()) {
      AsyncList left = std::move(async_);
      async_.clear();
      const Status why = why_;
      lock.unlock();
      for (auto& w : left) finish(*w, why);
      return;
    }
    if (async_.empty()) {
      cv_.wait(lock, [&] { return closed_.load() || !async_.empty(); });
      continue;
    }
    const uint64_t seen = epoch_.load();
    const uint64_t poked = pokes_;
    AsyncList batch = std::move(async_);
    async_.clear();
    lock.unlock();
    const Steady::time_point wake = serve_once(batch);
    lock.lock();
    async_.splice(async_.begin(), batch);  // the older waiters stay first
    if (async_.empty() || closed_.load()) continue;
    sleepers_.fetch_add(1);
    while (epoch_.load() == seen && pokes_ == poked && !closed_.load())
      if (cv_.wait_until(lock, std::min(wake, next_look())) == std::cv_status::timeout) break;
    sleepers_.fetch_sub(1);
  }
}

Waiting::Steady::time_point Waiting::serve_once(AsyncList& batch) {
  Steady::time_point wake = Steady::time_point::max();
  for (auto it = batch.begin(); it != batch.end();) {
    AsyncWait& w = **it;
    std::optional<Result<Delivery>> end;
    if (closed_.load()) {
      end = closed_status();
    } else if (w.stop.stop_requested()) {
      end = withdrawn_error();  // checked before each try: nothing is taken after the request
    } else {
      Attempt a = w.attempt(w.deadline);
      if (!a.wait || Steady::now() >= w.deadline)
        end = std::move(a.result);
      else
        wake = std::min({wake, w.deadline, a.look_again});
    }
    if (!end) {
      ++it;
      continue;
    }
    std::unique_ptr<AsyncWait> done = std::move(*it);
    it = batch.erase(it);
    finish(*done, std::move(*end));
  }
  return wake;
}

}  // namespace delayq
