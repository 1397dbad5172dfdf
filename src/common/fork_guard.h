// ForkGuard: whether this object was made in another process than the one using it now, i.e.
// whether the caller is a child made by fork() after the queue was opened.
//
// A queue's threads (its driver, its waiting thread, RocksDB's background work, the store's
// syncer) do not survive a fork, its locks may be held by threads that are gone, and its
// descriptors (the store's files, Redis connections) are shared with the parent. So a queue used
// in a forked child refuses every call (refusal(): Errc::closed, naming both processes), and its
// destructor there leaves everything as it is (nothing joined, closed, flushed or freed: the
// child's exit or exec gives it back), so that the parent's queue goes on untouched.
//
// The check is one relaxed atomic load: a pthread_atfork() handler, registered when the first
// guard is made, counts the forks in the child.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>

#include "delayq/error.h"

namespace delayq {

class ForkGuard {
 public:
  ForkGuard();
  // True in a child forked after this guard was made (in any generation of children).
  bool forked() const noexcept { return forks_.load(std::memory_order_relaxed) != born_; }
  // The refusal of every call in such a child.
  Status refusal() const;

 private:
  // Forks that made this process, counted in the child by the atfork handler.
  static inline std::atomic<uint64_t> forks_{0};
  uint64_t born_;
  pid_t pid_;
};

}  // namespace delayq
