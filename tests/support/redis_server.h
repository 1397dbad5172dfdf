// A private redis-server for tests: started in a fresh temporary directory, listening only on a
// unix socket there (no TCP port unless `extra` asks for one), killed and removed afterwards.
// Never a system Redis. With "--requirepass P" in `extra`, command() authenticates first.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace delayq::testing {

class RedisServer {
 public:
  // `extra`: more redis-server arguments, e.g. {"--appendonly", "yes"}; later ones win.
  explicit RedisServer(std::vector<std::string> extra = {}) : extra_(std::move(extra)) {
    for (size_t i = 0; i + 1 < extra_.size(); ++i)
      if (extra_[i] == "--requirepass") password_ = extra_[i + 1];
    char tmpl[] = "/tmp/delayq-redis-XXXXXX";
    if (const char* d = mkdtemp(tmpl)) dir_ = d;
    started_ = start();
  }
  ~RedisServer() {
    kill_now();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  bool started() const { return started_; }
  std::string socket() const { return dir_ + "/redis.sock"; }
  std::string url() const { return "unix://" + socket(); }
  const std::string& dir() const { return dir_; }
  // The server's log, for failure messages.
  std::string log() const {
    std::string out;
    if (FILE* f = std::fopen((dir_ + "/redis.log").c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
      std::fclose(f);
    }
    return out;
  }

  // Starts the server (again, on the same directory and socket) and waits until it answers.
  bool start() {
    if (dir_.empty()) return false;
    std::vector<std::string> args{"redis-server", "--port", "0", "--unixsocket", socket(),
                                  "--unixsocketperm", "700", "--dir", dir_, "--save", "",
                                  "--appendonly", "no", "--logfile", dir_ + "/redis.log",
                                  "--daemonize", "no"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    // Built before fork(): the child of a threaded process must not allocate.
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      execvp("redis-server", argv.data());
      _exit(127);
    }
    if (pid_ < 0) return false;
    // Generous: a loaded machine can take seconds to start a process (and to replay an AOF).
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until) {
      if (command("PING") == "+PONG") return true;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // SIGKILL: the server dies at once, as in a crash. Only what it had written survives.
  void kill_now() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    ::unlink(socket().c_str());
  }

  // Sends one inline command and returns the first line of the reply ("" on failure).
  std::string command(const std::string& inline_command) const {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) return "";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket().c_str(), sizeof(addr.sun_path) - 1);
    std::string line;
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      // AUTH first (as an array: the password may hold spaces), its reply line skipped.
      const std::string auth = password_.empty() ? ""
                                                 : "*2\r\n$4\r\nAUTH\r\n$" +
                                                       std::to_string(password_.size()) + "\r\n" +
                                                       password_ + "\r\n";
      const std::string req = auth + inline_command + "\r\n";
      if (::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
        char c;
        if (!password_.empty())
          while (::read(fd, &c, 1) == 1 && c != '\n') {
          }
        while (::read(fd, &c, 1) == 1 && c != '\r') line += c;
      }
    }
    ::close(fd);
    return line;
  }

 private:
  std::vector<std::string> extra_;
  std::string password_;
  std::string dir_;
  pid_t pid_ = -1;
  bool started_ = false;
};

}  // namespace delayq::testing
