// ForkGuard (fork_guard.h).
#include "common/fork_guard.h"

#include <pthread.h>
#include <unistd.h>

#include <string>

namespace delayq {

ForkGuard::ForkGuard() {
  // Once per process (a child inherits the registration with the rest of its parent's state).
  static const bool registered = [] {
    return ::pthread_atfork(nullptr, nullptr, [] {
             forks_.fetch_add(1, std::memory_order_relaxed);
           }) == 0;
  }();
  (void)registered;
  born_ = forks_.load(std::memory_order_relaxed);
  pid_ = ::getpid();
}

Status ForkGuard::refusal() const {
  return Status(Errc::closed,
                "this queue was opened in process " + std::to_string(pid_) +
                    ", and process " + std::to_string(::getpid()) +
                    " is a child forked from it: a queue cannot be used across fork() (its threads "
                    "stay in the parent); open a queue in the child, or fork before opening one");
}

}  // namespace delayq
