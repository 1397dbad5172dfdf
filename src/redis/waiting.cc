// Waiting for jobs (see waiting.h).
#include "redis/waiting.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace delayq::redis {

namespace {

using Steady = std::chrono::steady_clock;

// Waits longer than this are "forever" (and keep time_point arithmetic in range).
constexpr Duration kForever = std::chrono::hours(24 * 365 * 100);

Steady::time_point deadline_after(Duration timeout) {
  return Steady::now() + std::clamp(timeout, Duration::zero(), kForever);
}

Status closed_error() {
  return Status(Errc::closed, "the queue is closed");
}

Status no_topic() {
  return Status(Errc::invalid_argument, "reserve needs at least one topic");
}

// Whether a look's result leaves the wait going: nothing ready, or the server away for now.
bool goes_on(const Result<Delivery>& r) {
  return r.is(Errc::timeout) || r.is(Errc::unavailable);
}

}  // namespace

Waiting::~Waiting() {
  if (std::this_thread::get_id() == thread_.get_id()) {
    std::fprintf(stderr,
                 "delayq: a Redis queue was destroyed from its own reserve_async callback\n");
    std::abort();
  }
  join();
}

void Waiting::start() {
  thread_ = std::thread([this] { serve_async(); });
}

Result<Delivery> Waiting::wait(std::span<const std::string> topics, Duration timeout,
                               const std::atomic<bool>* stop) {
  if (topics.empty()) return no_topic();
  const Steady::time_point deadline = deadline_after(timeout);
  for (;;) {
    if (closed_.load()) return closed_error();
    if (stop && stop->load()) return Status(Errc::closed, "the consumer was stopped");
    const uint64_t seen = epoch_.load();
    Attempt a = blocking_(topics);
    if (!goes_on(a.result)) return std::move(a.result);
    const Steady::time_point now = Steady::now();
    if (now >= deadline) return std::move(a.result);
    const Steady::time_point wake = std::min(deadline, now + a.look_again);
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, wake, [&] {
      return epoch_.load() != seen || closed_.load() || (stop && stop->load());
    });
  }
}

void Waiting::wait_async(std::vector<std::string> topics, Duration timeout,
                         std::function<void(Result<Delivery>)> done, std::stop_token stop) {
  if (topics.empty()) {
    done(no_topic());
    return;
  }
  AsyncWaiter w{std::move(topics), deadline_after(timeout), std::move(done), stop, nullptr};
  // A withdrawal wakes the waiting thread, which checks `stop` before every look. Registered
  // before mu_ is taken: it runs at once if the stop came already, and takes mu_.
  if (stop.stop_possible())
    w.on_stop = std::make_unique<std::stop_callback<std::function<void()>>>(
        stop, std::function<void()>([this] { wake(); }));
  std::unique_lock lock(mu_);
  if (closed_.load()) {
    lock.unlock();
    w.on_stop.reset();
    w.done(closed_error());
    return;
  }
  async_.push_back(std::move(w));
  epoch_.fetch_add(1);
  cv_.notify_all();
}

void Waiting::wake() {
  std::lock_guard lock(mu_);
  epoch_.fetch_add(1);
  cv_.notify_all();
}

void Waiting::interrupt() {
  std::lock_guard lock(mu_);
  cv_.notify_all();
}

void Waiting::close() {
  std::lock_guard lock(mu_);
  closed_.store(true);
  cv_.notify_all();
}

void Waiting::join() {
  if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) thread_.join();
}

void Waiting::serve_async() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (closed_.load()) {
      std::list<AsyncWaiter> left = std::move(async_);
      async_.clear();
      lock.unlock();
      for (AsyncWaiter& w : left) w.done(closed_error());
      return;
    }
    if (async_.empty()) {
      cv_.wait(lock, [&] { return closed_.load() || !async_.empty(); });
      continue;
    }
    const uint64_t seen = epoch_.load();
    std::list<AsyncWaiter> batch = std::move(async_);
    async_.clear();
    lock.unlock();
    const Steady::time_point wake = look_for(batch);
    lock.lock();
    async_.splice(async_.begin(), batch);
    if (!async_.empty() && !closed_.load())
      cv_.wait_until(lock, wake, [&] { return epoch_.load() != seen || closed_.load(); });
  }
}

Steady::time_point Waiting::look_for(std::list<AsyncWaiter>& batch) {
  Steady::time_point wake = Steady::time_point::max();
  for (auto it = batch.begin(); it != batch.end();) {
    if (it->stop.stop_requested()) {
      it->done(
          Status(Errc::cancelled, "the reserve was withdrawn (stop requested) before a job came"));
      it = batch.erase(it);
      continue;
    }
    Attempt a = async_look_(it->topics);
    const Steady::time_point now = Steady::now();
    if (!goes_on(a.result) || now >= it->deadline) {
      it->done(std::move(a.result));
      it = batch.erase(it);
      continue;
    }
    wake = std::min({wake, it->deadline, now + a.look_again});
    ++it;
  }
  return wake;
}

}  // namespace delayq::redis
