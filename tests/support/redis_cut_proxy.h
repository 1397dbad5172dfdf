// A TCP proxy in front of a private redis-server (tests/support/redis_server.h) that can cut one
// connection at a chosen point, as a network failure or a load balancer's timeout would: the
// server runs every command of a pipeline, but only the first replies reach the client before
// the connection closes. The server is the real one and so is the client; only the wire between
// them is broken, on purpose and at a known place.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace delayq::testing {

// The end of the RESP2 reply that starts at `at` in `b`, or npos while it is incomplete.
inline size_t resp_reply_end(const std::string& b, size_t at) {
  constexpr size_t npos = std::string::npos;
  const size_t eol = at < b.size() ? b.find("\r\n", at) : npos;
  if (eol == npos) return npos;
  const long long n = std::atoll(b.c_str() + at + 1);
  switch (b[at]) {
    case '+':
    case '-':
    case ':':
      return eol + 2;
    case '$': {
      if (n < 0) return eol + 2;
      const size_t end = eol + 2 + static_cast<size_t>(n) + 2;
      return end <= b.size() ? end : npos;
    }
    case '*': {
      size_t end = eol + 2;
      for (long long i = 0; i < n && end != npos; ++i) end = resp_reply_end(b, end);
      return end;
    }
    default:
      return npos;  // not RESP2: never complete, so never passed on
  }
}

class CuttingProxy {
 public:
  // Listens on a free loopback port and forwards each connection to the unix socket `upstream`.
  explicit CuttingProxy(std::string upstream) : upstream_(std::move(upstream)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_fd_, 64) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      if (listen_fd_ >= 0) ::close(listen_fd_);
      listen_fd_ = -1;
      return;
    }
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~CuttingProxy() {
    stop_ = true;
    if (acceptor_.joinable()) acceptor_.join();
    std::vector<std::thread> pumps;
    {
      std::lock_guard lock(mu_);
      pumps.swap(pumps_);
    }
    for (std::thread& t : pumps) t.join();
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }
  CuttingProxy(const CuttingProxy&) = delete;
  CuttingProxy& operator=(const CuttingProxy&) = delete;

  bool started() const { return listen_fd_ >= 0; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

  // Arms the cut for the next request that contains `marker`: it must be a pipeline of `total`
  // commands. Once the server has answered all of them, the client gets the first `pass`
  // replies, then the connection closes.
  void cut_next(std::string marker, size_t total, size_t pass) {
    std::lock_guard lock(mu_);
    marker_ = std::move(marker);
    total_ = total;
    pass_ = pass;
    armed_ = true;
    cut_done_ = false;
  }
  // Whether the cut armed last has happened.
  bool cut_done() const { return cut_done_.load(); }

 private:
  void accept_loop() {
    while (!stop_.load()) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int client = ::accept(listen_fd_, nullptr, nullptr);
      if (client < 0) continue;
      std::lock_guard lock(mu_);
      pumps_.emplace_back([this, client] { pump(client); });
    }
  }

  int connect_upstream() const {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, upstream_.c_str(), sizeof(addr.sun_path) - 1);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    if (fd >= 0) ::close(fd);
    return -1;
  }

  static bool send_all(int fd, const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  // Whether this connection's request stream (its last bytes in `tail`, plus `chunk`) holds the
  // armed marker; if so, the cut is this connection's: `total` and `pass` are set.
  bool claims_cut(std::string& tail, const char* chunk, size_t n, size_t& total, size_t& pass) {
    std::lock_guard lock(mu_);
    tail.append(chunk, n);
    const bool hit = armed_ && tail.find(marker_) != std::string::npos;
    if (tail.size() > marker_.size()) tail.erase(0, tail.size() - marker_.size());
    if (!hit) return false;
    armed_ = false;
    total = total_;
    pass = pass_;
    return true;
  }

  // One client connection: bytes go both ways unchanged until this connection claims the cut;
  // from then on the server's replies are held back and counted.
  void pump(int client) {
    const int server = connect_upstream();
    std::string tail, held;
    bool cutting = false;
    size_t total = 0, pass = 0;
    char buf[1 << 16];
    while (server >= 0 && !stop_.load()) {
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (::poll(p, 2, 20) <= 0) continue;
      if (p[0].revents) {
        const ssize_t n = ::recv(client, buf, sizeof buf, 0);
        if (n <= 0) break;
        if (!cutting) cutting = claims_cut(tail, buf, static_cast<size_t>(n), total, pass);
        if (!send_all(server, buf, static_cast<size_t>(n))) break;
      }
      if (p[1].revents) {
        const ssize_t n = ::recv(server, buf, sizeof buf, 0);
        if (n <= 0) break;
        if (!cutting) {
          if (!send_all(client, buf, static_cast<size_t>(n))) break;
          continue;
        }
        held.append(buf, static_cast<size_t>(n));
        size_t end = 0, kept = 0;
        for (size_t i = 0; i < total && end != std::string::npos; ++i) {
          end = resp_reply_end(held, end);
          if (i + 1 == pass) kept = end;
        }
        if (end == std::string::npos) continue;  // the server has not answered everything yet
        // Marked done before the client can see the end: once push_batch returns, the test
        // asks whether the cut happened.
        cut_done_ = true;
        send_all(client, held.data(), kept);
        ::shutdown(client, SHUT_WR);  // the client reads what was passed, then the end
        drain(client);
        break;
      }
    }
    if (server >= 0) ::close(server);
    ::close(client);
  }

  // Reads and drops what the client still sends until it closes (closing with unread data
  // would reset the connection, and the client could lose the replies passed to it).
  void drain(int client) {
    char buf[4096];
    while (!stop_.load()) {
      pollfd p{client, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      if (::recv(client, buf, sizeof buf, 0) <= 0) return;
    }
  }

  std::string upstream_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> cut_done_{false};
  std::thread acceptor_;
  std::mutex mu_;  // pumps_ and the cut's settings
  std::vector<std::thread> pumps_;
  std::string marker_;
  size_t total_ = 0, pass_ = 0;
  bool armed_ = false;
};

}  // namespace delayq::testing
