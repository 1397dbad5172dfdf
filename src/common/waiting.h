// Waiting: how consumers wait for a job, written once for every backend.
//
// A backend drives it with one question, asked again whenever the answer may have changed: "try
// to take a job now; if there is none, when should I look again?" (a Try, returning an
// Attempt). It tells the component when the answer may have changed:
//  - ready():   jobs became ready; every waiter tries again at once.
//  - sooner():  a deadline moved earlier; waiters ask next_look() again before sleeping on.
//  - close(why): the queue closed or failed; every wait ends with `why`, and so do later ones.
//
// Two kinds of wait are served:
//  - wait() blocks the calling thread until a job, an error, its timeout, or its interrupt flag
//    (consume()'s stop; interrupt() makes sleepers look at it).
//  - wait_async() returns at once. The component's own thread (started on the first one) makes
//    the attempts and runs `done` exactly once: with a job or an error, with the last attempt's
//    result when the timeout passes, with Errc::cancelled soon after `stop` is requested (no job
//    is taken after the request is seen), or with the close status. Only a wait refused at once
//    (the queue is closed already) runs `done` on the caller's thread.
//
// No lost wake-ups: a waiter reads the epoch before its attempt and sleeps only while it has not
// moved; ready() moves it before it looks for sleepers. Likewise a sleeper counts itself in
// before it asks next_look(), and a backend that moves a deadline earlier publishes it before it
// calls sooner(), which looks for sleepers (both sequentially consistent): one sees the other.
//
// Thread safety: every method may be called from any thread, attempts and callbacks included
// (a `done` may call close(); the destructor must not run on the component's thread).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>

#include "common/fork_guard.h"
#include "delayq/error.h"
#include "delayq/job.h"

namespace delayq {

class Waiting {
 public:
  using Steady = std::chrono::steady_clock;
  // Waits longer than this are "forever" (and keep time_point arithmetic in range).
  static constexpr Duration kForever = std::chrono::hours(24 * 365 * 100);

  // What one try to take a job found.
  struct Attempt {
    // A delivery or an error: the wait ends with it, unless `wait` says to go on.
    Result<Delivery> result = Status(Errc::timeout, "no job yet");
    // Nothing to take yet: wait on. `result` is then what the wait ends with if its time runs
    // out now (Errc::timeout naming the topics; a backend may wait through other errors too).
    bool wait = false;
    // When to try again even if nothing is said (max: only when told).
    Steady::time_point look_again = Steady::time_point::max();
  };
  // One try. `deadline` is when the wait ends, for a backend whose try itself waits a little.
  using Try = std::function<Attempt(Steady::time_point deadline)>;
  using Done = std::function<void(Result<Delivery>)>;

  // The words every backend answers with.
  static Status closed_error();     // closed: "the queue is closed"
  static Status stopped_error();    // closed: "the consumer was stopped" (wait()'s stop flag)
  static Status withdrawn_error();  // cancelled: wait_async()'s stop was requested

  // `next_look`, if set, is asked whenever a waiter goes to sleep: the latest instant at which
  // any waiter should try again, whatever its own attempt said (the engine: its next deadline).
  explicit Waiting(std::function<Steady::time_point()> next_look = {});
  // close(closed_error()), then join(). Aborts on the component's own thread (a `done` that
  // destroys its queue), which would free the thread's state under its feet.
  ~Waiting();
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;

  // Blocks until `attempt` ends the wait, `timeout` passes (the last attempt's result), the
  // component closes (the close status) or *stop becomes true (stopped_error()).
  Result<Delivery> wait(const Try& attempt, Duration timeout,
                        const std::atomic<bool>* stop = nullptr);
  // See the top of this file.
  void wait_async(Try attempt, Duration timeout, Done done, std::stop_token stop = {});

  void ready();
  void sooner();
  // Stop flags of blocking waits were set: their sleepers look at them now.
  void interrupt();
  // Closes, with `why` (a failure replaces a plain Errc::closed given before, never the other
  // way). Does not wait for the component's thread: join() does.
  void close(Status why);
  // Also true in a child forked after the component was made (fork_guard.h), where every wait is
  // refused with ForkGuard::refusal() before any lock is taken.
  bool closed() const { return closed_.load() || fork_.forked(); }
  // Why it closed (ok while open).
  Status closed_status() const;
  // True in a child forked after the component was made: its owner must leave it (and itself)
  // as it is, without closing or destroying it (fork_guard.h).
  bool forked() const { return fork_.forked(); }
  // Waits until the component's thread has completed every async wait and ended. After close();
  // not on that thread (on_own_thread()).
  void join();
  bool on_own_thread() const;

 private:
  struct AsyncWait {
    Try attempt;
    Steady::time_point deadline;
    Done done;
    std::stop_token stop;
    // Wakes the thread when `stop` is requested. Reset before `done` runs, without mu_ held (its
    // destructor waits for a callback running on another thread, which takes mu_).
    std::optional<std::stop_callback<std::function<void()>>> on_stop;
  };
  using AsyncList = std::list<std::unique_ptr<AsyncWait>>;

  Steady::time_point next_look() const;
  // Wakes the async thread for a new waiter or a withdrawal.
  void poke();
  void serve();  // the async thread
  // One attempt for each waiter of `batch`; finished ones leave it. Returns when to look again.
  Steady::time_point serve_once(AsyncList& batch);
  void finish(AsyncWait& w, Result<Delivery> r);

  const std::function<Steady::time_point()> next_look_;
  const ForkGuard fork_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> epoch_{0};  // moved by ready()
  std::atomic<int> sleepers_{0};    // waiters asleep on cv_ (the async thread included)
  std::atomic<bool> closed_{false};
  Status why_;                 // under mu_
  AsyncList async_;            // under mu_
  uint64_t pokes_ = 0;         // under mu_
  std::thread thread_;         // under mu_: started by the first wait_async()
  std::thread::id thread_id_;  // under mu_
};

}  // namespace delayq
