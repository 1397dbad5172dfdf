// The Redis backend through a Redis Cluster failover, on real processes: 3 masters with a
// replica each on loopback (tests/support/redis_cluster_group.h), a 6-shard queue with shards on
// every master. A client-side history records every answered push, delivery and ack while
// producers and consumers run and one master is killed with SIGKILL; the cluster promotes its
// replica, and the client follows (calls that could not reach the dead master wait for the
// promotion; MOVED and CLUSTER SLOTS say where the slots went). The history is then checked
// against what the queue holds: with replicas_to_ack = 1 no acknowledged push or ack is lost;
// with 0 the loss is reported. In both, no job is delivered before its due time. Nothing asserts
// how long anything took.
#include <gtest/gtest.h>

#include <set>

#include "delayq/redis.h"
#include "redis/keys.h"
#include "failover_load.h"
#include "redis_cluster_group.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using testing::ClusterGroup;
using testing::FailoverLoad;
using testing::FailoverOutcome;
using testing::SentinelGroup;

constexpr uint32_t kShards = 6;

// The master (0..2) that slot `slot` was given when the cluster was formed.
size_t master_of(int slot) {
  size_t m = 0;
  while (m + 1 < ClusterGroup::kMasters && slot >= ClusterGroup::first_slot(m + 1)) ++m;
  return m;
}

// A queue name whose shards sit on every master.
std::string spread_queue() {
  for (int k = 0;; ++k) {
    const std::string name = "cf" + std::to_string(k);
    const redis::KeyLayout keys(name, kShards);
    std::set<size_t> masters;
    for (uint32_t s = 0; s < kShards; ++s) masters.insert(master_of(keys.shard(s).slot));
    if (masters.size() == ClusterGroup::kMasters) return name;
  }
}

// One failover under load: 2 producers (ids of their own, due within 0..1.5 s), 2 consumers;
// master 0 killed once some pushes and acks were answered; after the promotion it is started
// again (it rejoins as a replica); load goes on, then the queue is drained and every
// acknowledged push is looked for.
FailoverOutcome run_cluster_failover(uint32_t replicas_to_ack) {
  FailoverOutcome out;
  ClusterGroup g;
  if (!g.ok()) {
    ADD_FAILURE() << "the cluster did not start:\n" << g.logs();
    return out;
  }
  RedisOptions opt;
  opt.url = g.url(1);  // a master that stays up
  opt.queue = spread_queue();
  opt.shards = kShards;
  opt.replicas_to_ack = replicas_to_ack;
  opt.replicas_timeout = 1s;
  // Longer than a failover (a second to notice, a few to elect): a call that cannot reach the
  // dead master waits for its replica's promotion.
  opt.call_timeout = 15s;
  opt.connect_timeout = 500ms;
  opt.reconnect_max = 200ms;
  auto opened = open_redis(opt);
  if (!opened) {
    ADD_FAILURE() << opened.status().to_string();
    return out;
  }
  std::unique_ptr<Queue> q = std::move(*opened);
  FailoverLoad load(*q, 300);
  EXPECT_TRUE(SentinelGroup::poll(20s, [&] {
    auto [p, a] = load.count();
    return p >= 150 && a >= 50;
  }));
  const int slot = ClusterGroup::first_slot(0);
  g.kill(0);
  // The cluster promotes master 0's replica: the nodes still up say it serves its slots.
  EXPECT_TRUE(SentinelGroup::poll(20s, [&] { return g.owner(1, slot) == g.port(3); }))
      << g.logs();
  // The old master comes back, as the promoted one's replica: with replicas_to_ack = 1 that
  // shard's writes wait for it (without a replica they are refused, "may or may not").
  EXPECT_TRUE(g.restart(0)) << g.logs();
  EXPECT_TRUE(SentinelGroup::poll(20s, [&] { return g.replicas(3) == 1; })) << g.logs();
  load.after_promotion(100, 15s);
  return load.finish("cluster, replicas_to_ack=" + std::to_string(replicas_to_ack));
}

TEST(RedisClusterFailover, ReplicasToAckOneLosesNothingAcknowledged) {
  testing::expect_nothing_lost(run_cluster_failover(1));
}

// Without WAIT, what the primary acknowledged but had not sent its replica when it died is gone:
// reported, not asserted.
TEST(RedisClusterFailover, ReplicasToAckZeroReportsItsLoss) {
  testing::expect_rode_through(run_cluster_failover(0));
}

}  // namespace
}  // namespace delayq
