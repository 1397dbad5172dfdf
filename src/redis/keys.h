// Every key of a queue in Redis, named in one place, and the cluster hash slot of a key.
//
// A queue Q with N shards is N groups of keys; shard s uses the hash tag {dq:Q:s}, so that all
// its keys sit in one cluster slot and one script may touch all of them:
//   {dq:Q:s}:jobs, :body, :seq, :fence, :topics, :stats,  the shard's ten (KEYS[1..10])
//   :paused (the set of paused topics, Queue::pause),
//   :emptied (the topics that emptied, by when: whose lateness counters to forget first),
//   :limits (topic -> its limits, Queue::set_topic_limits), :flow (their buckets and counts)
//   {dq:Q:s}:d:<topic>, :r:<topic>, :l:<topic>, :x:<topic> a topic's delayed, ready, leases, dead
//   {dq:Q:s}:q:<topic>                                    its ready jobs of non-default priorities
//   {dq:Q:s}:wake                                         the shard's wake channel (pub/sub)
//   {dq:Q:0}:p:<topic>    with several shards, a limited topic's places (lua/admit.lua)
//   {dq:Q:0}:meta                                         the queue's shard count and openings
//   {dq:Q:0}:sched, :sched:due, :sched:recent:<id>        schedules (lua/sched.lua)
// docs/redis.md ("Key layout") says what each holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace delayq::redis {

// The hash slot of a key, as Redis Cluster computes it: CRC16 (XMODEM) of the key's hash tag
// (the bytes between the first '{' and the next '}', when not empty) or of the whole key,
// modulo 16384.
uint16_t key_slot(std::string_view key);

// The keys of one shard.
struct ShardKeys {
  std::string tag;                // "{dq:<queue>:<n>}": the hash tag of every key of the shard
  std::string wake;               // the wake channel
  std::string topics;             // the hash of the shard's topics (topic -> live jobs)
  std::string paused;             // the set of paused topics (Queue::pause)
  std::string limits;             // the hash of the topics' limits (Queue::set_topic_limits)
  // jobs, body, seq, fence, topics, stats, paused, emptied, limits, flow
  std::vector<std::string> base;
  uint16_t slot = 0;              // the hash slot of `tag`: in a cluster, its node holds the shard

  // Appends the five keys of `topic`: delayed, ready, leases, dead, q (ready at a priority other
  // than the default).
  void add_topic(std::string_view topic, std::vector<std::string>& keys) const;
  // The keys of a script about one topic: the shard's ten, then the topic's five.
  std::vector<std::string> with_topic(std::string_view topic) const;
  // A limited topic's places, kept by the home shard (shard 0) of a queue of several shards.
  std::string places(std::string_view topic) const { return tag + ":p:" + std::string(topic); }
};

// The keys of a queue: its shards, and which shard holds a job.
class KeyLayout {
 public:
  // `queue` as RedisOptions::queue (checked by open_redis()), `shards` at least 1.
  KeyLayout(std::string_view queue, uint32_t shards);

  size_t size() const { return shards_.size(); }
  const ShardKeys& shard(size_t i) const { return shards_[i]; }
  const std::vector<ShardKeys>& shards() const { return shards_; }
  // The shard of a job: FNV-1a (32 bits) of its id's bytes, modulo the shard count. Stable
  // across processes, platforms and versions, which std::hash is not.
  size_t shard_of(std::string_view id) const;
  // The queue's meta hash, in shard 0's slot: `shards`, fixed by the first opening, and
  // `clients`, counting the openings.
  const std::string& meta() const { return meta_; }

 private:
  std::vector<ShardKeys> shards_;
  std::string meta_;
};

}  // namespace delayq::redis
