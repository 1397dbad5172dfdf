// A child process that reports to its parent through a pipe, for the tests that kill a process
// in the middle of its work (SIGKILL) and check what it left behind. Fork it before the test
// starts any thread of its own: only the forking thread goes on in the child.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

namespace delayq::testing {

// Whether this process has one thread: a test that forks children which open a store needs it
// (a child forked from a threaded process, RocksDB's background threads included, inherits
// their locks but not the threads, and can hang in a flush). ctest runs each test in its own
// process; a whole binary run that opened a store first skips such tests.
inline bool single_threaded() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n == 1;
}

class ChildProcess {
 public:
  // Forks. The child runs `body` with the write end of the pipe; `body` ends the child itself
  // (_exit, or waiting to be killed): if it returns, the child exits with 127. started() is
  // false if the pipe or the fork could not be made.
  explicit ChildProcess(const std::function<void(int report_fd)>& body) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[0]);
      body(fds[1]);
      ::_exit(127);
    }
    ::close(fds[1]);
    if (pid_ > 0) {
      reports_ = fds[0];
    } else {
      ::close(fds[0]);
    }
  }
  ~ChildProcess() {
    kill_and_wait();
    if (reports_ >= 0) ::close(reports_);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0; }
  // The read end of the pipe the child writes its reports to; -1 if not started. Reports written
  // before the child died can still be read after kill_and_wait().
  int reports() const { return reports_; }

  // Kills the child with SIGKILL (if it has not ended already) and reaps it. Returns its wait
  // status (0 if there was no child to reap).
  int kill_and_wait() {
    int status = 0;
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
    return status;
  }

 private:
  pid_t pid_ = -1;
  int reports_ = -1;
};

}  // namespace delayq::testing
