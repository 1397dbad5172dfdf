// The Redis connection layer of the Redis backend: replies as plain values, one connection, and
// a Node (the pooled connections to one server, with reconnect and backoff, and the scripts
// loaded on each). hiredis stays inside connection.cc.
//
// Cluster routing is meant to slot in above Node: one Node per cluster node and a shard -> node
// map in the queue, refreshed from CLUSTER SLOTS when a call answers MOVED/ASK. Nothing here
// assumes a single server except that the queue builds exactly one Node today.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "delayq/error.h"
#include "delayq/clock.h"

struct redisContext;  // hiredis

namespace delayq::redis {

// A server reply, copied out of hiredis.
struct Reply {
  enum class Type : uint8_t { nil, integer, string, array, status, error };
  Type type = Type::nil;
  int64_t integer = 0;
  std::string str;  // string, status and error replies
  std::vector<Reply> elements;

  bool is_error() const { return type == Type::error; }
  // An integer reply, or a string/status that holds a decimal integer; else `fallback`.
  int64_t as_int(int64_t fallback = 0) const;
};

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
  // Reads the next reply the server pushes (a subscribed connection). Blocks without a limit
  // unless the connection was opened with a call timeout; shutdown() from another thread ends it.
  Result<Reply> read();
  // Makes a read() blocked in another thread return (with unavailable).
  void shutdown();
  bool broken() const { return broken_; }

 private:
  explicit Connection(redisContext* c, std::string url) : ctx_(c), url_(std::move(url)) {}
  Status transport_error(const char* during);
  redisContext* ctx_;
  std::string url_;
  bool broken_ = false;
};

// A Lua script.
struct Script {
  std::string name;
  std::string source;
};

struct NodeOptions {
  uint32_t connections = 4;
  Duration connect_timeout = std::chrono::seconds(2);
  Duration call_timeout = std::chrono::seconds(5);
  Duration reconnect_min = std::chrono::milliseconds(50);
  Duration reconnect_max = std::chrono::seconds(2);
};

// The connections to one server. Thread-safe. Each new connection loads every script first, so
// a restarted server (empty script cache) is handled by reconnecting; a NOSCRIPT reply (someone
// ran SCRIPT FLUSH) reloads the script and runs it again.
class Node {
 public:
  // `scripts` must outlive the node.
  Node(Endpoint ep, NodeOptions opt, const std::vector<Script>* scripts);
  ~Node();

  // Runs a plain command. Errors: unavailable (see Connection::call), closed after close().
  Result<Reply> command(const std::vector<std::string_view>& argv);
  // EVALSHA of scripts[script] with the given keys and arguments.
  Result<Reply> eval(size_t script, const std::vector<std::string>& keys,
                     const std::vector<std::string>& args);
  // Several EVALSHAs of one script, pipelined on one connection: one reply per call, in
  // order. Errors as eval(); a failure fails the whole batch (some calls may have taken effect).
  Result<std::vector<Reply>> eval_many(
      size_t script,
      const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>>& calls);
  // Fails new calls with `closed` from now on.
  void close();
  const Endpoint& endpoint() const { return ep_; }

 private:
  // A pooled connection, or why there is none (unavailable, closed).
  Result<std::unique_ptr<Connection>> acquire();
  void release(std::unique_ptr<Connection> c);
  Status load_scripts(Connection& c);
  std::string sha(size_t script);
  Status script_error(size_t script, const Reply& r) const;

  Endpoint ep_;
  NodeOptions opt_;
  const std::vector<Script>* scripts_;
  std::mutex mu_;
  std::vector<std::string> shas_;  // under mu_: each script's SHA1 as SCRIPT LOAD returned it
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> idle_;
  uint32_t open_ = 0;  // connections open (idle or in use)
  bool closed_ = false;
  // Backoff after a failed connection attempt: no new attempt before next_attempt_.
  std::chrono::steady_clock::time_point next_attempt_{};
  Duration backoff_{0};
  std::string last_error_;
};

}  // namespace delayq::redis
