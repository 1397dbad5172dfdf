// The real delayqd binary as a child process, for every test that runs it: started with flags
// (among them "--listen 127.0.0.1:0": the kernel picks the port, and the daemon prints
// "delayqd: listening on HOST:PORT" on stdout, where it is read), signalled, killed, waited for,
// its stderr log read. Also a fixture with a daemon on a fresh store in a temporary directory.
// Header-only; POSIX.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "temp_dir.h"

namespace delayq::testing {

// delayqd as a child process; its stderr goes to `log`, appended to across restarts. Killed
// (SIGKILL) when the object goes.
class DaemonProcess {
 public:
  DaemonProcess(std::string binary, std::filesystem::path log)
      : binary_(std::move(binary)), log_(std::move(log)) {}
  ~DaemonProcess() { kill9(); }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // A resource limit (setrlimit) for the daemon, set in the child before it runs delayqd.
  void limit(int resource, uint64_t value) { limits_.emplace_back(resource, value); }

  // Starts the daemon with `args`; returns the port, or 0 if it exited first (its status in
  // exit_code()) or said nothing for two minutes (then it is killed).
  int start(const std::vector<std::string>& args) {
    int out[2];
    if (::pipe(out) != 0) return 0;
    // Everything the child needs is built before fork(): a threaded parent's child must not
    // allocate.
    std::vector<std::string> owned{binary_};
    owned.insert(owned.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : owned) argv.push_back(s.data());
    argv.push_back(nullptr);
    const std::string log = log_.string();
    exit_code_ = -1;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (err >= 0) ::dup2(err, STDERR_FILENO);
      ::close(out[0]);
      for (const auto& [resource, value] : limits_) {
        const rlimit lim{static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
        ::setrlimit(resource, &lim);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    const std::string line = first_line(out[0]);
    ::close(out[0]);
    const size_t colon = line.rfind(':');
    if (line.find("listening on") == std::string::npos || colon == std::string::npos) {
      if (!wait(std::chrono::seconds(60))) kill9();
      return 0;
    }
    port_ = std::atoi(line.c_str() + colon + 1);
    return port_;
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  // The exit status once reaped (128 + the signal for a killed daemon), -1 before.
  int exit_code() const { return exit_code_; }

  // Whether the process has exited (it is reaped then); a crash included.
  bool exited() {
    reap(WNOHANG);
    return pid_ <= 0;
  }
  void signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // Reaps the child; true if it exited within `timeout`.
  bool wait(std::chrono::seconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (pid_ > 0 && !reap(WNOHANG) && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return pid_ <= 0;
  }
  // SIGKILL, as a crash: the process gets no chance to write anything more.
  void kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    reap(0);
  }

  // What the daemon wrote on stderr.
  std::string log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // A line of /proc/<pid>/status as a number ("VmRSS" gives kB), -1 if absent.
  long status_value(const std::string& name) const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind(name + ":", 0) == 0) return std::atol(line.c_str() + name.size() + 1);
    return -1;
  }
  // Open file descriptors.
  size_t open_files() const {
    std::error_code ec;
    size_t n = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid_) + "/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
      ++n;
    return n;
  }

 private:
  // The first line the daemon writes on `fd` (its address), or what came before it exited or
  // two minutes passed.
  static std::string first_line(int fd) {
    std::string out;
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (out.find('\n') == std::string::npos && std::chrono::steady_clock::now() < until) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 250) <= 0) continue;
      char chunk[256];
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n <= 0) break;  // the child exited before listening
      out.append(chunk, static_cast<size_t>(n));
    }
    return out;
  }
  // waitpid with `flags`; true (and the exit status kept) when the child was reaped.
  bool reap(int flags) {
    int status = 0;
    if (pid_ <= 0 || ::waitpid(pid_, &status, flags) != pid_) return false;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    pid_ = -1;
    return true;
  }

  std::string binary_;
  std::filesystem::path log_;
  std::vector<std::pair<int, uint64_t>> limits_;
  pid_t pid_ = -1;
  int port_ = 0;
  int exit_code_ = -1;
};

// A delayqd of this build (DELAYQD_PATH, defined by tests/CMakeLists.txt) on a fresh store in a
// temporary directory, with --sync none: the tests kill it, and a process crash loses nothing
// answered in any sync mode.
class StoreDaemonTest : public ::testing::Test {
 protected:
  // Starts (or restarts, on the same store) the daemon with `extra` flags; returns its port, 0
  // on failure (a failed expectation shows the log).
  int start(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--listen",        "127.0.0.1:0", "--store",
                                     dir_.sub("store"), "--sync",      "none"};
    args.insert(args.end(), extra.begin(), extra.end());
    const int port = daemon_.start(args);
    EXPECT_GT(port, 0) << daemon_.log();
    return port;
  }

  TempDir dir_{"delayqd-test"};
  DaemonProcess daemon_{DELAYQD_PATH, dir_.sub("delayqd.log")};
};

}  // namespace delayq::testing
