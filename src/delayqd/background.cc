// Background (see background.h).
#include "delayqd/background.h"

#include <malloc.h>

#include <utility>

namespace delayq::http {

Background::Background(size_t max_waiting)
    : max_waiting_(max_waiting), thread_([this] { run(); }) {}

Background::~Background() { stop(); }

bool Background::post(std::function<void()> work) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || works_.size() >= max_waiting_) return false;
    works_.push_back(std::move(work));
  }
  wake_.notify_one();
  return true;
}

void Background::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Background::run() {
  for (;;) {
    std::function<void()> work;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !works_.empty(); });
      if (works_.empty()) return;  // stopping, and nothing left to run
      work = std::move(works_.front());
      works_.pop_front();
    }
    try {
      work();  // answers through its own `done` (routes: guarded(), responses.h)
    } catch (...) {
      // Nothing to answer with here; the thread goes on serving the next.
    }
    work = nullptr;
    // What the answer allocated is free again: give the pages back to the system rather than
    // keep one answer's peak for good.
    ::malloc_trim(0);
  }
}

}  // namespace delayq::http
