// The load of delayqd's kill -9 tests (tests/daemon/delayqd_test.cc on the store, tests/
// delayqd_redis_test.cc on Redis), and what a restarted daemon must show after it. Header-only.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "http_client.h"

namespace delayq::testing {

// The load of the kill -9 tests: a producer pushing jobs (every tenth due in 1.5 s, the others
// within 20 ms) and a consumer popping and finishing them by token, each on its own keep-alive
// connection, until the daemon is killed. Each side records what it knows without asking the
// daemon: which pushes and finishes were answered, which finish was in flight (sent, its answer
// cut off by the kill), and when each job may be delivered at the earliest (when its push was
// sent, plus its delay): every delivery is checked against that, not against the due time the
// daemon reports.
class KillLoad {
 public:
  using SysClock = std::chrono::system_clock;

  explicit KillLoad(int port)
      : producer_([this, port] { produce(port); }), consumer_([this, port] { consume(port); }) {}
  ~KillLoad() { join(); }
  KillLoad(const KillLoad&) = delete;
  KillLoad& operator=(const KillLoad&) = delete;

  // Waits until at least this many pushes and finishes were answered, or two minutes passed.
  void wait_for(size_t pushes, size_t finishes) {
    for (int i = 0; i < 2400; ++i) {
      {
        std::lock_guard lock(mu_);
        if (pushed_.size() >= pushes && finished_.size() >= finishes) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  // Once the daemon is dead: the threads end (their next call fails).
  void join() {
    stop_ = true;
    if (producer_.joinable()) producer_.join();
    if (consumer_.joinable()) consumer_.join();
  }
  size_t pushed() const { return pushed_.size(); }
  size_t finished() const { return finished_.size(); }

  struct Verdict {
    std::vector<std::string> lost;       // answered pushes gone, not explained by the kill
    std::vector<std::string> came_back;  // answered finishes whose job is there again
    std::vector<std::string> early;      // delivered before its earliest instant
    std::string finish_in_flight;        // the one finish the daemon may have done unanswered
    size_t delivered_after = 0;          // jobs popped from the restarted daemon
  };
  // Asks a restarted daemon about every answered push, then pops what waits (checking that
  // none comes early). Call after join().
  Verdict verdict(HttpClient& c) {
    Verdict v;
    v.finish_in_flight = finish_in_flight_;
    size_t waiting = 0;
    for (const std::string& id : pushed_) {
      HttpAnswer get = c.post("/get", R"({"id":")" + id + R"("})");
      const bool gone = get.code() == 0 && get.data().is_null();
      if (finished_.count(id) != 0) {
        if (!gone) v.came_back.push_back(id);
      } else if (gone) {
        if (id != finish_in_flight_) v.lost.push_back(id);
      } else if (get.data_string("state") != "reserved") {
        ++waiting;  // a reserved one is the pop in flight at the kill: back after its ttr
      }
    }
    for (; v.delivered_after < waiting; ++v.delivered_after) {
      HttpAnswer pop = c.post("/pop", R"({"topic":"load","timeout":10})");
      if (pop.data_string("token").empty()) break;
      check_not_early(pop);
    }
    v.early = early_;
    return v;
  }
  // The verdict as one assertion: nothing answered lost, nothing finished back, nothing early.
  ::testing::AssertionResult holds(const Verdict& v) const {
    if (v.lost.empty() && v.came_back.empty() && v.early.empty())
      return ::testing::AssertionSuccess();
    auto failure = ::testing::AssertionFailure();
    if (!v.lost.empty())
      failure << v.lost.size() << " answered pushes lost, e.g. " << v.lost.front() << " (pushed "
              << pushed() << ", finished " << finished() << ", finish in flight: '"
              << v.finish_in_flight << "'). ";
    if (!v.came_back.empty()) failure << v.came_back.front() << " was finished but came back. ";
    if (!v.early.empty()) failure << v.early.size() << " delivered early, e.g. " << v.early.front();
    return failure;
  }

 private:
  void produce(int port) {
    HttpClient c(port);
    for (int n = 0; !stop_.load(); ++n) {
      const std::string id = "load-" + std::to_string(n);
      const int delay_ms = n % 10 == 0 ? 1500 : n % 20;  // some still delayed at the kill
      {
        std::lock_guard lock(mu_);
        not_before_[id] = SysClock::now() + std::chrono::milliseconds(delay_ms);
      }
      HttpAnswer r = c.post("/push", R"({"topic":"load","id":")" + id +
                                         R"(","ttr":3600,"delay_ms":)" +
                                         std::to_string(delay_ms) + "}");
      if (r.status == 0) return;  // the daemon is gone
      std::lock_guard lock(mu_);
      if (r.code() == 0) pushed_.insert(id);
    }
  }
  void consume(int port) {
    HttpClient c(port);
    while (!stop_.load()) {
      HttpAnswer pop = c.post("/pop", R"({"topic":"load","timeout":1})");
      if (pop.status == 0) return;
      const std::string token = pop.data_string("token");
      if (token.empty()) continue;
      check_not_early(pop);
      {
        std::lock_guard lock(mu_);
        finish_in_flight_ = pop.data_string("id");
      }
      HttpAnswer fin = c.post("/finish", R"({"token":")" + token + R"("})");
      if (fin.status == 0) return;  // finish_in_flight_ stays: the kill cut its answer off
      std::lock_guard lock(mu_);
      finish_in_flight_.clear();
      if (fin.code() == 0) finished_.insert(pop.data_string("id"));
    }
  }
  void check_not_early(const HttpAnswer& pop) {
    const SysClock::time_point at = SysClock::now();
    const std::string id = pop.data_string("id");
    std::lock_guard lock(mu_);
    auto it = not_before_.find(id);
    if (it == not_before_.end() || at < it->second) early_.push_back(id);
  }

  std::mutex mu_;
  std::set<std::string> pushed_, finished_;
  std::map<std::string, SysClock::time_point> not_before_;
  std::string finish_in_flight_;
  std::vector<std::string> early_;
  std::atomic<bool> stop_{false};
  std::thread producer_, consumer_;
};

}  // namespace delayq::testing
