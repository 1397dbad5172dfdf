// A Queue that forwards every call to an in-memory Engine, for tests that watch or disturb the
// calls a caller (the daemon's Api) makes: a test derives from it and overrides what it watches,
// calling ForwardingQueue's version to forward. before(call) runs first in every call.
#pragma once

#include <memory>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "delayq/engine.h"
#include "delayq/queue.h"

namespace delayq::testing {

class ForwardingQueue : public Queue {
 public:
  Result<std::string> push(JobSpec spec) override {
    before("push");
    return inner_->push(std::move(spec));
  }
  std::vector<Result<std::string>> push_batch(std::vector<JobSpec> specs) override {
    before("push_batch");
    return inner_->push_batch(std::move(specs));
  }
  Result<Delivery> reserve(std::span<const std::string> topics, Duration timeout) override {
    before("reserve");
    return inner_->reserve(topics, timeout);
  }
  using Queue::reserve;
  void reserve_async(std::vector<std::string> topics, Duration timeout,
                     std::function<void(Result<Delivery>)> done, std::stop_token stop) override {
    before("reserve_async");
    inner_->reserve_async(std::move(topics), timeout, std::move(done), std::move(stop));
  }
  using Queue::reserve_async;
  Status ack(const Token& t) override {
    before("ack");
    return inner_->ack(t);
  }
  Status nack(const Token& t, std::optional<Duration> d) override {
    before("nack");
    return inner_->nack(t, d);
  }
  Status dead_letter(const Token& t) override {
    before("dead_letter");
    return inner_->dead_letter(t);
  }
  Status release(const Token& t) override {
    before("release");
    return inner_->release(t);
  }
  Result<TimePoint> touch(const Token& t) override {
    before("touch");
    return inner_->touch(t);
  }
  Status cancel(std::string_view id) override {
    before("cancel");
    return inner_->cancel(id);
  }
  Result<JobInfo> get(std::string_view id) override {
    before("get");
    return inner_->get(id);
  }
  Status reschedule(std::string_view id, TimePoint when) override {
    before("reschedule");
    return inner_->reschedule(id, when);
  }
  Result<std::vector<JobInfo>> list_dead(std::string_view topic, size_t limit) override {
    before("list_dead");
    return inner_->list_dead(topic, limit);
  }
  Status pause(std::string_view topic) override {
    before("pause");
    return inner_->pause(topic);
  }
  Status resume(std::string_view topic) override {
    before("resume");
    return inner_->resume(topic);
  }
  Status requeue_dead(std::string_view id) override {
    before("requeue_dead");
    return inner_->requeue_dead(id);
  }
  Status set_topic_limits(std::string_view topic, const TopicLimits& l) override {
    before("set_topic_limits");
    return inner_->set_topic_limits(topic, l);
  }
  Status clear_topic_limits(std::string_view topic) override {
    before("clear_topic_limits");
    return inner_->clear_topic_limits(topic);
  }
  Result<JobPage> list_jobs(std::string_view topic, JobState state, size_t limit,
                            std::string_view cursor) override {
    before("list_jobs");
    return inner_->list_jobs(topic, state, limit, cursor);
  }
  Result<uint64_t> requeue_dead_topic(std::string_view t) override {
    before("requeue_dead_topic");
    return inner_->requeue_dead_topic(t);
  }
  Result<uint64_t> purge_dead(std::string_view t) override {
    before("purge_dead");
    return inner_->purge_dead(t);
  }
  Stats stats() override {
    before("stats");
    return inner_->stats();
  }
  Status health() override {
    before("health");
    return inner_->health();
  }
  void close() override { inner_->close(); }

 protected:
  virtual void before(std::string_view call) { (void)call; }

 private:
  std::unique_ptr<Engine> inner_ = Engine::open({}).value();
};

}  // namespace delayq::testing
