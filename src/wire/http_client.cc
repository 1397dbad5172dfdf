// The blocking HTTP/1.1 client (see http_client.h). The socket is non-blocking and every wait is
// a poll() bounded by the request's deadline, so that an unreachable host or a silent server
// cannot hold the caller past its timeout.
#include "wire/http_client.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace delayq::wire {

namespace {

using Steady = std::chrono::steady_clock;

enum class Wait { ready, timed_out, woken };

// Waits for `events` on fd until `deadline`, or until one of `wake` (-1: none) is readable.
Wait wait_for(int fd, short events, Steady::time_point deadline, const int (&wake)[2]) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()).count();
    if (left <= 0) return Wait::timed_out;
    pollfd p[3] = {{fd, events, 0}, {wake[0], POLLIN, 0}, {wake[1], POLLIN, 0}};
    const int r = ::poll(p, 3, static_cast<int>(std::min<int64_t>(left, 1'000'000)));
    if (r > 0 && (p[1].revents != 0 || p[2].revents != 0)) return Wait::woken;
    if (r > 0) return Wait::ready;
    if (r < 0 && errno != EINTR) return Wait::ready;  // let the following call report the error
  }
}

// A non-blocking connect to one address, finished within `deadline`: the socket, or -1 with
// `error` set.
int connect_to(const addrinfo& a, Steady::time_point deadline, const int (&wake)[2],
               std::string& error) {
  const int fd = ::socket(a.ai_family, a.ai_socktype | SOCK_NONBLOCK, a.ai_protocol);
  if (fd < 0) {
    error = std::strerror(errno);
    return -1;
  }
  int rc = ::connect(fd, a.ai_addr, a.ai_addrlen);
  if (rc != 0 && errno == EINPROGRESS) {
    if (const Wait w = wait_for(fd, POLLOUT, deadline, wake); w != Wait::ready) {
      ::close(fd);
      error = w == Wait::woken ? "withdrawn" : "timed out";
      return -1;
    }
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    rc = err == 0 ? 0 : -1;
    errno = err;
  }
  if (rc != 0) {
    error = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  // Each request goes out in one send(); without this, Nagle would hold the next one until the
  // previous answer's ACK (40 ms stalls on a keep-alive connection).
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace

Result<HttpEndpoint> parse_http_url(std::string_view text) {
  const auto bad = [](std::string why) { return Status(Errc::invalid_argument, std::move(why)); };
  constexpr std::string_view kScheme = "http://";
  if (text.starts_with("https://")) return bad("https is not supported");
  if (!text.starts_with(kScheme)) return bad("it does not start with http://");
  std::string_view rest = text.substr(kScheme.size());
  HttpEndpoint url;
  url.port = 80;
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    url.prefix = std::string(rest.substr(slash));
    while (!url.prefix.empty() && url.prefix.back() == '/') url.prefix.pop_back();
    rest = rest.substr(0, slash);
  }
  std::string_view port_text;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return bad("an IPv6 address without ']'");
    url.host = std::string(rest.substr(1, close - 1));
    rest = rest.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad("unexpected text after ']'");
      port_text = rest.substr(1);
    }
  } else {
    const size_t colon = rest.rfind(':');
    url.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port_text = rest.substr(colon + 1);
  }
  if (url.host.empty()) return bad("no host");
  if (!port_text.empty() || rest.find(':') != std::string_view::npos) {
    unsigned port = 0;
    const auto [p, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || p != port_text.data() + port_text.size() || port == 0 || port > 65535)
      return bad("bad port '" + std::string(port_text) + "'");
    url.port = static_cast<uint16_t>(port);
  }
  return url;
}

HttpClient::HttpClient(HttpEndpoint at, HttpClientOptions options)
    : at_(std::move(at)), options_(std::move(options)) {
  const bool v6 = at_.host.find(':') != std::string::npos;
  where_ = (v6 ? "[" + at_.host + "]" : at_.host) + ":" + std::to_string(at_.port);
}

HttpClient::~HttpClient() {
  disconnect();
}

void HttpClient::disconnect() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  pending_.clear();
}

void HttpClient::set_wake_fds(int first, int second) {
  wake_[0] = first;
  wake_[1] = second;
}

bool HttpClient::woken() const {
  pollfd p[2] = {{wake_[0], POLLIN, 0}, {wake_[1], POLLIN, 0}};
  return ::poll(p, 2, 0) > 0;
}

