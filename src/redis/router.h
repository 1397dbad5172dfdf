// Which Node serves a hash slot (a Router): one Node for a single server, one per master of a
// Redis Cluster, following MOVED / ASK / TRYAGAIN.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "delayq/error.h"
#include "redis/node.h"

namespace delayq::redis {

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
//  - A node that cannot be reached (a master died): the map is read again from the nodes still
//    up, and a call that did not go out is sent again after a short pause, to the replica the
//    cluster promotes once the map names it.
// A call keeps at this for up to the call timeout, then its last error reply stands (the queue
// reports it as unavailable). A redirected call never ran, so resending it is always safe.
//
// With Sentinel (a `locate` function, sentinel.h): the single node is pointed at the primary
// that locate() finds, at start() and again when a call cannot reach it, loses its connection or
// is answered READONLY / MASTERDOWN / LOADING. A call that did not go out, or was refused so, is
// sent again (to the new primary) until the call timeout; one whose connection broke after it
// was sent fails with unavailable ("may or may not have taken effect"): only the caller knows
// whether sending it again is safe.
// Whether a call failed because its connection broke after it was sent (Connection's transport
// error): it may or may not have run.
bool sent_and_lost(const Status& s);

class Router {
 public:
  using Locate = std::function<Result<Endpoint>()>;
  // `lib` must outlive the router.
  Router(Endpoint seed, NodeOptions opt, const Library* lib, Locate locate = {});
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
  // order: one per index, or fewer when the connection failed (the returned status); the last
  // argument is set to whether anything went out.
  using Send = std::function<Status(Node&, const std::vector<size_t>&, bool, std::vector<Reply>*,
                                    bool*)>;
  // One result per call of the batch: its reply (error replies included), or why there is none.
  std::vector<Result<Reply>> route(uint16_t slot, size_t n, const Send& send);
  Node* node_for(const std::string& host, int port);  // found or created
  Node* owner(uint16_t slot) const;
  // Reads CLUSTER SLOTS from `first` (or any node that answers) into the table. Skipped when
  // the last refresh is younger than 100 ms, unless `force`.
  void refresh(Node* first, bool force);
  Status script_error(size_t script, const std::string& url, const Reply& r) const;
  // Sentinel: points the seed at the primary locate() finds now (router_failover.cc); at most
  // once per 100 ms, as every call failing in a failover asks.
  void relocate();

  Endpoint seed_ep_;
  NodeOptions opt_;
  const Library* lib_;
  Node seed_;
  bool cluster_ = false;
  std::array<std::atomic<Node*>, 16384> slots_{};

  std::mutex mu_;                                                 // nodes_ and refresh times
  std::unordered_map<std::string, std::unique_ptr<Node>> nodes_;  // by "host:port"; never erased
  std::vector<Node*> masters_;                                    // of the last slot map
  std::chrono::steady_clock::time_point last_refresh_{};
  std::mutex refresh_mu_;  // one refresh at a time
  bool closed_ = false;
  Locate locate_;
  std::mutex relocate_mu_;
  std::chrono::steady_clock::time_point last_relocate_{};  // under relocate_mu_
};

}  // namespace delayq::redis
