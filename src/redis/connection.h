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
  // Credentials: when password is set, each new connection sends AUTH [user] password first.
  std::string user;
  std::string password;
  std::string url;  // as given with the password masked (mask_url), for messages
};

// "unix:///path[?password=P&user=U]" or "redis://[[user]:password@]host[:port][/0]", the user
// and password percent-decoded. Errors: invalid_argument, the url masked in the message.
Result<Endpoint> parse_url(std::string_view url);
// parse_url(url) with the credentials given beside it (RedisOptions::user and password): each
// may be given in one place only. A user needs a password. Errors: invalid_argument.
Result<Endpoint> parse_url(std::string_view url, const std::string& user,
                           const std::string& password);
// `url` with its password replaced by "***" (redis://user:***@host, unix:///p?password=***), so
// that it can be shown; a url without one is returned as it is.
std::string mask_url(std::string_view url);
// The password held in the file at `path` (delayqd's and the CLI's --redis-password-file): its
// content without one trailing line break. Errors: invalid_argument naming the file (never its
// content): unreadable, empty, or more than one line.
Result<std::string> read_password_file(const std::string& path);

// One connection; not thread-safe. A transport failure breaks it for good (broken() is true
// from then on): the owner drops it and opens a new one.
class Connection {
 public:
  // Opens the connection and, when ep has a password, authenticates it (AUTH).
  // Errors: unavailable, with hiredis's reason; invalid_argument when the server refused AUTH.
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
