// One connection to a Redis server, and where a server is (Endpoint, parse_url). hiredis stays
// inside connection.cc; replies are plain values (resp.h).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "delayq/clock.h"
#include "delayq/error.h"
#include "redis/resp.h"

struct redisContext;  // hiredis

namespace delayq::redis {

struct Endpoint {
  std::string unix_path;  // set for unix:// urls
  std::string host;
  int port = 6379;
  std::string url;  // as given, for messages
};

// "unix:///path" or "redis://host[:port]". Errors: invalid_argument.
Result<Endpoint> parse_url(std::string_view url);

// One connection; not thread-safe. A transport failure breaks it for good (broken() is true
// from then on): the owner drops it and opens a new one.
class Connection {
 public:
  // Errors: unavailable, with hiredis's reason.
  static Result<std::unique_ptr<Connection>> open(const Endpoint& ep, Duration connect_timeout,
                                                  Duration call_timeout);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends one command and reads its reply. An error reply is a Reply (is_error()), not a
  // failed Result: only transport failures fail (unavailable).
  Result<Reply> call(const std::vector<std::string_view>& argv);
  // Sends the commands back to back (one write), then reads their replies in order.
  Result<std::vector<Reply>> call_many(const std::vector<std::vector<std::string_view>>& cmds);
  // call_many() that keeps what it got: `out` receives the replies read, in order, also when the
  // connection breaks part-way (then the status is unavailable and `out` is shorter than `cmds`:
  // the server may or may not have run the commands without a reply).
  Status pipeline(const std::vector<std::vector<std::string_view>>& cmds, std::vector<Reply>* out);
  // Reads the next reply the server pushes (a subscribed connection). Blocks without a limit
  // unless the connection was opened with a call timeout; shutdown() from another thread ends it.
  Result<Reply> read();
  // Makes a read() blocked in another thread return (with unavailable).
  void shutdown();
  bool broken() const { return broken_; }
  // Breaks it on purpose: the server it reaches is no longer the one to use (node.h, READONLY).
  void discard() { broken_ = true; }

 private:
  explicit Connection(redisContext* c, std::string url) : ctx_(c), url_(std::move(url)) {}
  Status transport_error(const char* during);
  redisContext* ctx_;
  std::string url_;
  bool broken_ = false;
};

}  // namespace delayq::redis
