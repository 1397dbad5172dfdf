// Test helpers for driving the real delayqd binary: a temporary directory, the daemon as a child
// process (the port it picked is read from its stdout), a small blocking HTTP/1.1 keep-alive
// client whose answers are parsed with delayqd's own JSON reader, and a raw connection for
// tests that misbehave on purpose (half a request, a byte at a time, a close mid-wait).
// Header-only; POSIX sockets.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "wire/json.h"

namespace delayq::testing {

// A directory under /tmp, removed with everything in it at the end of its scope.
class ScratchDir {
 public:
  explicit ScratchDir(const char* prefix = "delayqd") {
    std::string tmpl = std::string("/tmp/") + prefix + "-XXXXXX";
    if (const char* d = ::mkdtemp(tmpl.data())) path_ = d;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// delayqd as a child process, started with "--listen 127.0.0.1:0" among its arguments: the
// kernel picks the port and the daemon prints "delayqd: listening on HOST:PORT" on stdout.
// Its stderr goes to a log file, appended to across restarts.
class DaemonProcess {
 public:
  DaemonProcess(std::string binary, std::filesystem::path log)
      : binary_(std::move(binary)), log_(std::move(log)) {}
  ~DaemonProcess() { kill9(); }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // A resource limit (setrlimit) for the daemon, set in the child before it runs delayqd.
  void limit(int resource, uint64_t value) { limits_.emplace_back(resource, value); }

  // Returns the port, or 0 if the daemon exited (or said nothing for two minutes) first.
  int start(const std::vector<std::string>& args) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) return 0;
    // Everything the child needs is built before fork(): a threaded parent's child must not
    // allocate.
    std::vector<std::string> owned{binary_};
    owned.insert(owned.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : owned) argv.push_back(s.data());
    argv.push_back(nullptr);
    const std::string log = log_.string();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(pipe_fds[1], STDOUT_FILENO);
      const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (err >= 0) ::dup2(err, STDERR_FILENO);
      ::close(pipe_fds[0]);
      for (const auto& [resource, value] : limits_) {
        const rlimit lim{static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
        ::setrlimit(resource, &lim);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(pipe_fds[1]);
    std::string out;
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (out.find('\n') == std::string::npos && std::chrono::steady_clock::now() < until) {
      pollfd p{pipe_fds[0], POLLIN, 0};
      if (::poll(&p, 1, 250) <= 0) continue;
      char chunk[256];
      const ssize_t n = ::read(pipe_fds[0], chunk, sizeof chunk);
      if (n <= 0) break;  // the child exited before listening
      out.append(chunk, static_cast<size_t>(n));
    }
    ::close(pipe_fds[0]);
    const size_t colon = out.rfind(':');
    if (out.find("listening on") == std::string::npos || colon == std::string::npos) {
      kill9();
      return 0;
    }
    return std::atoi(out.c_str() + colon + 1);
  }

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // Whether the process has exited (it is reaped then); a crash included.
  bool exited() {
    int status = 0;
    if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) pid_ = -1;
    return pid_ <= 0;
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
  void signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // Reaps the child; true if it exited within `timeout`.
  bool wait(std::chrono::seconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (pid_ > 0 && std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pid_ <= 0;
  }
  // SIGKILL, as a crash: the process gets no chance to write anything more.
  void kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  std::string log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::string binary_;
  std::filesystem::path log_;
  std::vector<std::pair<int, uint64_t>> limits_;
  pid_t pid_ = -1;
};

// One answer. status 0 means none came (the connection failed or was closed).
struct HttpAnswer {
  int status = 0;
  std::string headers;
  std::string body;
  wire::json::Value json;

  int64_t code() const {
    const wire::json::Value* c = json.find("code");
    return c && c->is_number() ? c->as_int() : -1;
  }
  std::string error() const {
    const wire::json::Value* e = json.find("error");
    return e && e->is_string() ? e->as_string() : std::string();
  }
  const wire::json::Value& data() const {
    static const wire::json::Value kNull;
    const wire::json::Value* d = json.find("data");
    return d ? *d : kNull;
  }
  // data.<name> as a string, "" when absent or not a string.
  std::string data_string(const std::string& name) const {
    const wire::json::Value* v = data().is_object() ? data().find(name) : nullptr;
    return v && v->is_string() ? v->as_string() : std::string();
  }
};

// Takes one answer off the front of `pending`, calling read_more() (which appends bytes and
// returns false when no more come) until the answer is complete. status 0 if the bytes end
// first. `closed` is set when the answer says "Connection: close".
template <class ReadMore>
HttpAnswer take_answer(std::string& pending, ReadMore read_more, bool& closed) {
  HttpAnswer a;
  size_t head_end;
  while ((head_end = pending.find("\r\n\r\n")) == std::string::npos)
    if (!read_more()) return a;
  a.headers = pending.substr(0, head_end);
  pending.erase(0, head_end + 4);
  std::string lower = a.headers;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t length = 0;
  if (const size_t at = lower.find("\r\ncontent-length:"); at != std::string::npos)
    length = std::strtoul(lower.c_str() + at + 17, nullptr, 10);
  while (pending.size() < length)
    if (!read_more()) return a;
  a.body = pending.substr(0, length);
  pending.erase(0, length);
  if (lower.rfind("http/1.", 0) == 0 && lower.size() > 12) a.status = std::atoi(lower.c_str() + 9);
  if (auto parsed = wire::json::parse(a.body)) a.json = std::move(*parsed);
  closed = lower.find("\r\nconnection: close") != std::string::npos;
  return a;
}

// A blocking HTTP/1.1 client on one keep-alive connection to 127.0.0.1:port. When a request
// cannot be sent (the server closed an idle connection), it reconnects once.
class HttpClient {
 public:
  explicit HttpClient(int port) : port_(port) {}
  ~HttpClient() { disconnect(); }
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  HttpAnswer post(const std::string& path, const std::string& json_body) {
    return send("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                "\r\nContent-Length: " + std::to_string(json_body.size()) + "\r\n\r\n" + json_body);
  }
  HttpAnswer get(const std::string& path) {
    return send("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  }
  void disconnect() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    pending_.clear();
  }

 private:
  bool connect() {
    disconnect();
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) return false;
    // Longer than any pop a test asks for, so that a slow machine is not mistaken for a hang.
    timeval tv{300, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      disconnect();
      return false;
    }
    return true;
  }

  bool write_all(const std::string& bytes) {
    for (size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  bool read_more() {
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    pending_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  HttpAnswer send(const std::string& request) {
    if (fd_ < 0 && !connect()) return {};
    if (!write_all(request) && (!connect() || !write_all(request))) return {};
    bool closed = false;
    HttpAnswer a = take_answer(
        pending_, [this] { return read_more(); }, closed);
    if (a.status == 0 || closed) disconnect();
    return a;
  }

  int port_;
  int fd_ = -1;
  std::string pending_;
};

// One connection driven byte by byte, for requests a well-behaved client would not send: half
// a request, a trickle, a close while the answer is awaited. Every wait is bounded.
class RawConnection {
 public:
  // Connects to 127.0.0.1:port; from `source` (another loopback address, e.g. "127.0.0.2": another
  // client as the server sees it) when given.
  explicit RawConnection(int port, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) return;
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    timeval tv{30, 0};  // a send the server never drains fails instead of hanging the test
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (source != nullptr) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      ::inet_pton(AF_INET, source, &from.sin_addr);
      if (::bind(fd_, reinterpret_cast<const sockaddr*>(&from), sizeof from) != 0) {
        close();
        return;
      }
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(port));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) close();
  }
  ~RawConnection() { close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return fd_ >= 0; }

  // Sends all of `bytes`; false when the connection is closed (or a send stalls for 30 s).
  bool send(const std::string& bytes) {
    for (size_t done = 0; fd_ >= 0 && done < bytes.size();) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return fd_ >= 0;
  }

  // The next answer, waiting up to `wait` for it; status 0 if none came.
  HttpAnswer answer(std::chrono::milliseconds wait = std::chrono::seconds(30)) {
    const auto until = std::chrono::steady_clock::now() + wait;
    bool closed = false;
    return take_answer(
        pending_, [&] { return read_some(until) > 0; }, closed);
  }

  // Whether the server ends the connection (EOF or reset) within `wait`; what it sends before
  // is kept for answer().
  bool closed_within(std::chrono::milliseconds wait) {
    const auto until = std::chrono::steady_clock::now() + wait;
    for (;;) {
      const ssize_t n = read_some(until);
      if (n == 0 || (n < 0 && errno != EAGAIN)) return true;
      if (n < 0) return false;  // the wait ran out
    }
  }

  void shutdown_write() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  // Reads what comes before `until`: > 0 bytes read, 0 at EOF, -1 with errno (EAGAIN: the
  // wait ran out).
  ssize_t read_some(std::chrono::steady_clock::time_point until) {
    if (fd_ < 0) return 0;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    pollfd p{fd_, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      errno = EAGAIN;
      return -1;
    }
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n > 0) pending_.append(chunk, static_cast<size_t>(n));
    if (n < 0 && errno == EAGAIN) errno = ECONNRESET;  // readable yet nothing: not a wait
    return n;
  }

  int fd_ = -1;
  std::string pending_;
};

}  // namespace delayq::testing
