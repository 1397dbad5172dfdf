// Waiting for jobs, for the Redis backend: blocking reserve() calls and reserve_async() waiters,
// driven by a "look for a job now / when to look again" function that the backend gives.
//
// A wait looks; when nothing was found it sleeps until the look's `look_again` has passed, its
// own deadline comes, or wake() says that something may be ready (a wake-up message, a new
// async waiter), and then looks again. The epoch that wake() moves is read before each look, so
// a wake-up that comes during a look is never lost. Async waiters are served, oldest first, by
// one thread of their own, which also runs their callbacks.
//
// This is the Redis backend's own waiting, kept behind this narrow interface so that the
// shared waiting component (issue 10, item 1) can take its place.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "delayq/clock.h"
#include "delayq/error.h"
#include "delayq/job.h"

namespace delayq::redis {

// What one look for a job found.
struct Attempt {
  // A job, or an error that ends the wait; or nothing yet: timeout (nothing ready) or
  // unavailable (the server cannot be reached now), and the wait goes on.
  Result<Delivery> result = Status(Errc::timeout, "");
  // When nothing was found: how long until another look is worth it.
  Duration look_again{};
};

class Waiting {
 public:
  using Look = std::function<Attempt(std::span<const std::string> topics)>;

  // `blocking` looks for reserve(), on the caller's thread; `async` for the reserve_async()
  // waiters, on the waiting thread. Both must stay callable until close() and join().
  Waiting(Look blocking, Look async)
      : blocking_(std::move(blocking)), async_look_(std::move(async)) {}
  // Aborts, saying why, when called on the waiting thread (the queue destroyed from its own
  // reserve_async callback: its state would be freed under the thread's feet); else join()s.
  ~Waiting();
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;

  // Starts the thread that serves the async waiters.
  void start();

  // Looks until a job comes and returns it, or until the wait ends: an error from a look,
  // `timeout` passed (the last look's timeout or unavailable), `stop` set and interrupt()
  // called (closed: "the consumer was stopped"), or close() (closed). invalid_argument for no
  // topics.
  Result<Delivery> wait(std::span<const std::string> topics, Duration timeout,
                        const std::atomic<bool>* stop);
  // The same on the waiting thread, which calls `done` once with the result; cancelled when
  // `stop` is requested first. `done` is called at once, on the caller's thread, for no topics
  // or after close().
  void wait_async(std::vector<std::string> topics, Duration timeout,
                  std::function<void(Result<Delivery>)> done, std::stop_token stop);

  // Something may be ready now: every wait looks again.
  void wake();
  // A `stop` flag of a wait() was set: the waits look at their flags.
  void interrupt();
  // Ends every wait with closed, now and from now on.
  void close();
  // Waits for the waiting thread to end (after close()), unless called on it.
  void join();

 private:
  struct AsyncWaiter {
    std::vector<std::string> topics;
    std::chrono::steady_clock::time_point deadline;
    std::function<void(Result<Delivery>)> done;
    std::stop_token stop;  // requested: withdrawn, claim nothing more
    // Wakes the waiting thread. Destroyed without mu_ held: it waits for a running callback,
    // which takes mu_.
    std::unique_ptr<std::stop_callback<std::function<void()>>> on_stop;
  };

  void serve_async();
  // One look for each waiter of `batch`; those that are done leave it. Returns when to look
  // again for the others.
  std::chrono::steady_clock::time_point look_for(std::list<AsyncWaiter>& batch);

  const Look blocking_;
  const Look async_look_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> epoch_{0};  // moved by every wake-up
  std::atomic<bool> closed_{false};
  std::list<AsyncWaiter> async_;  // under mu_
  std::thread thread_;
};

}  // namespace delayq::redis