Status HttpClient::withdrawn() {
  disconnect();
  return Status(Errc::cancelled, "the request to delayqd at " + where_ + " was withdrawn");
}

Status HttpClient::unavailable(const std::string& why) const {
  return Status(Errc::unavailable, "delayqd at " + where_ + ": " + why);
}

Status HttpClient::connect(Deadline deadline) {
  disconnect();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(at_.port);
  if (const int rc = ::getaddrinfo(at_.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    return unavailable(std::string("cannot resolve the host: ") + ::gai_strerror(rc));
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next)
    fd_ = connect_to(*a, deadline, wake_, error);
  ::freeaddrinfo(found);
  if (fd_ < 0 && woken()) return withdrawn();
  if (fd_ < 0) return unavailable("cannot connect: " + error + " (is delayqd running?)");
  return Status();
}

void HttpClient::build_request(std::string_view method, std::string_view path,
                               std::string_view body, std::string_view extra_headers) {
  std::string& r = request_;
  r.clear();
  r.append(method).append(" ").append(at_.prefix).append(path).append(" HTTP/1.1\r\nHost: ");
  r.append(where_).append("\r\nUser-Agent: ").append(options_.user_agent);
  r.append("\r\nAccept: application/json\r\n");
  if (!options_.token.empty()) r.append("Authorization: Bearer ").append(options_.token) += "\r\n";
  if (method != "GET") {
    r.append("Content-Type: application/json\r\nContent-Length: ");
    r.append(std::to_string(body.size())) += "\r\n";
  }
  r.append(extra_headers).append("\r\n").append(body);
}

HttpClient::Sent HttpClient::send_all(Deadline deadline) {
  for (size_t off = 0; off < request_.size();) {
    const ssize_t n =
        ::send(fd_, request_.data() + off, request_.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (const Wait w = wait_for(fd_, POLLOUT, deadline, wake_); w != Wait::ready)
        return w == Wait::woken ? Sent::withdrawn : Sent::timed_out;
    } else {
      return Sent::broken;
    }
  }
  return Sent::all;
}

Result<HttpReply> HttpClient::read_reply(Deadline deadline, bool& dropped) {
  dropped = false;
  HttpReply reply;
  bool eof = false;
  for (;;) {
    switch (take_reply(pending_, eof, reply)) {
      case ReplyParse::done:
        return reply;
      case ReplyParse::not_http:
        return Status(Errc::io_error,
                      "delayqd at " + where_ + " answered with something that is not HTTP");
      case ReplyParse::cut:
        dropped = pending_.empty();
        return unavailable(pending_.empty() ? "the connection closed without an answer"
                                            : "the connection closed in the middle of the answer");
      case ReplyParse::incomplete:
        break;
    }
    const Wait w = wait_for(fd_, POLLIN, deadline, wake_);
    if (w == Wait::woken) return withdrawn();
    if (w == Wait::timed_out) {
      const auto s = std::chrono::duration_cast<std::chrono::seconds>(options_.timeout).count();
      return unavailable("no answer within " + std::to_string(s) + " s");
    }
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      pending_.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno == ECONNRESET) {
      eof = true;  // a reset is the end too: what came before it is read
    } else if (errno != EAGAIN && errno != EINTR) {
      return unavailable(std::string("reading the answer: ") + std::strerror(errno));
    }
  }
}

Result<HttpReply> HttpClient::request(std::string_view method, std::string_view path,
                                      std::string_view body, std::string_view extra_headers) {
  const Deadline deadline =
      Steady::now() + std::chrono::duration_cast<Steady::duration>(options_.timeout);
  build_request(method, path, body, extra_headers);
  for (bool retried = false;; retried = true) {
    const bool reused = fd_ >= 0;
    if (!reused)
      if (Status s = connect(deadline); !s.ok()) return s;
    // A broken send still reads: the server may have answered (413) and closed before it read
    // the whole request.
    if (const Sent sent = send_all(deadline); sent == Sent::timed_out || sent == Sent::withdrawn) {
      disconnect();
      if (sent == Sent::withdrawn) return withdrawn();
      return unavailable("timed out sending the request");
    }
    bool dropped = false;
    Result<HttpReply> reply = read_reply(deadline, dropped);
    if (!reply.ok() || reply->close) disconnect();
    if (reply.ok() || !dropped || !reused || retried) return reply;
  }
}

}  // namespace delayq::wire
