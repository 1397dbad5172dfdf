// The HTTP/1.1 client of delayqd's clients: the CLI, the tests and the HTTP benchmark. Blocking,
// one keep-alive connection, plain TCP; every request has a total deadline (connecting, sending
// and reading the whole answer), and carries the bearer token when there is one. Enough to talk
// to delayqd; not a general client (no TLS, no redirects, no proxies).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "delayq/clock.h"
#include "delayq/error.h"
#include "wire/http_reply.h"

namespace delayq::wire {

// Where a delayqd listens.
struct HttpEndpoint {
  std::string host = "127.0.0.1";  // a name or an address, an IPv6 one without its brackets
  uint16_t port = 9277;
  std::string prefix;  // a path the routes are under ("" or "/delayq"), without a trailing '/'
};

// "http://HOST[:PORT][/PREFIX]" (port 80 when none is given). Errors: invalid_argument, saying
// what is wrong with the text ("it does not start with http://").
Result<HttpEndpoint> parse_http_url(std::string_view text);

struct HttpClientOptions {
  std::string token;  // sent as "Authorization: Bearer <token>" when not empty
  Duration timeout = std::chrono::seconds(60);  // for each request, from its start to its answer
  std::string user_agent = "delayq";
};

// Not thread-safe: one thread uses a client at a time.
class HttpClient {
 public:
  explicit HttpClient(HttpEndpoint at, HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends one request on the kept-alive connection (made first when there is none) and reads
  // its whole answer, which may be an error status: that is the caller's to read. A request
  // that a reused connection drops with no answer at all (the server closed it while idle) goes
  // once more on a new connection. `extra_headers` are whole lines, each ending in "\r\n".
  // Errors: unavailable (the host cannot be resolved or reached, the connection broke, no answer
  // within the timeout), io_error (an answer that is not HTTP), cancelled (a wake descriptor
  // became readable: set_wake_fds).
  Result<HttpReply> request(std::string_view method, std::string_view path, std::string_view body,
                            std::string_view extra_headers = {});

  // From now on, a request ends as soon as one of these descriptors (-1: none) is readable (an
  // eventfd another thread writes to): its connection is closed, so that a waiting /pop is
  // withdrawn by the daemon, and it returns Errc::cancelled. Not checked while a connection is
  // being resolved (getaddrinfo).
  void set_wake_fds(int first, int second = -1);

  // The timeout of the requests from now on (HttpClientOptions::timeout).
  void set_timeout(Duration timeout) { options_.timeout = timeout; }

  // Closes the connection; the next request makes a new one.
  void disconnect();

  // "HOST:PORT" ("[::1]:9277"), as messages name the server.
  const std::string& where() const { return where_; }

 private:
  using Deadline = std::chrono::steady_clock::time_point;
  Status connect(Deadline deadline);
  enum class Sent { all, broken, timed_out, withdrawn };
  Sent send_all(Deadline deadline);
  // `dropped`: the connection ended before any byte of an answer came.
  Result<HttpReply> read_reply(Deadline deadline, bool& dropped);
  void build_request(std::string_view method, std::string_view path, std::string_view body,
                     std::string_view extra_headers);
  Status unavailable(const std::string& why) const;
  bool woken() const;
  Status withdrawn();  // disconnects

  HttpEndpoint at_;
  HttpClientOptions options_;
  std::string where_;
  int fd_ = -1;
  int wake_[2] = {-1, -1};
  std::string request_;  // the request being sent (its buffer reused)
  std::string pending_;  // bytes read and not yet part of an answer
};

}  // namespace delayq::wire
