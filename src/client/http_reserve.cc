// HttpQueue's waits (see http_queue.h): reserve() as /pop long polls, reserve_async() on a thread
// of its own per wait, and the interruptible reserve of consume().
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "client/http_queue.h"
#include "common/rules.h"
#include "wire/jobs.h"

namespace delayq::client {

namespace json = wire::json;
using namespace std::chrono;

namespace {

// The longest one /pop waits before the client asks again (delayqd cuts a longer one to its
// --pop-timeout, 180 s by default, and refuses one beyond its max_delay).
constexpr Duration kLongestPoll = seconds(60);

// An eventfd, closed when the object goes.
struct EventFd {
  int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ~EventFd() {
    if (fd >= 0) ::close(fd);
  }
  void signal() const {
    const uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
  }
  void drain() const {
    uint64_t n = 0;
    [[maybe_unused]] auto r = ::read(fd, &n, sizeof n);
  }
};

}  // namespace

Result<Delivery> HttpQueue::pop(std::span<const std::string> topics, Duration timeout, int wake) {
  if (Status s = usable(); !s.ok()) return s;
  if (Status s = rules::check_topics(topics); !s.ok()) return s;
  for (const std::string& t : topics)
    if (std::string why = rules::topic_text_problem(t); !why.empty())
      return Status(Errc::invalid_argument, why);
  const auto start = steady_clock::now();
  const Duration total = std::clamp(timeout, Duration::zero(), rules::kLongestDelay);
  for (;;) {
    const Duration left = total - duration_cast<Duration>(steady_clock::now() - start);
    // Whole milliseconds, rounded up: the wait is never shorter than asked.
    const milliseconds wait = ceil<milliseconds>(std::clamp(left, Duration::zero(), kLongestPoll));
    json::Writer w;
    w.begin_object().key("topics").begin_array();
    for (const std::string& t : topics) w.value(t);
    w.end_array().key("timeout_ms").value(static_cast<int64_t>(wait.count())).end_object();
    auto data = call("POST", "/pop", w.str(), wait + milliseconds(1), wake);
    if (!data) return data.status();
    if (!data->is_null()) return wire::read_delivery(*data);
    // Asked again until the whole timeout passed: the daemon cuts a wait to its --pop-timeout.
    if (steady_clock::now() - start >= total) return rules::reserve_timeout(topics);
  }
}

Result<Delivery> HttpQueue::reserve(std::span<const std::string> topics, Duration timeout) {
  return pop(topics, timeout, -1);
}

// consume()'s reserve: wake_waiters() ends the /pop of every consumer's wait (one is stopping);
// the others ask again for the rest of their time.
Result<Delivery> HttpQueue::reserve_interruptible(std::span<const std::string> topics,
                                                  Duration timeout,
                                                  const std::atomic<bool>& stop) {
  if (Status s = usable(); !s.ok()) return s;
  const EventFd wake;
  if (wake.fd < 0) return reserve(topics, std::min(timeout, Duration(milliseconds(100))));
  {
    std::lock_guard lock(mu_);
    consumer_fds_.insert(wake.fd);
  }
  const auto until = steady_clock::now() + duration_cast<steady_clock::duration>(
                                               std::clamp(timeout, Duration::zero(), kLongestPoll));
  Result<Delivery> r = Status(Errc::closed, "the consumer stopped");
  while (!stop.load()) {
    r = pop(topics, duration_cast<Duration>(until - steady_clock::now()), wake.fd);
    if (!r.is(Errc::cancelled)) break;
    wake.drain();
    r = Status(Errc::closed, "the consumer stopped");
  }
  std::lock_guard lock(mu_);
  consumer_fds_.erase(wake.fd);
  return r;
}

void HttpQueue::reserve_async(std::vector<std::string> topics, Duration timeout,
                              std::function<void(Result<Delivery>)> done, std::stop_token stop) {
  Status refused = usable();
  if (refused.ok()) refused = rules::check_topics(topics);
  if (!refused.ok()) return done(refused);
  std::unique_lock lock(waiters_mu_);
  // close() set closed_ before it took the waiters: a wait started after that answers here.
  if (closed_.load()) {
    lock.unlock();
    return done(usable());
  }
  // The waits that ended are joined now, so that the list stays as long as the waits in flight.
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (!it->finished.load()) {
      ++it;
      continue;
    }
    it->thread.join();
    it = waiters_.erase(it);
  }
  Waiter& waiter = waiters_.emplace_back();
  waiter.thread = std::thread([this, &waiter, topics = std::move(topics), timeout,
                               done = std::move(done), stop = std::move(stop)]() mutable {
    Result<Delivery> r = Status(Errc::cancelled, "the reserve was withdrawn before it began");
    {
      const EventFd wake;
      std::stop_callback on_stop(stop, [&wake] { wake.signal(); });
      if (!stop.stop_requested()) r = pop(topics, timeout, wake.fd);
      if (r.is(Errc::cancelled) && !closed_.load())
        r = Status(Errc::cancelled, "the reserve was withdrawn (its stop_token was requested)");
    }
    // Marked first: a callback may close or destroy the queue, which then detaches this thread.
    waiter.finished.store(true);
    done(std::move(r));
  });
}

}  // namespace delayq::client
