// ShardMutex: the lock of one shard, which spins a little before it sleeps.
//
// A shard's critical sections are short (a core call: a few hundred nanoseconds), and a
// producer and the consumers take the same lock hundreds of thousands of times a second. With a
// plain std::mutex each contended lock() is a futex sleep and the matching unlock() a wake-up:
// two system calls and a context switch, about 5 us on the 2-vCPU machines of
// docs/benchmarks.md, ten times the section it waited for (the engine's profile at 1 M jobs:
// 16 % of all samples in futex calls). Spinning for about the length of a section first lets the
// waiter take the lock as soon as it is free; only a holder that was descheduled (or a long
// call, such as stats()) makes waiters sleep.
//
// The spin reads the lock word (no writes, so no cache-line ping-pong between spinners) through
// glibc's adaptive mutex (PTHREAD_MUTEX_ADAPTIVE_NP), which spins up to a bound it adapts to how
// long recent waits lasted, then sleeps as std::mutex does. Elsewhere a plain mutex.
#pragma once

#include <pthread.h>

#include <mutex>
#include <system_error>

namespace delayq::engine {

#if defined(__GLIBC__) && defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
class ShardMutex {
 public:
  ShardMutex() {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&m_, &a);
    pthread_mutexattr_destroy(&a);
  }
  ~ShardMutex() { pthread_mutex_destroy(&m_); }
  ShardMutex(const ShardMutex&) = delete;
  ShardMutex& operator=(const ShardMutex&) = delete;

  void lock() {
    if (int e = pthread_mutex_lock(&m_); e != 0)
      throw std::system_error(e, std::generic_category());
  }
  bool try_lock() { return pthread_mutex_trylock(&m_) == 0; }
  void unlock() { pthread_mutex_unlock(&m_); }

 private:
  pthread_mutex_t m_;
};
#else
using ShardMutex = std::mutex;
#endif

}  // namespace delayq::engine
