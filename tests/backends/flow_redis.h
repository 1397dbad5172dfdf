// The Redis backend for the flow suites (flow_fixture.h: flow_priority_test.cc, the limits suites
// and flow_browse_test.cc): instantiate with with_redis(backends()) and link delayq::redis. Where
// Redis differs (docs/redis.md), the tests ask resolution() and bucket_survives_reopen().
//
// Redis: open_redis against one private redis-server per test binary (tests/support/
// redis_server.h, started by the first Redis test, killed when the binary exits), on the test's
// ManualClock through RedisOptions::clock (the scripts then read that clock, never the server's
// TIME). Each test has a queue of its own; reopen() opens the same queue, which keeps its jobs.
// RedisShards4 (the limits suites only: with_sharded_redis()): the same on a queue of four
// shards, whose limited topics are kept by the home shard (docs/redis.md, "Limits on several
// shards").
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "delayq/redis.h"
#include "flow_fixture.h"
#include "redis_server.h"

namespace delayq::flow {

class RedisBackend : public Backend {
 public:
  explicit RedisBackend(uint32_t shards = 1)
      : queue_("flow" + std::to_string(next_queue_.fetch_add(1))), shards_(shards) {}

  Result<std::unique_ptr<Queue>> open(ManualClock& clock, const Limits& l) override {
    testing::RedisServer& server = the_server();
    if (!server.started()) return Status(Errc::unavailable, "redis-server did not start: " + server.log());
    RedisOptions o;
    o.url = server.url();
    o.queue = queue_;
    o.limits = l;
    o.seed = 7;
    o.clock = &clock;
    o.shards = shards_;
    return open_redis(o);
  }
  bool keeps_jobs() const override { return true; }
  Duration resolution() const override { return std::chrono::microseconds(1); }
  // The bucket lives in the queue's keys, shared by every client (docs/redis.md, "Limits").
  bool bucket_survives_reopen() const override { return true; }
  bool keeps_topic_order() const override { return shards_ == 1; }
  bool remote() const override { return true; }

 private:
  static testing::RedisServer& the_server() {
    static testing::RedisServer server;  // thread-safe start; its destructor kills it at exit
    return server;
  }
  static inline std::atomic<int> next_queue_{0};
  std::string queue_;
  uint32_t shards_;
};

inline std::vector<BackendKind> with_redis(std::vector<BackendKind> kinds) {
  kinds.push_back({"Redis", [] { return std::make_unique<RedisBackend>(); }});
  return kinds;
}

// with_redis(), and Redis on four shards.
inline std::vector<BackendKind> with_sharded_redis(std::vector<BackendKind> kinds) {
  kinds = with_redis(std::move(kinds));
  kinds.push_back({"RedisShards4", [] { return std::make_unique<RedisBackend>(4); }});
  return kinds;
}

}  // namespace delayq::flow
