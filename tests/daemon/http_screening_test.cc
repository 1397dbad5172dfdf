// A request is screened once (issue 20): its route, its method and its bearer token are decided a
// single time, when its headers arrive, and that decision travels with the request to the Api and
// to the metrics. The server runs in this process (run_server on a loopback port), so that the
// Api's count of screenings (Api::screenings) can be read after each answer.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "api_harness.h"
#include "delayq/engine.h"
#include "delayqd/api.h"
#include "delayqd/server.h"
#include "http_client.h"

namespace delayq::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kToken = "screen-token";

// delayqd's server and Api over an in-memory engine, in this process. Stopped as delayqd is:
// SIGTERM, which run_server catches (it drains and returns).
class ScreeningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    queue_ = Engine::open({}).value();
    http::ApiOptions options;
    options.bearer_token = kToken;
    options.default_pop_timeout = 0s;
    api_ = std::make_unique<http::Api>(*queue_, options);
    http::ServerOptions server;
    server.port = 0;
    server.threads = 2;
    auto at = listening_.get_future();
    server_ = std::thread([this, server] {
      std::string error;
      const bool ran = http::run_server(
          *api_, *queue_, server, [this](const std::string& a) { listening_.set_value(a); }, error);
      if (!ran) listening_.set_value("");
    });
    ASSERT_EQ(at.wait_for(60s), std::future_status::ready);
    const std::string address = at.get();
    ASSERT_FALSE(address.empty()) << "the server did not listen";
    port_ = std::stoi(address.substr(address.rfind(':') + 1));
  }

  // SIGTERM only once the server listens: before, nothing in this process would catch it (a
  // server that could not listen has returned by itself).
  void TearDown() override {
    if (port_ > 0) ::kill(::getpid(), SIGTERM);
    if (server_.joinable()) server_.join();
  }

  std::unique_ptr<Engine> queue_;
  std::unique_ptr<http::Api> api_;
  std::promise<std::string> listening_;  // the bound "host:port", or "" if it could not listen
  std::thread server_;
  int port_ = 0;
};

// The case the screening was repeated for: a body to read. Its headers were screened before the
// body was read, and again when the request reached the Api.
TEST_F(ScreeningTest, APushWithABodyIsScreenedOnce) {
  HttpClient client(port_, kToken);
  HttpAnswer pushed = client.post("/push", R"({"topic":"t","id":"a"})");
  EXPECT_EQ(pushed.status, 200) << pushed.body;
  EXPECT_EQ(api_->screenings(), 1u);
  // The next request on the same connection: one more.
  EXPECT_EQ(client.post("/get", R"({"id":"a"})").status, 200);
  EXPECT_EQ(api_->screenings(), 2u);
}

// A body announced with "Expect: 100-continue": screened before the "100 Continue", not after.
TEST_F(ScreeningTest, ABodyAfter100ContinueIsNotScreenedAgain) {
  RawConnection c(port_);
  const std::string body = R"({"topic":"t"})";
  ASSERT_TRUE(c.send(
      "POST /push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + std::string(kToken) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nExpect: 100-continue\r\n\r\n"));
  EXPECT_EQ(c.answer().status, 100);
  ASSERT_TRUE(c.send(body));
  EXPECT_EQ(c.answer().status, 200);
  EXPECT_EQ(api_->screenings(), 1u);
}

TEST_F(ScreeningTest, ARequestWithoutABodyIsScreenedOnce) {
  HttpClient client(port_, kToken);
  EXPECT_EQ(client.get("/health").status, 200);
  EXPECT_EQ(api_->screenings(), 1u);
  EXPECT_EQ(client.get("/stats").status, 200);
  EXPECT_EQ(api_->screenings(), 2u);
}

// Refused on its headers: answered from the one screening, whether a body was announced (the
// connection closes without reading it) or not (the connection stays open).
TEST_F(ScreeningTest, ARefusalIsScreenedOnceAndCountedOnce) {
  RawConnection with_body(port_);
  ASSERT_TRUE(
      with_body.send("POST /push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                     "nope\r\nContent-Length: 100\r\n\r\n"));
  HttpAnswer refused = with_body.answer();
  EXPECT_EQ(refused.status, 401) << refused.body;
  EXPECT_EQ(api_->screenings(), 1u);

  HttpClient wrong(port_, "nope");
  EXPECT_EQ(wrong.get("/stats").status, 401);
  EXPECT_EQ(api_->screenings(), 2u);
  EXPECT_EQ(wrong.request("PUT", "/nowhere", "{}").status, 404);
  EXPECT_EQ(api_->screenings(), 3u);

  // Each refusal counted once, under its route (a 404 has none).
  HttpClient client(port_, kToken);
  const std::string metrics = client.get("/metrics").body;
  EXPECT_TRUE(has(metrics, "delayqd_http_requests_total{route=\"push\",status=\"401\"} 1\n"))
      << metrics;
  EXPECT_TRUE(has(metrics, "delayqd_http_requests_total{route=\"stats\",status=\"401\"} 1\n"))
      << metrics;
  EXPECT_TRUE(has(metrics, "delayqd_http_requests_total{route=\"unknown\",status=\"404\"} 1\n"))
      << metrics;
}

// Without a server (the route tests, the fuzz target): the Api screens the request itself, once.
TEST(ApiScreening, ARequestHandedStraightToTheApiIsScreenedOnce) {
  auto queue = Engine::open({}).value();
  http::Api api(*queue, {});
  EXPECT_EQ(call(api, "/push", R"({"topic":"t"})").status, 200);
  EXPECT_EQ(api.screenings(), 1u);
  EXPECT_EQ(call(api, "/nowhere", "{}").status, 404);
  EXPECT_EQ(api.screenings(), 2u);
}

// The server screens a request when its headers come and hands it to the Api once its body is
// read: a drain begun in between still refuses it (the drain waits only for requests the Api
// has taken in), without screening it again.
TEST(ApiScreening, ADrainBegunWhileTheBodyWasReadStillRefuses) {
  auto queue = Engine::open({}).value();
  http::Api api(*queue, {});
  http::Screening screened = api.screen("POST", "/push", "");
  EXPECT_FALSE(screened.refused());
  EXPECT_EQ(screened.route(), http::Route::push);
  api.begin_drain();
  http::Request request{"POST", "/push", "", R"({"topic":"t"})"};
  request.screening = screened;
  std::promise<http::Response> answered;
  auto answer = answered.get_future();
  api.handle(std::move(request), [&](http::Response r) { answered.set_value(std::move(r)); });
  ASSERT_EQ(answer.wait_for(60s), std::future_status::ready);
  const http::Response r = answer.get();
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_TRUE(has(r.body, "shutting_down")) << r.body;
  EXPECT_TRUE(r.close);
  EXPECT_EQ(api.screenings(), 1u);
  EXPECT_EQ(queue->stats().pushed, 0u) << "the refused push reached the queue";
}

}  // namespace
}  // namespace delayq::testing
