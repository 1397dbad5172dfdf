// The blocking HTTP/1.1 client (see http_client.h).
#include "wire/http_client.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace delayq::wire {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Closes the socket on every way out of http_request().
struct Socket {
  int fd = -1;
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
};

// Waits for `events` on fd until `deadline`; false on timeout.
bool wait_for(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1'000'000)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return true;  // let the following call report the error
  }
}

// Decodes a "Transfer-Encoding: chunked" body; false when it is malformed or incomplete.
bool dechunk(std::string_view in, std::string& out) {
  size_t pos = 0;
  for (;;) {
    const size_t eol = in.find("\r\n", pos);
    if (eol == std::string_view::npos) return false;
    size_t size = 0;
    const std::string_view line = in.substr(pos, eol - pos);
    const auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
    if (ec != std::errc() || p == line.data()) return false;
    pos = eol + 2;
    if (size == 0) return true;
    if (in.size() < pos + size + 2) return false;
    out.append(in.substr(pos, size));
    pos += size + 2;
  }
}

}  // namespace

Result<HttpUrl> parse_http_url(std::string_view text) {
  const auto bad = [&](std::string why) {
    return Status(Errc::invalid_argument,
                  "bad --url '" + std::string(text) + "': " + why +
                      " (expected http://HOST:PORT, e.g. http://127.0.0.1:9277)");
  };
  constexpr std::string_view kScheme = "http://";
  if (text.rfind("https://", 0) == 0) return bad("https is not supported");
  if (text.rfind(kScheme, 0) != 0) return bad("it does not start with http://");
  std::string_view rest = text.substr(kScheme.size());
  HttpUrl url;
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
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

Result<HttpReply> http_request(const HttpUrl& url, std::string_view method, std::string_view path,
                               std::string_view body, std::string_view token, Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
  const std::string where =
      (url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host) + ":" +
      std::to_string(url.port);
  const auto unavailable = [&](std::string why) {
    return Status(Errc::unavailable, "delayqd at " + where + ": " + why);
  };

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(url.port);
  if (const int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    return unavailable(std::string("cannot resolve the host: ") + ::gai_strerror(rc));
  Socket sock;
  std::string connect_error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    // Non-blocking connect so that an unreachable host cannot hold the CLI past `timeout`.
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      if (!wait_for(fd, POLLOUT, deadline)) {
        ::close(fd);
        connect_error = "timed out";
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc == 0) {
      sock.fd = fd;
      break;
    }
    connect_error = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (sock.fd < 0)
    return unavailable("cannot connect: " + connect_error + " (is delayqd running?)");

  std::string req = std::string(method) + " " + url.prefix + std::string(path) +
                    " HTTP/1.1\r\nHost: " + where +
                    "\r\nUser-Agent: delayq-cli\r\n"
                    "Connection: close\r\nAccept: application/json\r\n";
  if (!token.empty()) req += "Authorization: Bearer " + std::string(token) + "\r\n";
  if (method != "GET")
    req +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n";
  req += body;
  for (size_t off = 0; off < req.size();) {
    if (!wait_for(sock.fd, POLLOUT, deadline)) return unavailable("timed out sending the request");
    const ssize_t n = ::send(sock.fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    // The server may answer (e.g. 413) and close before reading everything: read its answer.
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }

  // Read until the server closes (we asked it to) or the announced length has arrived.
  std::string in;
  size_t header_end = std::string::npos;
  size_t want = std::string::npos;
  bool chunked = false;
  for (;;) {
    if (header_end == std::string::npos) {
      header_end = in.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        const std::string headers = lower(in.substr(0, header_end));
        if (const size_t cl = headers.find("\r\ncontent-length:"); cl != std::string::npos)
          want = header_end + 4 + std::strtoull(headers.c_str() + cl + 17, nullptr, 10);
        chunked = headers.find("\r\ntransfer-encoding: chunked") != std::string::npos;
      }
    }
    if (want != std::string::npos && in.size() >= want) break;
    if (!wait_for(sock.fd, POLLIN, deadline))
      return unavailable(
          "no answer within " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) + " s");
    char buf[65536];
    const ssize_t n = ::recv(sock.fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) return unavailable(std::string("reading the answer: ") + std::strerror(errno));
    if (n == 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  if (header_end == std::string::npos || in.rfind("HTTP/1.", 0) != 0 || in.size() < 12)
    return in.empty() ? unavailable("the connection closed without an answer")
                      : Status(Errc::io_error, "delayqd at " + where +
                                                   " answered with "
                                                   "something that is not HTTP");
  if (want != std::string::npos && in.size() < want)
    return unavailable("the connection closed in the middle of the answer");
  HttpReply reply;
  reply.status = std::atoi(in.c_str() + 9);
  std::string_view payload = std::string_view(in).substr(header_end + 4);
  if (want != std::string::npos) payload = payload.substr(0, want - header_end - 4);
  if (chunked) {
    if (!dechunk(payload, reply.body))
      return Status(Errc::io_error, "delayqd at " + where + ": a malformed chunked answer");
  } else {
    reply.body = std::string(payload);
  }
  return reply;
}

}  // namespace delayq::wire
