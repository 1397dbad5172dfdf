// A scripted stretch of business time for the examples: a queue on a ManualClock, events that
// happen at given moments (a shop adds a product, a customer pays), and a worker that handles
// every job the moment it becomes due. Days of business run in milliseconds, and the output is
// the same on every run, so each example's test can check what it prints.
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "delayq/engine.h"

namespace example {

using namespace std::chrono_literals;
using delayq::Duration;
using days = std::chrono::days;

class Timeline {
 public:
  // Opens an in-memory queue on the timeline's own clock.
  Timeline() {
    delayq::EngineOptions o;
    o.clock = &clock_;
    auto q = delayq::Engine::open(o);
    if (!q) fail("cannot open the queue: " + q.status().to_string());
    queue_ = std::move(q).value();
    start_ = clock_.now();
  }

  delayq::Engine& queue() { return *queue_; }
  delayq::TimePoint start() const { return start_; }
  delayq::TimePoint now() { return clock_.now(); }

  // Something that happens at `offset` from the start.
  void at(Duration offset, std::function<void()> event) {
    events_.emplace(offset, std::move(event));
  }

  // Runs until `end` (from the start) in steps of `step`: at each step first the events due,
  // then every job of `topics` that is ready, handed to `handle`, whose answer acks, retries or
  // dead-letters it.
  void run(Duration end, Duration step, const std::vector<std::string>& topics,
           const std::function<delayq::HandlerResult(const delayq::Delivery&)>& handle) {
    for (Duration t = clock_.now() - start_; t <= end; t += step) {
      clock_.set(start_ + t);
      for (auto it = events_.begin(); it != events_.end() && it->first <= t;) {
        auto event = std::move(it->second);
        it = events_.erase(it);
        event();
      }
      for (auto d = queue_->reserve(topics, 0ms); d; d = queue_->reserve(topics, 0ms)) {
        const delayq::HandlerResult r = handle(*d);
        delayq::Status s;
        switch (r.action) {
          case delayq::HandlerResult::Action::ack: s = queue_->ack(d->token); break;
          case delayq::HandlerResult::Action::retry: s = queue_->nack(d->token, r.delay); break;
          case delayq::HandlerResult::Action::dead_letter: s = queue_->dead_letter(d->token); break;
        }
        check(s, "settling " + d->id);
      }
    }
  }

  // "day 3 09:30": business time since the start (day 1 is the first day).
  std::string stamp() { return stamp_of(clock_.now() - start_); }
  static std::string stamp_of(Duration since) {
    const auto m = std::chrono::duration_cast<std::chrono::minutes>(since).count();
    char buf[32];
    std::snprintf(buf, sizeof buf, "day %lld %02lld:%02lld", static_cast<long long>(m / 1440 + 1),
                  static_cast<long long>(m % 1440 / 60), static_cast<long long>(m % 60));
    return buf;
  }

  // Stops the example with a message unless s is ok.
  static void check(const delayq::Status& s, const std::string& what) {
    if (!s.ok()) fail(what + ": " + s.to_string());
  }
  [[noreturn]] static void fail(const std::string& why) {
    std::fprintf(stderr, "example failed: %s\n", why.c_str());
    std::exit(1);
  }

 private:
  delayq::ManualClock clock_;
  std::unique_ptr<delayq::Engine> queue_;
  delayq::TimePoint start_;
  std::multimap<Duration, std::function<void()>> events_;
};

}  // namespace example
