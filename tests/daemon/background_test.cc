// /stats and /metrics off the server's threads (src/delayqd/background.h): the Background thread
// alone, then the Api answering /stats and /metrics from it while other routes go on.
#include "delayqd/background.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "api_harness.h"
#include "delayqd/api.h"
#include "forwarding_queue.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;

TEST(Background, RunsWorksInOrderOnItsOwnThreadRefusesBeyondItsBoundAndFinishesOnStop) {
  http::Background b(2);
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  std::promise<void> started;
  std::mutex mu;
  std::vector<int> ran;
  std::thread::id where;
  ASSERT_TRUE(b.post([&] {
    where = std::this_thread::get_id();
    started.set_value();
    go.wait();
    std::lock_guard lock(mu);
    ran.push_back(0);
  }));
  started.get_future().wait();  // the first runs: two may wait behind it
  for (int i = 1; i <= 2; ++i)
    EXPECT_TRUE(b.post([&, i] {
      std::lock_guard lock(mu);
      ran.push_back(i);
    }));
  EXPECT_FALSE(b.post([&] { ADD_FAILURE() << "a refused work ran"; })) << "over the bound";
  release.set_value();
  b.stop();  // runs what waits, then ends
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2}));
  EXPECT_NE(where, std::this_thread::get_id());
  EXPECT_FALSE(b.post([&] { ADD_FAILURE() << "ran after stop()"; }));
  b.stop();  // idempotent
}

// A queue whose stats() waits until the test lets it go, and says where it ran.
class SlowStatsQueue final : public testing::ForwardingQueue {
 public:
  Stats stats() override {
    {
      std::lock_guard lock(mu_);
      threads_.push_back(std::this_thread::get_id());
    }
    go_.wait();
    return ForwardingQueue::stats();
  }
  void release() { release_.set_value(); }
  std::vector<std::thread::id> threads() {
    std::lock_guard lock(mu_);
    return threads_;
  }

 private:
  std::promise<void> release_;
  std::shared_future<void> go_ = release_.get_future().share();
  std::mutex mu_;
  std::vector<std::thread::id> threads_;
};

// The answer a request got, once it has one.
struct Pending {
  std::promise<http::Response> p;
  std::future<http::Response> f = p.get_future();
  bool answered() { return f.wait_for(0s) == std::future_status::ready; }
};

TEST(ApiBackground, StatsAndMetricsAreAnsweredOffTheCallersThreadWithoutHoldingOtherRoutes) {
  SlowStatsQueue q;
  http::Api api(q, {});
  std::vector<std::unique_ptr<Pending>> waiting;
  const auto send = [&](const std::string& target, const std::string& method) {
    waiting.push_back(std::make_unique<Pending>());
    Pending* p = waiting.back().get();
    api.handle(http::Request{method, target, "", ""},
               [p](http::Response r) { p->p.set_value(std::move(r)); });
    return p;
  };
  Pending* first = send("/stats", "GET");  // returns at once: its stats() waits elsewhere
  EXPECT_FALSE(first->answered());
  EXPECT_EQ(api.in_flight(), 1u) << "in flight until answered (a drain waits for it)";
  // Another route is served meanwhile, on the caller's thread.
  testing::Answer pushed = testing::call(api, "/push", R"({"topic":"t","id":"a"})");
  EXPECT_EQ(pushed.code(), 0) << pushed.text;
  // Sixteen more may wait behind the running one (once it runs); the next is refused, 503.
  while (q.threads().empty()) std::this_thread::sleep_for(1ms);
  for (int i = 0; i < 16; ++i) send(i % 2 ? "/metrics" : "/stats", "GET");
  Pending* over = send("/metrics", "GET");
  ASSERT_TRUE(over->answered()) << "refused at once";
  http::Response refused = over->f.get();
  EXPECT_EQ(refused.status, 503);
  EXPECT_TRUE(testing::has(refused.body, "too many /stats and /metrics")) << refused.body;
  q.release();
  for (size_t i = 0; i + 1 < waiting.size(); ++i) {
    ASSERT_EQ(waiting[i]->f.wait_for(60s), std::future_status::ready) << i;
    EXPECT_EQ(waiting[i]->f.get().status, 200) << i;
  }
  const std::vector<std::thread::id> threads = q.threads();
  ASSERT_EQ(threads.size(), 17u);
  for (const std::thread::id& t : threads) {
    EXPECT_NE(t, std::this_thread::get_id());
    EXPECT_EQ(t, threads.front()) << "one thread for them all";
  }
  EXPECT_EQ(api.in_flight(), 0u) << "out of flight as each answer is handed over";
}

// A drain answers what waits for the background thread before it goes on.
TEST(ApiBackground, ADrainAnswersTheStatsAlreadyTaken) {
  SlowStatsQueue q;
  http::Api api(q, {});
  Pending taken;
  api.handle(http::Request{"GET", "/stats", "", ""},
             [&](http::Response r) { taken.p.set_value(std::move(r)); });
  std::thread drain([&] { api.begin_drain(); });
  q.release();
  drain.join();
  ASSERT_TRUE(taken.answered()) << "begin_drain() returned before the /stats was answered";
  EXPECT_EQ(taken.f.get().status, 200);
  EXPECT_EQ(api.in_flight(), 0u);
}

}  // namespace
}  // namespace delayq
