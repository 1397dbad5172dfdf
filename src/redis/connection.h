// The Redis connection layer of the Redis backend: replies as plain values, one connection, a
// Node (the pooled connections to one server, with reconnect and backoff, and the scripts loaded
// on each) and a Router (which Node serves a hash slot: one Node for a single server, one per
// master of a Redis Cluster, following MOVED / ASK / TRYAGAIN). hiredis stays inside
// connection.cc.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
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

// The replies in RESP bytes, read with hiredis's reader as a connection reads them, in order;
// an incomplete reply at the end is left out. For tests and the fuzzer: replies.h reads them.
// Errors: corrupt (a protocol error, with hiredis's reason).
Result<std::vector<Reply>> parse_resp(std::string_view bytes);

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

 private:
  explicit Connection(redisContext* c, std::string url) : ctx_(c), url_(std::move(url)) {}
  Status transport_error(const char* during);
  redisContext* ctx_;
  std::string url_;
  bool broken_ = false;
};

// One of the backend's Lua functions.
struct Script {
  std::string name;      // for messages
  std::string function;  // what FCALL calls
};

// The backend's Lua code as one function library (Redis 7 FUNCTION LOAD). Functions, unlike
// EVAL scripts, run the library's shared code once at load time: a call runs only its own body
// (the helpers of an EVAL script would be created anew by every call, ~5 µs each).
struct Library {
  std::string name;
  std::string source;            // "#!lua name=<name>" and the code
  std::vector<Script> scripts;   // indexed by the caller's script ids
};

// The keys and arguments of one script call.
using ScriptCall = std::pair<std::vector<std::string>, std::vector<std::string>>;

struct NodeOptions {
  uint32_t connections = 4;
  Duration connect_timeout = std::chrono::seconds(2);
  Duration call_timeout = std::chrono::seconds(5);
  Duration reconnect_min = std::chrono::milliseconds(50);
  Duration reconnect_max = std::chrono::seconds(2);
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
  Result<Reply> command(const std::vector<std::string_view>& argv, bool asking = false);
  // FCALLs of lib->scripts[script], pipelined on one connection: `out` receives one reply per
  // call, in order, error replies included ("Function not found" is handled here: the library is
  // loaded again and the batch resent). `asking`: ASKING before each call. A transport failure
  // returns unavailable with the replies read so far in `out`: the calls without a reply may or
  // may not have taken effect. No connection (unavailable, closed): `out` stays empty, nothing
  // was sent.
  Status eval_raw(size_t script, const std::vector<const ScriptCall*>& calls, bool asking,
                  std::vector<Reply>* out);
  // Fails new calls with `closed` from now on.
  void close();
  const Endpoint& endpoint() const { return ep_; }

 private:
  // A pooled connection, or why there is none (unavailable, closed).
  Result<std::unique_ptr<Connection>> acquire();
  void release(std::unique_ptr<Connection> c);
  Status load_library(Connection& c);

  Endpoint ep_;
  NodeOptions opt_;
  const Library* lib_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> idle_;
  uint32_t open_ = 0;  // connections open (idle or in use)
  bool closed_ = false;
  // Backoff after a failed connection attempt: no new attempt before next_attempt_.
  std::chrono::steady_clock::time_point next_attempt_{};
  Duration backoff_{0};
  std::string last_error_;
};

// The hash slot of a key, as Redis Cluster computes it: CRC16 (XMODEM) of the key's hash tag
// (the bytes between the first '{' and the next '}', when not empty) or of the whole key,
// modulo 16384.
uint16_t key_slot(std::string_view key);

// Which Node serves a hash slot. Thread-safe.
//
// A single server: one Node for every slot. A Redis Cluster (detected by start() with CLUSTER
// INFO on the given node): one Node per master, found with CLUSTER SLOTS, and a slot table that
// every call reads without a lock. A call is sent to its slot's node and its reply examined:
//  - MOVED slot host:port: the slot has a new owner. The table takes it at once, the whole map
//    is read again (at most once per 100 ms: a reshard moves many slots), and the call is sent
//    to the new owner.
//  - ASK host:port: the slot is being migrated and the call's keys are not all here. The call
//    goes to the named node once, preceded by ASKING; the table is left alone.
//  - TRYAGAIN (a multi-key call during a migration, with the keys split between the nodes) and
//    CLUSTERDOWN (a failover in progress): the call is sent again after a short pause.
// A call keeps at this for up to the call timeout, then its last error reply stands (the queue
// reports it as unavailable). A redirected call never ran, so resending it is always safe.
class Router {
 public:
  // `lib` must outlive the router.
  Router(Endpoint seed, NodeOptions opt, const Library* lib);
  ~Router();

  // Connects to the seed and, if it is a cluster node, reads the slot map. Errors: unavailable.
  Status start();
  bool cluster() const { return cluster_; }

  // A plain command about keys of `slot` (errors as Node::command).
  Result<Reply> command(uint16_t slot, const std::vector<std::string_view>& argv);
  // FCALL of lib->scripts[script] with keys of `slot`. An error reply fails the call: unavailable
  // if the server may take it later (loading, busy, read-only, a cluster reconfiguring), else
  // io_error.
  Result<Reply> eval(uint16_t slot, size_t script, std::vector<std::string> keys,
                     std::vector<std::string> args);
  // Several FCALLs of one script about keys of `slot`, pipelined (one round trip): one result
  // per call, in order, each on its own. A call answered with an error reply fails as eval()
  // says, and only that call; the others keep their replies. When the connection breaks
  // part-way, the calls answered before keep their replies and the rest fail with unavailable
  // ("may or may not have taken effect").
  std::vector<Result<Reply>> eval_each(uint16_t slot, size_t script,
                                       const std::vector<ScriptCall>& calls);

  // The servers known: the seed, then (cluster) every master of the last slot map. The
  // subscriber picks one of these.
  std::vector<Endpoint> endpoints();
  // Fails new calls with `closed` from now on.
  void close();

 private:
  // Sends the calls `todo` (indexes into the batch) to `node`; `out` receives the replies, in
  // order: one per index, or fewer when the connection failed (the returned status).
  using Send = std::function<Status(Node&, const std::vector<size_t>&, bool, std::vector<Reply>*)>;
  // One result per call of the batch: its reply (error replies included), or why there is none.
  std::vector<Result<Reply>> route(uint16_t slot, size_t n, const Send& send);
  Node* node_for(const std::string& host, int port);  // found or created
  Node* owner(uint16_t slot) const;
  // Reads CLUSTER SLOTS from `first` (or any node that answers) into the table. Skipped when
  // the last refresh is younger than 100 ms, unless `force`.
  void refresh(Node* first, bool force);
  Status script_error(size_t script, const std::string& url, const Reply& r) const;

  Endpoint seed_ep_;
  NodeOptions opt_;
  const Library* lib_;
  Node seed_;
  bool cluster_ = false;
  std::array<std::atomic<Node*>, 16384> slots_{};

  std::mutex mu_;  // nodes_ and refresh times
  std::unordered_map<std::string, std::unique_ptr<Node>> nodes_;  // by "host:port"; never erased
  std::vector<Node*> masters_;  // of the last slot map
  std::chrono::steady_clock::time_point last_refresh_{};
  std::mutex refresh_mu_;  // one refresh at a time
  bool closed_ = false;
};

}  // namespace delayq::redis
