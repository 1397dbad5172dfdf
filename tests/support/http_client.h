// Talking to the real delayqd in tests: the wire's HTTP client (src/wire/http_client.h) with its
// answers parsed as delayqd's JSON, and a raw connection for tests that misbehave on purpose
// (half a request, a byte at a time, a close mid-wait), which reads answers with the same reader
// as the client. Header-only; POSIX sockets.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <utility>

#include "wire/http_client.h"
#include "wire/http_reply.h"
#include "wire/json.h"

namespace delayq::testing {

// One answer. status 0 means none came (the connection failed or was closed).
struct HttpAnswer {
  int status = 0;
  std::string headers;
  std::string body;
  wire::json::Value json;  // null when the body is not JSON

  explicit HttpAnswer(wire::HttpReply r = {})
      : status(r.status), headers(std::move(r.headers)), body(std::move(r.body)) {
    if (auto parsed = wire::json::parse(body, wire::json::kReplyLimits)) json = std::move(*parsed);
  }

  int64_t code() const {
    const wire::json::Value* c = json.find("code");
    return c && c->is_number() ? c->as_int() : -1;
  }
  std::string error() const { return wire::json::member_string(json, "error"); }
  std::string message() const { return wire::json::member_string(json, "message"); }
  const wire::json::Value& data() const {
    static const wire::json::Value kNull;
    const wire::json::Value* d = json.find("data");
    return d ? *d : kNull;
  }
  // data.<name> as a string, "" when absent or not a string.
  std::string data_string(const std::string& name) const {
    return wire::json::member_string(data(), name);
  }
};

// A keep-alive connection to 127.0.0.1:port (wire::HttpClient, with the bearer token when one
// is given). Its timeout is longer than any pop a test asks for, so that a slow machine is not
// mistaken for a hang.
class HttpClient {
 public:
  explicit HttpClient(int port, std::string token = "")
      : client_({.host = "127.0.0.1", .port = static_cast<uint16_t>(port)},
                {.token = std::move(token), .timeout = std::chrono::seconds(300)}) {}

  HttpAnswer post(const std::string& path, const std::string& json_body) {
    return request("POST", path, json_body);
  }
  HttpAnswer get(const std::string& path) { return request("GET", path, ""); }
  HttpAnswer request(const std::string& method, const std::string& path, const std::string& body) {
    auto reply = client_.request(method, path, body);
    return reply ? HttpAnswer(std::move(*reply)) : HttpAnswer();
  }
  void disconnect() { client_.disconnect(); }

 private:
  wire::HttpClient client_;
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

  // The next answer (an interim "100 Continue" is one), waiting up to `wait` for it; status 0 if
  // none came. `to_head`: the answer is to a HEAD request (it has no body).
  HttpAnswer answer(std::chrono::milliseconds wait = std::chrono::seconds(30),
                    bool to_head = false) {
    const auto until = std::chrono::steady_clock::now() + wait;
    wire::HttpReply reply;
    bool eof = false;
    for (;;) {
      const wire::ReplyParse r = wire::take_reply(pending_, eof, reply, to_head);
      if (r == wire::ReplyParse::done) return HttpAnswer(std::move(reply));
      if (r != wire::ReplyParse::incomplete) return HttpAnswer();
      const ssize_t n = read_some(until);
      if (n < 0 && errno == EAGAIN) return HttpAnswer();  // the wait ran out
      eof = n <= 0;
    }
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
