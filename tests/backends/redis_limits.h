// What the Redis topic-limits suites (redis_limits_test.cc, redis_limits_places_test.cc) share: a
// queue of one shard on a private redis-server, on a ManualClock through RedisOptions::clock
// (the claim script then reads that clock, never the server's TIME), limits as values, a
// topic's TopicFlow and a consumer blocked in reserve(). The waiters' sweep is a minute, so
// that a blocked reserve() returns within a test only when the server wakes it (a token's
// instant in the claim's reply, a published wake-up) or the manual clock moves.
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <thread>

#include "delayq/redis.h"
#include "redis_server.h"

namespace delayq::redis_limits {

using namespace std::chrono_literals;

inline TopicLimits rate(uint32_t count, Duration per, uint32_t burst) {
  return TopicLimits{.rate = TopicLimits::Rate{.count = count, .per = per, .burst = burst}};
}

class RedisLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.started()) << server_.log();
    q_ = open();
    ASSERT_TRUE(q_);
  }
  void TearDown() override {
    if (q_) q_->close();
  }

  // The test's queue (named after the test) on clock_ (`manual`) or on the server's clock, or
  // nullptr (and a failure).
  std::unique_ptr<Queue> open(uint32_t claim_batch = 1, uint32_t shards = 1,
                              std::string queue = {}, bool manual = true) {
    RedisOptions o;
    o.url = server_.url();
    o.queue = queue.empty() ? ::testing::UnitTest::GetInstance()->current_test_info()->name()
                            : queue;
    o.limits = Limits{.max_delay = 24h * 400, .max_body_bytes = 4096, .default_ttr = 30s};
    o.seed = 7;
    if (manual) o.clock = &clock_;
    o.sweep = 60s;
    o.claim_batch = claim_batch;
    o.shards = shards;
    auto q = open_redis(o);
    EXPECT_TRUE(q.ok()) << q.status().to_string();
    return q.ok() ? std::move(q).value() : nullptr;
  }
  // Closes the queue and opens it again: the same keys on the same server.
  void reopen() {
    q_->close();
    q_ = open();
    ASSERT_TRUE(q_);
  }

  Queue& q() { return *q_; }
  TimePoint now() const { return clock_.now(); }
  void advance(Duration d) { clock_.advance(d); }

  void push(JobSpec spec) {
    auto r = q_->push(std::move(spec));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
  }
  // The id of the job a non-blocking reserve hands out now, or "" when none (any error).
  std::string take(const std::vector<std::string>& topics) {
    auto d = q_->reserve(topics, 0ms);
    return d.ok() ? d->id : std::string();
  }
  std::string take(const std::string& topic) { return take(std::vector<std::string>{topic}); }

  void set_limits(const std::string& topic, const TopicLimits& l) {
    const Status s = q_->set_topic_limits(topic, l);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  // stats().flow of `topic` (a default TopicFlow, and a failure, when it is not listed).
  TopicFlow flow_of(const std::string& topic) {
    const Stats st = q_->stats();
    auto it = st.flow.find(topic);
    EXPECT_NE(it, st.flow.end()) << "topic " << topic << " has no limits in stats()";
    return it == st.flow.end() ? TopicFlow{} : it->second;
  }
  // A command to the server, its reply as RedisServer::command() writes it.
  std::string command(const std::string& c) { return server_.command(c); }

  testing::RedisServer server_;
  ManualClock clock_{TimePoint(1767225600s) + 20min + 30s};
  std::unique_ptr<Queue> q_;
};

// A consumer in reserve(topic, 10 s) on a thread of its own, from construction.
class Blocked {
 public:
  Blocked(Queue& q, std::string topic)
      : thread_([this, &q, topic] { got_.set_value(q.reserve(topic, 10s)); }) {}
  ~Blocked() { thread_.join(); }
  // Whether reserve() has returned within `d` of real time.
  bool returned_within(Duration d) { return future_.wait_for(d) == std::future_status::ready; }
  // What it was handed: the job's id, or "error: ..." (waits for it to return).
  std::string id() {
    Result<Delivery> d = future_.get();
    if (!d.ok()) return "error: " + d.status().to_string();
    delivery_ = *d;
    return d->id;
  }
  const Delivery& delivery() const { return delivery_; }

 private:
  std::promise<Result<Delivery>> got_;
  std::future<Result<Delivery>> future_ = got_.get_future();
  std::thread thread_;
  Delivery delivery_;
};

}  // namespace delayq::redis_limits
