// The pooled connections to one Redis server (a Node), with reconnection and backoff, and the
// backend's function library loaded on each.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/fork_guard.h"
#include "delayq/clock.h"
#include "delayq/error.h"
#include "redis/connection.h"
#include "redis/replicas.h"
#include "redis/scripts.h"

namespace delayq::redis {

// The keys and arguments of one script call.
using ScriptCall = std::pair<std::vector<std::string>, std::vector<std::string>>;

struct NodeOptions {
  uint32_t connections = 4;
  Duration connect_timeout = std::chrono::seconds(2);
  Duration call_timeout = std::chrono::seconds(5);
  Duration reconnect_min = std::chrono::milliseconds(50);
  Duration reconnect_max = std::chrono::seconds(2);
  // WAIT after every writing script (RedisOptions::replicas_to_ack); off by default.
  ReplicaWait wait{};
};

// The connections to one server. Thread-safe. Each new connection makes sure the library is
// loaded first, so a restarted server that lost it is handled by reconnecting; a "Function not
// found" reply (someone ran FUNCTION FLUSH) loads it again and runs the call again.
class Node {
 public:
  // `lib` must outlive the node.
  Node(Endpoint ep, NodeOptions opt, const Library* lib);
  ~Node();

  // Runs a plain command; `asking` sends ASKING first (the target of an ASK redirection). An
  // error reply is a Reply. Errors: unavailable (see Connection::call), closed after close().
  // `sent`, when given, is set to whether the command went out (false: no connection).
  Result<Reply> command(const std::vector<std::string_view>& argv, bool asking = false,
                        bool* sent = nullptr);
  // FCALLs of lib->scripts[script], pipelined on one connection: `out` receives one reply per
  // call, in order, error replies included ("Function not found" is handled here: the library is
  // loaded again and the batch resent). `asking`: ASKING before each call. A transport failure
  // returns unavailable with the replies read so far in `out`: the calls without a reply may or
  // may not have taken effect. No connection (unavailable, closed): `out` stays empty, nothing
  // was sent (`sent`, when given, says which). With NodeOptions::wait on, a writing script's
  // batch is followed by WAIT on the same connection: too few replicas, or no reply to WAIT,
  // fails every call of the batch with unavailable ("may or may not have taken effect"). A
  // READONLY reply (a primary demoted by a failover) drops the connection and the idle ones.
  Status eval_raw(size_t script, const std::vector<const ScriptCall*>& calls, bool asking,
                  std::vector<Reply>* out, bool* sent = nullptr);
  // Points the node at another server (Sentinel found a new primary): the idle connections are
  // dropped and the next ones open there, at once. Nothing when `ep` is where it points already.
  void retarget(const Endpoint& ep);
  // Fails new calls with `closed` from now on.
  void close();
  Endpoint endpoint() const;

 private:
  // A pooled connection, or why there is none (unavailable, closed).
  Result<std::unique_ptr<Connection>> acquire();
  void release(std::unique_ptr<Connection> c);
  Status load_library(Connection& c);

  Endpoint ep_;
  NodeOptions opt_;
  const Library* lib_;
  const ForkGuard fork_;  // acquire() refuses in a child forked after the open
  mutable std::mutex mu_;  // also guards ep_, which retarget() changes
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
