// Load and a client-side history for the failover tests (Sentinel and Cluster): two producers
// (ids of their own, due within 0..1.5 s) and two consumers on a queue, every answered push,
// delivery and ack recorded; finish() checks the history against what the queue holds then.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "delayq/queue.h"

namespace delayq::testing {

struct FailoverOutcome {
  size_t pushed = 0, acked = 0;  // acknowledged pushes and acks
  size_t lost = 0;               // acknowledged pushes neither delivered nor in the queue
  size_t undone = 0;             // acknowledged acks whose job was delivered again or is there
  size_t early = 0;              // deliveries before the due time
  uint64_t push_errors = 0, ack_errors = 0;
};

class FailoverLoad {
 public:
  // `backlog`: producers wait while more pushes than this are not acknowledged yet (0: never),
  // so that the drain stays short.
  FailoverLoad(Queue& q, size_t backlog) : q_(q), backlog_(backlog) {
    for (int p = 0; p < 2; ++p) threads_.emplace_back([this, p] { produce(p); });
    for (int c = 0; c < 2; ++c) threads_.emplace_back([this] { consume(); });
  }
  ~FailoverLoad() { join(); }
  FailoverLoad(const FailoverLoad&) = delete;
  FailoverLoad& operator=(const FailoverLoad&) = delete;

  // Acknowledged pushes and acks so far.
  std::pair<size_t, size_t> count() {
    std::lock_guard lock(mu_);
    return {pushed_.size(), acked_.size()};
  }
  void stop_producing() { producing_ = false; }
  // Every acknowledged push delivered and acknowledged.
  bool drained() {
    std::lock_guard lock(mu_);
    for (const auto& [id, due] : pushed_)
      if (!acked_.count(id)) return false;
    return true;
  }
  // After the promotion: waits until `more` pushes more are answered, stops the producers and
  // drains (every acknowledged push delivered and acknowledged; a job whose claim or ack failed
  // comes back after its ttr), each for up to `within`.
  void after_promotion(size_t more, std::chrono::milliseconds within) {
    const size_t before = count().first;
    EXPECT_TRUE(poll(within, [&] { return count().first >= before + more; }));
    stop_producing();
    poll(within, [&] { return drained(); });
  }
  // Stops the load and checks the history against the queue; prints a line with `label`.
  FailoverOutcome finish(const std::string& label) {
    join();
    FailoverOutcome out;
    std::lock_guard lock(mu_);
    out.pushed = pushed_.size();
    out.acked = acked_.size();
    out.early = early_.size();
    out.undone = again_.size();
    out.push_errors = push_errors_;
    out.ack_errors = ack_errors_;
    for (const auto& [id, due] : pushed_) {
      if (delivered_.count(id)) continue;
      if (auto info = q_.get(id); info) continue;  // still there, not delivered yet
      ++out.lost;
      if (out.lost <= 5) std::printf("  lost acknowledged push %s\n", id.c_str());
    }
    // An acknowledged ack removed its job for good: get() finds nothing after the failover.
    for (const std::string& id : acked_)
      if (!q_.get(id).status().is(Errc::not_found)) ++out.undone;
    for (const std::string& id : early_) std::printf("  %s delivered early\n", id.c_str());
    std::printf("%s: %zu pushes and %zu acks acknowledged (%llu pushes, %llu acks failed); %zu "
                "acknowledged pushes lost, %zu acknowledged acks undone, %zu early deliveries\n",
                label.c_str(), out.pushed, out.acked,
                static_cast<unsigned long long>(out.push_errors),
                static_cast<unsigned long long>(out.ack_errors), out.lost, out.undone, out.early);
    return out;
  }

 private:
  template <typename F>
  static bool poll(std::chrono::milliseconds within, F done) {
    const auto until = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < until) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return done();
  }
  static TimePoint wall() { return SystemClock::instance().now(); }

  void produce(int p) {
    std::mt19937 rng(static_cast<unsigned>(p + 1));
    for (int n = 0; producing_.load(); ++n) {
      while (backlog_ != 0 && producing_.load() && [&] {
        std::lock_guard lock(mu_);
        return pushed_.size() > acked_.size() + backlog_;
      }())
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const std::string id = "p" + std::to_string(p) + "-" + std::to_string(n);
      const Duration delay = std::chrono::milliseconds(rng() % 1500);
      const TimePoint due = wall() + delay;
      auto r = q_.push({.topic = "t", .id = id, .delay = delay, .ttr = std::chrono::seconds(2),
                        .body = id});
      std::lock_guard lock(mu_);
      if (r) pushed_.emplace(id, due);
      else ++push_errors_;
    }
  }

  void consume() {
    const std::string topics[] = {"t"};
    while (consuming_.load()) {
      auto d = q_.reserve(topics, std::chrono::milliseconds(200));
      if (!d) continue;
      const TimePoint got = wall();
      {
        std::lock_guard lock(mu_);
        ++delivered_[d->id];
        auto p = pushed_.find(d->id);
        if (p != pushed_.end() && got < p->second) early_.push_back(d->id);
        if (acked_.count(d->id)) again_.push_back(d->id);
      }
      const Status acked = q_.ack(d->token);
      std::lock_guard lock(mu_);
      if (acked.ok()) acked_.insert(d->id);
      else ++ack_errors_;
    }
  }

  void join() {
    producing_ = consuming_ = false;
    for (std::thread& t : threads_)
      if (t.joinable()) t.join();
  }

  Queue& q_;
  const size_t backlog_;
  std::atomic<bool> producing_{true}, consuming_{true};
  std::mutex mu_;
  std::map<std::string, TimePoint> pushed_;  // acknowledged pushes: id -> earliest due time
  std::map<std::string, int> delivered_;
  std::set<std::string> acked_;
  std::vector<std::string> early_, again_;
  uint64_t push_errors_ = 0, ack_errors_ = 0;
  std::vector<std::thread> threads_;
};

// replicas_to_ack >= 1: nothing acknowledged lost, nothing early.
inline void expect_nothing_lost(const FailoverOutcome& o) {
  EXPECT_GT(o.pushed, 0u);
  EXPECT_EQ(o.lost, 0u) << "acknowledged pushes lost";
  EXPECT_EQ(o.undone, 0u) << "acknowledged acks undone";
  EXPECT_EQ(o.early, 0u);
}

// replicas_to_ack = 0: the loss is reported, not asserted (it depends on the replicas' lag when
// the primary died); nothing early, and every push answered with success: those that could not
// go out waited for the promotion, and those in flight when the primary died were sent again
// (their ids are theirs).
inline void expect_rode_through(const FailoverOutcome& o) {
  EXPECT_GT(o.pushed, 0u);
  EXPECT_EQ(o.early, 0u);
  EXPECT_EQ(o.push_errors, 0u);
}

}  // namespace delayq::testing
