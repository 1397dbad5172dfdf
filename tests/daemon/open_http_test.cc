// delayq::open_http (delayq/http.h) beyond the conformance suite: what it refuses before any
// request (bad URLs and options), what a call says when the daemon is not there or wants a token,
// a reserve longer than the daemon's --pop-timeout, and a withdrawn reserve_async.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <stop_token>
#include <string>
#include <thread>

#include "daemon_process.h"
#include "delayq/http.h"
#include "wire/http_client.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using testing::StoreDaemonTest;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Waits (up to 30 s) until the daemon on `port` says on /metrics that a pop is waiting, so that
// a test withdraws a wait the daemon holds rather than one whose request is not out yet.
bool a_pop_is_waiting(int port) {
  wire::HttpClient c({.host = "127.0.0.1", .port = static_cast<uint16_t>(port)});
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto m = c.request("GET", "/metrics", "");
    if (m && has(m->body, "\ndelayqd_waiting_pops 1\n")) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

TEST(OpenHttp, BadUrlsAreRefusedSayingWhatIsWrong) {
  const struct {
    const char* url;
    const char* why;
  } cases[] = {
      {"127.0.0.1:9277", "it does not start with http://"},
      {"https://127.0.0.1:9277", "https is not supported"},
      {"http://127.0.0.1:99999", "bad port '99999'"},
      {"http://:9277", "no host"},
      {"http://[::1:9277", "an IPv6 address without ']'"},
  };
  for (const auto& c : cases) {
    auto q = open_http(c.url);
    ASSERT_FALSE(q.ok()) << c.url;
    EXPECT_TRUE(q.is(Errc::invalid_argument)) << q.status().to_string();
    EXPECT_TRUE(has(q.status().message(), "bad delayqd url '" + std::string(c.url) + "'"))
        << q.status().message();
    EXPECT_TRUE(has(q.status().message(), c.why)) << q.status().message();
  }
}

TEST(OpenHttp, BadOptionsAreRefusedNamingTheOption) {
  const std::string url = "http://127.0.0.1:9277";
  auto both = open_http(url, {.token = "a", .token_file = "/nonexistent"});
  EXPECT_TRUE(has(both.status().message(), "set token or token_file, not both"))
      << both.status().to_string();
  auto missing = open_http(url, {.token_file = "/nonexistent/token"});
  EXPECT_TRUE(missing.is(Errc::invalid_argument));
  EXPECT_TRUE(has(missing.status().message(), "cannot read the token file /nonexistent/token"))
      << missing.status().message();
  auto spaced = open_http(url, {.token = "two words"});
  EXPECT_TRUE(has(spaced.status().message(), "HttpOptions::token")) << spaced.status().message();
  HttpOptions none;
  none.connections = 0;
  EXPECT_TRUE(has(open_http(url, none).status().message(), "HttpOptions::connections is 0"));
  HttpOptions slow;
  slow.call_timeout = 0s;
  EXPECT_TRUE(has(open_http(url, slow).status().message(), "HttpOptions::call_timeout"));
}

TEST(OpenHttp, ADaemonThatIsNotThereIsUnavailableAndOpeningSendsNothing) {
  // A port nothing listens on: this process's own, freed at once.
  testing::TempDir dir("open-http");
  testing::DaemonProcess d(DELAYQD_PATH, dir.sub("log"));
  const int port = d.start({"--listen", "127.0.0.1:0", "--store", dir.sub("s"), "--sync", "none"});
  ASSERT_GT(port, 0) << d.log();
  d.kill9();
  auto q = open_http("http://127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  auto pushed = (*q)->push({.topic = "t"});
  EXPECT_TRUE(pushed.is(Errc::unavailable)) << pushed.status().to_string();
  EXPECT_TRUE(has(pushed.status().message(), "cannot connect")) << pushed.status().message();
  EXPECT_TRUE((*q)->health().is(Errc::unavailable));
  const Stats st = (*q)->stats();  // no reason to give: empty
  EXPECT_EQ(st.pushed, 0u);
  EXPECT_TRUE(st.topics.empty());
}

class OpenHttpDaemon : public StoreDaemonTest {};

TEST_F(OpenHttpDaemon, TheTokenIsSentAndItsAbsenceExplained) {
  const std::string token = dir_.sub("token");
  std::ofstream(token) << "s3cret\n";
  ::chmod(token.c_str(), 0600);
  const int port = start({"--token-file", token});
  ASSERT_GT(port, 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  auto without = open_http(url).value();
  auto refused = without->push({.topic = "t", .id = "a"});
  EXPECT_TRUE(refused.is(Errc::unavailable)) << refused.status().to_string();
  EXPECT_TRUE(has(refused.status().message(), "HTTP 401 unauthorized"))
      << refused.status().message();
  EXPECT_TRUE(without->health().ok());  // /health needs no token
  auto with = open_http(url, {.token_file = token}).value();
  EXPECT_EQ(with->push({.topic = "t", .id = "a"}).value(), "a");
}

TEST_F(OpenHttpDaemon, AReserveLongerThanTheDaemonsPopTimeoutAsksAgain) {
  const int port = start({"--pop-timeout", "1"});
  ASSERT_GT(port, 0);
  auto q = open_http("http://127.0.0.1:" + std::to_string(port)).value();
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(q->push({.topic = "t", .id = "late", .delay = 1500ms}).ok());
  auto d = q->reserve("t", 10s);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, "late");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1500ms);
  // And a wait with nothing to take lasts its whole timeout, past the daemon's 1 s.
  const auto again = std::chrono::steady_clock::now();
  EXPECT_TRUE(q->reserve("t", 1500ms).is(Errc::timeout));
  EXPECT_GE(std::chrono::steady_clock::now() - again, 1500ms);
}

TEST_F(OpenHttpDaemon, AWithdrawnReserveAsyncTakesNothing) {
  const int port = start();
  ASSERT_GT(port, 0);
  auto q = open_http("http://127.0.0.1:" + std::to_string(port)).value();
  std::stop_source stop;
  std::promise<Result<Delivery>> got;
  q->reserve_async({"t"}, 30s, [&](Result<Delivery> r) { got.set_value(std::move(r)); },
                   stop.get_token());
  ASSERT_TRUE(a_pop_is_waiting(port));
  stop.request_stop();
  auto future = got.get_future();
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(future.get().is(Errc::cancelled));
  // The daemon withdrew the pop: a job pushed now goes to the next reserve.
  ASSERT_TRUE(q->push({.topic = "t", .id = "j"}).ok());
  auto d = q->reserve("t", 5s);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, "j");
  EXPECT_EQ(d->attempt, 1u);
}

