// RedisRun: what the Redis workloads of delayq-bench (W1 on --backend redis, redis-memory,
// wheel-vs-zset) share about the caller's server.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "delayq/redis.h"
#include "delayq_bench.h"
#include "redis/connection.h"

namespace delayq::bench {

// A run against the caller's Redis server: a queue of its own (a name no other run uses, so runs
// never see each other's jobs), raw connections for INFO and the baselines, and clean-up of the
// queue's keys at the end.
class RedisRun {
 public:
  RedisRun(const Args& a, const std::string& what) : a_(a) {
    queue_ = "bench-" + what + "-" + std::to_string(getpid()) + "-" +
             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007);
    conns_ = a.connections ? a.connections
                           : static_cast<uint32_t>(std::min<size_t>(64, a.consumers + a.producers + 1));
  }
  const std::string& queue() const { return queue_; }
  uint32_t connections() const { return conns_; }

  delayq::Result<std::unique_ptr<delayq::Queue>> open(uint32_t shards = 0) const {
    delayq::RedisOptions o;
    o.url = a_.redis;
    o.queue = queue_;
    o.shards = shards ? shards : static_cast<uint32_t>(a_.shards);
    o.connections = conns_;
    o.claim_batch = a_.claim_batch;
    o.replicas_to_ack = a_.replicas_to_ack;
    o.seed = a_.seed;
    auto q = delayq::open_redis(o);
    if (!q) return q.status();
    return std::move(*q);
  }

  // A connection of its own; exits on failure (a benchmark without its server is no run).
  std::unique_ptr<delayq::redis::Connection> connect() const {
    auto ep = delayq::redis::parse_url(a_.redis);
    if (!ep) die(ep.status().to_string());
    auto c = delayq::redis::Connection::open(*ep, std::chrono::seconds(5), std::chrono::seconds(60));
    if (!c) die(c.status().to_string());
    return std::move(*c);
  }
  delayq::redis::Reply cmd(const std::vector<std::string_view>& argv) const {
    auto r = connect()->call(argv);
    if (!r) die(r.status().to_string());
    return std::move(*r);
  }

  // One "field:value" of INFO <section>, as a number.
  double info(const char* section, const std::string& field) const {
    const std::string text = cmd({"INFO", section}).str;
    const size_t at = text.find("\n" + field + ":");
    return at == std::string::npos ? -1 : std::strtod(text.c_str() + at + field.size() + 2, nullptr);
  }
  std::string config(const char* name) const {
    const delayq::redis::Reply r = cmd({"CONFIG", "GET", name});
    return r.elements.size() == 2 ? r.elements[1].str : "?";
  }
  // The server settings that shape a run, as params fields.
  std::string server_params() const {
    return ",\"appendonly\":\"" + config("appendonly") + "\",\"appendfsync\":\"" +
           config("appendfsync") + "\",\"redis_version\":\"" + version() + "\"";
  }
  std::string version() const {
    const std::string text = cmd({"INFO", "server"}).str;
    const size_t at = text.find("redis_version:");
    return at == std::string::npos ? "?" : text.substr(at + 14, text.find('\r', at) - at - 14);
  }

  // Deletes every key of the run's queue.
  void cleanup() const {
    auto c = connect();
    const std::string match = "{dq:" + queue_ + ":*";
    std::string cursor = "0";
    do {
      auto r = c->call({"SCAN", cursor, "MATCH", match, "COUNT", "1000"});
      if (!r || r->elements.size() != 2) return;
      cursor = r->elements[0].str;
      // DEL, not UNLINK: memory figures taken next must not see a background free in progress.
      std::vector<std::string_view> del{"DEL"};
      for (const auto& k : r->elements[1].elements) del.push_back(k.str);
      if (del.size() > 1) (void)c->call(del);
    } while (cursor != "0");
  }

  [[noreturn]] static void die(const std::string& why) {
    std::cerr << "delayq-bench: redis: " << why << "\n";
    std::exit(2);
  }

 private:
  const Args& a_;
  std::string queue_;
  uint32_t conns_;
};

}  // namespace delayq::bench
