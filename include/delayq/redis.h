// The Redis backend: a Queue whose jobs live in a Redis server (7.0 or later).
//
//   delayq::RedisOptions opt;
//   opt.url = "unix:///run/redis/redis.sock";        // or "redis://127.0.0.1:6379"
//   opt.queue = "orders";
//   auto q = delayq::open_redis(opt).value();
//   q->push({.topic = "order-timeout", .id = "order-42", .delay = 30min});
//
// Every transition is one Lua script run atomically by the server, and every due and lease
// decision is made on the server's clock (TIME), so any number of processes can share a queue.
// Times are kept to the microsecond (the server's resolution): a due time given in nanoseconds
// is rounded up, never down. docs/redis.md has the key layout, the scripts, the guarantees and
// how to run the server.
//
// Errors are those of every backend (delayq/queue.h), plus Errc::unavailable when the server
// cannot be reached or the connection broke during a call; such a call may or may not have taken
// effect (a push retried with the same id then reports duplicate_id if it had; the queue itself
// sends again a push with the caller's id and an ack, see `sentinels`). The queue reconnects by
// itself, with backoff; consume() loops carry on once the server is back.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "delayq/clock.h"
#include "delayq/error.h"
#include "delayq/job.h"
#include "delayq/limits.h"
#include "delayq/queue.h"

namespace delayq {

struct RedisOptions {
  // Where the server is: "unix:///path/to/redis.sock" or "redis://host:port" (port 6379 if left
  // out), or "redis-sentinel://..." (see `sentinels`). For a Redis Cluster, any one node:
  // open_redis() finds out that it is one (CLUSTER INFO), reads the slot map and reaches every
  // master by itself, following MOVED and ASK as slots move (docs/redis.md, "Sharding and Redis
  // Cluster"). The url may hold the credentials, percent-encoded:
  // "redis://user:password@host:port", "redis://:password@host:port",
  // "unix:///path?password=...&user=...". No TLS (docs/redis.md: a TLS sidecar).
  std::string url{};
  // AUTH: when a password is set (here or in the url, not both), every connection to every
  // server, cluster nodes found later included, authenticates first with AUTH [user] password.
  // A user (Redis 6 ACL) needs a password; without one, the default user. A server that refuses
  // them fails the call with invalid_argument, naming AUTH; no message or log shows the password.
  std::string user{};
  std::string password{};
  // The queue's name: every key of the queue starts with "{dq:<queue>:". 1 to 64 bytes, no '{',
  // '}' or ':' so that the hash tag stays the queue's own.
  std::string queue = "default";
  // Jobs are spread over this many shards by a hash of their id (FNV-1a, 32 bits, of the id's
  // bytes, modulo shards). Each shard is a group of keys with its own hash tag, so that in a
  // Redis Cluster the shards can live on different nodes. A queue keeps the shard count it was
  // created with: opening it with another count is refused. 1 to 1024.
  uint32_t shards = 1;

  // The same limits as the in-memory engine (EngineOptions::limits, delayq/limits.h). They are
  // checked by each client; processes sharing a queue should use the same values.
  Limits limits{};

  // Connections this client keeps to the server for calls (a blocked reserve() holds none while
  // it waits). 1 to 64.
  uint32_t connections = 4;
  // How long to wait for a connection to open, and for a reply to a call.
  Duration connect_timeout = std::chrono::seconds(2);
  Duration call_timeout = std::chrono::seconds(5);
  // After a failed connection attempt, the next waits this long, doubling up to reconnect_max.
  Duration reconnect_min = std::chrono::milliseconds(50);
  Duration reconnect_max = std::chrono::seconds(2);
  // Waiting consumers look again at least this often, in case a wake-up message was lost
  // (a broken subscription, a server restart). Wake-ups normally come from the server at once.
  Duration sweep = std::chrono::seconds(1);
  // Jobs one reserve() may take from the server at once (1 to 1000). With more than 1, a
  // reserve() of one topic that finds several ready jobs takes up to this many in one script run
  // and keeps the rest in this client, leased already, for the next reserve() calls of the same
  // topic: far fewer round trips and script runs per job, at a price. The lease of a kept job
  // runs from when it was taken, so a caller gets less of its ttr (a kept job whose lease is
  // more than half gone is given back with nack(0), which counts as a failed attempt), and
  // close() gives back the kept jobs the same way. Also, an ack() of a job of a topic this
  // client reserves on its own (one topic per reserve()), while it keeps none of that topic,
  // takes up to this many next jobs in the same script run: a reserve-ack loop then costs one
  // round trip per job. Keep it small, and at 1 when consumers are slow or ttr is short.
  uint32_t claim_batch = 1;
  // Seed for retry jitter; 0 picks one at random.
  uint64_t seed = 0;

  // Failover (docs/redis.md, "Failover and Sentinel").
  // Sentinel: the sentinels ("host:port", the port 26379 when left out) and the name they
  // monitor the primary under; `url` is then left empty. The url "redis-sentinel://h1:26379,
  // h2:26379/name" says the same. The queue asks the sentinels for the primary, and asks again
  // when a call cannot reach it: a call that did not go out waits for the new primary up to
  // call_timeout, so make that longer than a failover takes. A call sent before the connection broke has an unknown
  // outcome: it is sent again only when that is safe (push with an id of the caller's, where
  // a duplicate_id answer for the same topic and body counts as stored; ack by token, where
  // not_found counts as acknowledged); any other call fails with unavailable.
  std::vector<std::string> sentinels{};
  std::string sentinel_master{};
  // Every writing call waits (WAIT) until this many replicas have its writes before it answers,
  // so that a failover to one of them loses nothing it acknowledged. When fewer have them
  // within replicas_timeout, the call fails with unavailable, saying it may or may not have
  // taken effect (the primary ran it). Read-only calls do not wait. 0 to 16; 0: no WAIT.
  uint32_t replicas_to_ack = 0;
  // Positive, and shorter than call_timeout.
  Duration replicas_timeout = std::chrono::seconds(1);

  // A test hook, never in production: every client of a queue must pass the same clock, and no
  // other process may use the queue meanwhile. When set (it must outlive the queue), the scripts
  // decide what is due and when leases run out on this clock's now, which the client sends with
  // every call, instead of the server's TIME, and the client's own checks (a due_at too far
  // ahead) read it too. On a ManualClock the queue's waiters look again at each of its moves, as
  // the engine's do; the claim-ahead cache (claim_batch > 1) still times its jobs on the real
  // clock. nullptr (the default): the server's TIME.
  Clock* clock = nullptr;
};

// Connects (to every master of a cluster), checks the options and the queue's shard count, and
// loads the scripts.
// Errors: invalid_argument (a bad option, named in the message; a shard count that differs from
// the queue's; a password or user the server refused, or a server that wants one and got none),
// unavailable (the server cannot be reached or refused the scripts).
Result<std::unique_ptr<Queue>> open_redis(const RedisOptions& options);

}  // namespace delayq