// close() ends a waiting reserve_async with `closed`, and has waited for its callback.
TEST_F(OpenHttpDaemon, CloseAnswersAWaitingReserveAsyncBeforeItReturns) {
  const int port = start();
  ASSERT_GT(port, 0);
  auto q = open_http("http://127.0.0.1:" + std::to_string(port)).value();
  std::atomic<int> calls{0};
  Status got;
  q->reserve_async({"t"}, 30s, [&](Result<Delivery> r) {
    got = r.status();
    calls.fetch_add(1);
  });
  ASSERT_TRUE(a_pop_is_waiting(port));
  const auto before = std::chrono::steady_clock::now();
  q->close();
  EXPECT_LT(std::chrono::steady_clock::now() - before, 5s);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_TRUE(got.is(Errc::closed)) << got.to_string();
  // After close() a reserve_async is answered at once, on the calling thread.
  q->reserve_async({"t"}, 30s, [&](Result<Delivery> r) { got = r.status(); });
  EXPECT_TRUE(got.is(Errc::closed)) << got.to_string();
  EXPECT_TRUE(q->push({.topic = "t"}).is(Errc::closed));
}

// POST /release as docs/http-api.md shows it: the delivery undone and counted in "released"; the
// same token again is stale; a token that does not parse is a bad request.
TEST_F(OpenHttpDaemon, TheReleaseRouteGivesADeliveryBack) {
  const int port = start();
  ASSERT_GT(port, 0);
  auto q = open_http("http://127.0.0.1:" + std::to_string(port)).value();
  ASSERT_TRUE(q->push({.topic = "t", .id = "r"}).ok());
  auto d = q->reserve("t", 5s);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  wire::HttpClient raw({.host = "127.0.0.1", .port = static_cast<uint16_t>(port)});
  const std::string body = R"({"token":")" + d->token.to_string() + R"("})";
  auto first = raw.request("POST", "/release", body);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->status, 200) << first->body;
  EXPECT_TRUE(has(first->body, R"("message":"released")")) << first->body;
  auto again = raw.request("POST", "/release", body);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->status, 409) << again->body;
  EXPECT_TRUE(has(again->body, R"("error":"stale_token")")) << again->body;
  auto bad = raw.request("POST", "/release", R"({"token":"nope"})");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400) << bad->body;
  EXPECT_EQ(q->stats().released, 1u);
  auto back = q->get("r");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->state, JobState::ready);
  EXPECT_EQ(back->attempts, 0u);
}

}  // namespace
}  // namespace delayq
