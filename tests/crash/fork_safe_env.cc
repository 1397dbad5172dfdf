// fork_safe_env(): an EnvWrapper with thread pools of its own (fork_safe_env.h says why).
#include "fork_safe_env.h"

#include <rocksdb/env.h>

#include <array>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

namespace delayq::crash {
namespace {

// One pool per priority: a queue of jobs and the threads that run them, started on demand.
class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  void schedule(void (*fn)(void*), void* arg, void* tag, void (*unschedule)(void*)) {
    {
      std::lock_guard l(mu_);
      jobs_.push_back(Job{fn, arg, tag, unschedule});
    }
    cv_.notify_one();
  }

  // Removes the queued jobs of `tag` (running ones finish) and calls their unschedule
  // functions, as RocksDB's own pool does: a closing database waits for them.
  int unschedule(void* tag) {
    std::vector<Job> removed;
    {
      std::lock_guard l(mu_);
      for (auto it = jobs_.begin(); it != jobs_.end();) {
        if (it->tag != tag) {
          ++it;
          continue;
        }
        removed.push_back(*it);
        it = jobs_.erase(it);
      }
    }
    for (const Job& j : removed)
      if (j.unschedule != nullptr) j.unschedule(j.arg);
    return static_cast<int>(removed.size());
  }

  unsigned queued() const {
    std::lock_guard l(mu_);
    return static_cast<unsigned>(jobs_.size());
  }
  int threads() const {
    std::lock_guard l(mu_);
    return static_cast<int>(threads_.size());
  }
  // Never shrinks: the worker process is killed, not shut down.
  void grow_to(int n) {
    std::lock_guard l(mu_);
    while (static_cast<int>(threads_.size()) < n) threads_.emplace_back([this] { run(); });
  }

 private:
  struct Job {
    void (*fn)(void*);
    void* arg;
    void* tag;
    void (*unschedule)(void*);
  };

  void run() {
    std::unique_lock l(mu_);
    for (;;) {
      cv_.wait(l, [this] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      const Job j = jobs_.front();
      jobs_.pop_front();
      l.unlock();
      j.fn(j.arg);
      l.lock();
    }
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

class ForkSafeEnv final : public rocksdb::EnvWrapper {
 public:
  ForkSafeEnv(rocksdb::Env* base, bool run_jobs) : EnvWrapper(base), run_jobs_(run_jobs) {}
  const char* Name() const override { return "DelayqForkSafeEnv"; }

  void Schedule(void (*fn)(void*), void* arg, Priority pri, void* tag,
                void (*unschedule)(void*)) override {
    Pool& p = pool(pri);
    if (run_jobs_ && p.threads() == 0) p.grow_to(1);
    p.schedule(fn, arg, tag, unschedule);
  }
  int UnSchedule(void* tag, Priority pri) override { return pool(pri).unschedule(tag); }
  unsigned int GetThreadPoolQueueLen(Priority pri) const override {
    return pools_[index(pri)].queued();
  }
  void SetBackgroundThreads(int n, Priority pri) override { grow(pri, n); }
  int GetBackgroundThreads(Priority pri) override { return pool(pri).threads(); }
  void IncBackgroundThreadsIfNeeded(int n, Priority pri) override { grow(pri, n); }
  // Reserving threads for sub-compactions would ask the default environment's pools.
  int ReserveThreads(int, Priority) override { return 0; }
  int ReleaseThreads(int, Priority) override { return 0; }
  void WaitForJoin() override {}

 private:
  static size_t index(Priority pri) {
    const auto i = static_cast<size_t>(pri);
    return i < kPools ? i : static_cast<size_t>(Priority::LOW);
  }
  Pool& pool(Priority pri) { return pools_[index(pri)]; }
  void grow(Priority pri, int n) {
    if (run_jobs_) pool(pri).grow_to(n);
  }

  static constexpr size_t kPools = static_cast<size_t>(Priority::TOTAL);
  const bool run_jobs_;
  std::array<Pool, kPools> pools_;
};

}  // namespace

std::unique_ptr<rocksdb::Env> fork_safe_env(rocksdb::Env* base, bool run_jobs) {
  return std::make_unique<ForkSafeEnv>(base, run_jobs);
}

size_t threads_in_process() {
  std::error_code ec;
  size_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end;
       it.increment(ec))
    ++n;
  return ec ? 0 : n;
}

}  // namespace delayq::crash
