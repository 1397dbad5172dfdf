// Background: one thread, beside the server's I/O threads, for the answers whose work grows with
// the queue (/stats and /metrics build the stats of every topic). On it they delay no other
// request, however many topics there are; and they all run on one thread, so that glibc serves
// their transient memory from one malloc arena and gives it back after each answer
// (malloc_trim), instead of each I/O thread that happened to answer keeping one scrape's peak in
// an arena of its own (docs/benchmarks.md, "delayqd's resident memory").
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace delayq::http {

class Background {
 public:
  // At most `max_waiting` works queued behind the one running; post() refuses more.
  explicit Background(size_t max_waiting);
  // stop().
  ~Background();
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  // Queues `work` for the thread. False, and `work` is dropped unrun, when max_waiting works
  // already wait or after stop(): the caller answers instead.
  bool post(std::function<void()> work);
  // Runs what is queued, then ends the thread; post() refuses from then on. Idempotent.
  void stop();

 private:
  void run();

  const size_t max_waiting_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> works_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace delayq::http
