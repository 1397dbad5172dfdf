// When the queue behind delayqd fails: /health tells the truth (503 with the reason once the
// store stopped on a failed write, the queue closed or the Redis server went away), and a route
// whose queue call throws is answered 500/503 while the daemon keeps serving.
#include <gtest/gtest.h>

#include <atomic>
#include <new>
#include <set>
#include <stdexcept>
#include <string>

#include "api_harness.h"
#include "delayq/redis.h"
#include "engine/store_seam.h"
#include "forwarding_queue.h"
#include "redis_server.h"

namespace delayq::testing {
namespace {

using namespace std::chrono_literals;

// A store whose writes fail on command (as tests/backends/engine_store_failure_test.cc): the real Engine
// on top of it stops serving after the first failed write (fail-stop).
struct FailingStore final : engine::Persistence {
  std::shared_ptr<std::atomic<bool>> broken = std::make_shared<std::atomic<bool>>(false);
  Result<uint64_t> write(const std::vector<engine::Change>&, const Stats&) override {
    if (broken->load()) return Status(Errc::io_error, "disk full (simulated)");
    return uint64_t{1};
  }
  Status wait_durable(uint64_t) override { return Status(); }
};

TEST(QueueHealth, TheEngineReportsTheFailureItStoppedOnAndClosing) {
  auto store = std::make_unique<FailingStore>();
  auto broken = store->broken;
  auto q = engine::open_engine({}, std::move(store), {}, Stats{}).value();
  EXPECT_TRUE(q->health().ok());
  ASSERT_TRUE(q->push({.topic = "t"}).ok());
  EXPECT_TRUE(q->health().ok());
  broken->store(true);
  EXPECT_TRUE(q->push({.topic = "t"}).is(Errc::io_error));
  const Status h = q->health();
  EXPECT_TRUE(h.is(Errc::io_error)) << h.to_string();
  EXPECT_TRUE(has(h.message(), "disk full (simulated)")) << h.to_string();

  auto plain = Engine::open({}).value();
  EXPECT_TRUE(plain->health().ok());
  plain->close();
  EXPECT_TRUE(plain->health().is(Errc::closed)) << plain->health().to_string();
}

// The reported bug: after the engine stopped on a failed write, /health said ok while every
// other call answered 500.
TEST(QueueHealth, HealthAnswers503WithTheReasonOnceTheStoreFailed) {
  auto store = std::make_unique<FailingStore>();
  auto broken = store->broken;
  auto q = engine::open_engine({}, std::move(store), {}, Stats{}).value();
  http::Api api(*q, {});
  Answer ok = call(api, "/health", "", "GET");
  EXPECT_EQ(ok.status, 200) << ok.text;
  EXPECT_EQ(ok.data().find("status")->as_string(), "ok");

  broken->store(true);
  EXPECT_EQ(call(api, "/push", R"({"topic":"t"})").status, 500);
  Answer sick = call(api, "/health", "", "GET");
  EXPECT_EQ(sick.status, 503) << sick.text;
  EXPECT_EQ(sick.code(), 1);
  EXPECT_EQ(sick.error(), "io_error") << sick.text;
  EXPECT_TRUE(has(sick.message(), "disk full (simulated)")) << sick.text;
  ASSERT_TRUE(sick.data().is_object()) << sick.text;
  EXPECT_EQ(sick.data().find("status")->as_string(), "io_error");
  EXPECT_EQ(sick.data().find("backend")->as_string(), "store");
  EXPECT_TRUE(has(sick.data().find("reason")->as_string(), "disk full")) << sick.text;

  q->close();
  EXPECT_EQ(call(api, "/health", "", "GET").status, 503);
}

TEST(QueueHealth, RedisHealthFollowsTheServer) {
  RedisServer server;
  ASSERT_TRUE(server.started()) << server.log();
  auto q = open_redis({.url = server.url(), .connect_timeout = 1s, .call_timeout = 2s}).value();
  http::ApiOptions api_opt;
  api_opt.backend = "redis";
  http::Api api(*q, api_opt);
  EXPECT_TRUE(q->health().ok()) << q->health().to_string();
  EXPECT_EQ(call(api, "/health", "", "GET").status, 200);

  server.kill_now();
  const Status down = q->health();
  EXPECT_TRUE(down.is(Errc::unavailable)) << down.to_string();
  Answer sick = call(api, "/health", "", "GET");
  EXPECT_EQ(sick.status, 503) << sick.text;
  EXPECT_EQ(sick.error(), "unavailable") << sick.text;
  EXPECT_EQ(sick.data().find("backend")->as_string(), "redis");

  ASSERT_TRUE(server.start()) << server.log();
  // The queue reconnects with backoff: give it a generous while.
  bool back = false;
  for (int i = 0; i < 300 && !back; ++i) {
    back = q->health().ok();
    if (!back) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(back) << q->health().to_string();
  q->close();
  EXPECT_TRUE(q->health().is(Errc::closed));
}

// An Engine whose calls throw on command: what a bug, or memory running out, looks like to the Api.
class ThrowingQueue final : public ForwardingQueue {
 public:
  enum class Throw { nothing, runtime_error, bad_alloc };
  std::atomic<Throw> mode{Throw::nothing};

 private:
  void before(std::string_view call) override {
    static const std::set<std::string_view> kThrowing = {"push", "push_batch", "reserve_async",
                                                         "get", "stats"};
    if (!kThrowing.contains(call)) return;
    if (mode == Throw::runtime_error) throw std::runtime_error("simulated bug");
    if (mode == Throw::bad_alloc) throw std::bad_alloc();
  }
};

TEST(HandlerExceptions, AreAnsweredAndTheApiKeepsServing) {
  ThrowingQueue q;
  http::ApiOptions opt;
  opt.default_pop_timeout = 0s;
  http::Api api(q, opt);
  q.mode = ThrowingQueue::Throw::runtime_error;
  for (const auto& [route, body] :
       std::vector<std::pair<std::string, std::string>>{{"/push", R"({"topic":"t"})"},
                                                        {"/push", R"([{"topic":"t"}])"},
                                                        {"/get", R"({"id":"j"})"},
                                                        {"/pop", R"({"topic":"t"})"}}) {
    Answer a = call(api, route, body);
    EXPECT_EQ(a.status, 500) << route << " " << a.text;
    EXPECT_EQ(a.error(), "internal_error") << a.text;
    EXPECT_TRUE(has(a.message(), "simulated bug")) << a.text;
    EXPECT_TRUE(has(a.message(), "may or may not have taken effect")) << a.text;
  }
  EXPECT_EQ(call(api, "/stats", "", "GET").status, 500);
  q.mode = ThrowingQueue::Throw::bad_alloc;
  Answer oom = call(api, "/push", R"({"topic":"t"})");
  EXPECT_EQ(oom.status, 503) << oom.text;
  EXPECT_EQ(oom.error(), "overloaded") << oom.text;
  EXPECT_TRUE(has(oom.message(), "out of memory")) << oom.text;
  EXPECT_EQ(api.in_flight(), 0u);
  EXPECT_EQ(api.waiting_pops(), 0u) << "a pop that threw is no longer counted as waiting";

  q.mode = ThrowingQueue::Throw::nothing;
  EXPECT_EQ(call(api, "/push", R"({"topic":"t","id":"j"})").code(), 0);
  Answer pop = call(api, "/pop", R"({"topic":"t"})");
  ASSERT_TRUE(pop.data().is_object()) << pop.text;
  EXPECT_EQ(pop.data().find("id")->as_string(), "j");
  auto metrics = call(api, "/metrics", "", "GET");
  EXPECT_TRUE(has(metrics.text, "delayqd_http_requests_total{route=\"push\",status=\"500\"} 2\n"))
      << metrics.text;
}

}  // namespace
}  // namespace delayq::testing
