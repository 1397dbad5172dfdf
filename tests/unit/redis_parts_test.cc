// The Redis backend's parts that need no server: the key layout (src/redis/keys.h) and the
// claim-ahead cache (src/redis/claim_ahead.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "delayq/clock.h"
#include "redis/claim_ahead.h"
#include "redis/keys.h"

namespace delayq::redis {
namespace {

using namespace std::chrono_literals;

TEST(RedisKeys, EveryKeyOfAShardSharesItsHashTag) {
  const KeyLayout keys("shop", 4);
  ASSERT_EQ(keys.size(), 4u);
  const ShardKeys& sh = keys.shard(2);
  EXPECT_EQ(sh.tag, "{dq:shop:2}");
  EXPECT_EQ(sh.wake, "{dq:shop:2}:wake");
  EXPECT_EQ(sh.base,
            (std::vector<std::string>{"{dq:shop:2}:jobs", "{dq:shop:2}:body", "{dq:shop:2}:seq",
                                      "{dq:shop:2}:fence", "{dq:shop:2}:topics",
                                      "{dq:shop:2}:stats", "{dq:shop:2}:paused",
                                      "{dq:shop:2}:emptied", "{dq:shop:2}:limits",
                                      "{dq:shop:2}:flow"}));
  EXPECT_EQ(sh.topics, sh.base[4]);
  EXPECT_EQ(sh.paused, sh.base[6]);
  EXPECT_EQ(sh.limits, sh.base[8]);
  const std::vector<std::string> k = sh.with_topic("t");
  ASSERT_EQ(k.size(), 15u);
  EXPECT_EQ(std::vector<std::string>(k.begin() + 10, k.end()),
            (std::vector<std::string>{"{dq:shop:2}:d:t", "{dq:shop:2}:r:t", "{dq:shop:2}:l:t",
                                      "{dq:shop:2}:x:t", "{dq:shop:2}:q:t"}));
  for (const std::string& key : k) EXPECT_EQ(key_slot(key), sh.slot) << key;
  EXPECT_EQ(keys.meta(), "{dq:shop:0}:meta");
  EXPECT_EQ(key_slot(keys.meta()), keys.shard(0).slot);
}

// docs/redis.md: FNV-1a (32 bits) of the id, modulo the shard count, the same in every client.
TEST(RedisKeys, AJobsShardIsFnv1aOfItsIdModuloTheShards) {
  EXPECT_EQ(KeyLayout("q", 1).shard_of("anything"), 0u);
  const KeyLayout keys("q", 7);
  EXPECT_EQ(keys.shard_of(""), 2166136261u % 7);   // the offset basis
  EXPECT_EQ(keys.shard_of("a"), 0xe40c292cu % 7);  // FNV-1a 32 of "a"
  EXPECT_EQ(keys.shard_of("foobar"), 0xbf9cf968u % 7);
}

Delivery job(std::string id, TimePoint lease_deadline) {
  Delivery d;
  d.id = id;
  d.topic = "t";
  d.token = Token{std::move(id), 1};
  d.lease_deadline = lease_deadline;
  return d;
}

TEST(RedisClaimAhead, OnlyASingleTopicIsClaimedInBatchesAndRefilledByAcks) {
  ClaimAhead none(1);
  const std::vector<std::string> t{"t"}, two{"t", "u"};
  EXPECT_EQ(none.claim_size(t), 1u);
  EXPECT_EQ(none.refill_wanted("t"), 0u);
  ClaimAhead ahead(8);
  EXPECT_EQ(ahead.refill_wanted("t"), 0u);  // not reserved on its own yet
  EXPECT_EQ(ahead.claim_size(two), 1u);
  EXPECT_EQ(ahead.refill_wanted("t"), 0u);
  EXPECT_EQ(ahead.claim_size(t), 8u);
  EXPECT_EQ(ahead.refill_wanted("t"), 8u);
  EXPECT_EQ(ahead.refill_wanted(""), 0u);  // an ack of a job whose topic is not known
  EXPECT_TRUE(ahead.keep({job("a", SystemClock::instance().now() + 1h)}).empty());
  EXPECT_EQ(ahead.refill_wanted("t"), 0u);  // it keeps one
}

TEST(RedisClaimAhead, AJobWithLessThanHalfItsLeaseLeftIsGivenBackNotHandedOut) {
  ClaimAhead ahead(8);
  const std::vector<std::string> t{"t"};
  const TimePoint now = SystemClock::instance().now();
  EXPECT_TRUE(
      ahead.keep({job("late", now - 1s), job("fine", now + 1h), job("next", now + 1h)}).empty());
  std::vector<Delivery> back;
  std::optional<Delivery> d = ahead.take(t, &back);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->id, "fine");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].id, "late");
  EXPECT_FALSE(ahead.take(std::vector<std::string>{"t", "u"}, &back).has_value());
  // close() returns what is kept; what arrives after it goes straight back.
  const std::vector<Delivery> left = ahead.close();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].id, "next");
  EXPECT_EQ(ahead.keep({job("in-flight", now + 1h)}).size(), 1u);
  EXPECT_FALSE(ahead.take(t, &back).has_value());
  EXPECT_EQ(ahead.refill_wanted("t"), 0u);
}

}  // namespace
}  // namespace delayq::redis
