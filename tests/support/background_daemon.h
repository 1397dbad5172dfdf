// delayqd started as a shell's `delayqd ... &` starts it: on a port the test chose, with the
// environment the test gives, and nothing waited for (unlike DaemonProcess, which reads its
// "listening" line first). For the tests of what waits for the daemon: `delayq wait`, systemd's
// NOTIFY_SOCKET. Header-only; POSIX.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace delayq::testing {

// A loopback port nobody listens on now (bound by the kernel's choice, then released).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  if (fd >= 0) ::close(fd);
  return ok ? ntohs(a.sin_port) : 0;
}

// `binary args...` with exactly `env` ("NAME=value") as its environment, stdout and stderr
// appended to `log`. Killed (SIGKILL) when the object goes.
class BackgroundDaemon {
 public:
  BackgroundDaemon(std::string binary, const std::vector<std::string>& args,
                   std::vector<std::string> env, std::string log)
      : log_(std::move(log)) {
    std::vector<std::string> all{std::move(binary)};
    all.insert(all.end(), args.begin(), args.end());
    // Built before fork(): the child of a threaded process must not allocate.
    std::vector<char*> argv, envp;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      const int out = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(out, 1);
      ::dup2(out, 2);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
  }
  ~BackgroundDaemon() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  BackgroundDaemon(const BackgroundDaemon&) = delete;
  BackgroundDaemon& operator=(const BackgroundDaemon&) = delete;

  void terminate() {
    if (pid_ > 0) ::kill(pid_, SIGTERM);
  }
  // The exit status (128 + the signal when killed), -1 if it did not exit within a minute.
  int wait() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (pid_ > 0 && std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  std::string log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
};

}  // namespace delayq::testing
