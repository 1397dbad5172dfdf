// A small blocking HTTP/1.1 client for delayqd's clients (the CLI): one request per connection
// ("Connection: close"), over plain TCP. Enough to talk to delayqd; not a general client (no
// TLS, no redirects, no proxies).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "delayq/clock.h"
#include "delayq/error.h"

namespace delayq::wire {

struct HttpUrl {
  std::string host;  // without the brackets of an IPv6 literal
  uint16_t port = 80;
  std::string prefix;  // a path the routes are under ("" or "/delayq"), without trailing '/'
};

// "http://HOST[:PORT][/PREFIX]". Errors: invalid_argument.
Result<HttpUrl> parse_http_url(std::string_view text);

struct HttpReply {
  int status = 0;
  std::string body;
};

// Sends one request and reads the whole answer. `token`, when not empty, goes out as
// "Authorization: Bearer <token>". Errors: unavailable (cannot connect, the connection broke,
// no answer within `timeout`), io_error (an answer that is not HTTP).
Result<HttpReply> http_request(const HttpUrl& url, std::string_view method, std::string_view path,
                               std::string_view body, std::string_view token, Duration timeout);

}  // namespace delayq::wire
