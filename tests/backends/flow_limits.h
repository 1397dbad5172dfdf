// What the topic-limits suites (flow_limits_test.cc, flow_limits_places_test.cc) share beside
// the Flow fixture: limits as values, a topic's TopicFlow, and a consumer blocked in reserve().
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>

#include "flow_fixture.h"

namespace delayq::flow {

inline TopicLimits rate(uint32_t count, Duration per, uint32_t burst) {
  return TopicLimits{.rate = TopicLimits::Rate{.count = count, .per = per, .burst = burst}};
}

// Sets a topic's limits, which must be accepted.
inline void set_limits_of(Queue& q, const std::string& topic, const TopicLimits& l) {
  const Status s = q.set_topic_limits(topic, l);
  ASSERT_TRUE(s.ok()) << s.to_string();
}

// stats().flow of `topic` (a default TopicFlow, and a failure, when it is not listed).
inline TopicFlow flow_of(Queue& q, const std::string& topic) {
  const Stats st = q.stats();
  auto it = st.flow.find(topic);
  EXPECT_NE(it, st.flow.end()) << "topic " << topic << " has no limits in stats()";
  return it == st.flow.end() ? TopicFlow{} : it->second;
}

// A consumer in reserve(topic, 10 s) on a thread of its own, from construction.
class Blocked {
 public:
  Blocked(Queue& q, std::string topic)
      : thread_([this, &q, topic] { got_.set_value(q.reserve(topic, std::chrono::seconds(10))); }) {
  }
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

}  // namespace delayq::flow
