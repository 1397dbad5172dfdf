// `delayq wait`: a shell that starts delayqd in the background and calls it on the next line
// (the blocks of README.md and docs/) waits with it until the daemon answers /health, or fails
// loudly. Its flags are checked; not answering, and answering 503 (a queue that cannot serve),
// are "not yet"; an answer that is not delayqd's fails at once.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "background_daemon.h"
#include "cli/wait.h"
#include "cli_harness.h"
#include "http_client.h"
#include "redis_server.h"

namespace delayq::testing {
namespace {

std::string url_of(int port) { return "http://127.0.0.1:" + std::to_string(port); }

// How many /health requests the daemon answered 503, from its /metrics; -1 if it cannot say.
int64_t health_503s(int port) {
  HttpClient c(port);
  const HttpAnswer m = c.get("/metrics");
  if (m.status != 200) return -1;
  const std::string key = "delayqd_http_requests_total{route=\"health\",status=\"503\"} ";
  const size_t at = m.body.find(key);
  return at == std::string::npos ? 0 : std::stoll(m.body.substr(at + key.size()));
}

// A daemon started just before, as `delayqd ... &`: wait returns once it answers (it takes tens
// of milliseconds to open its store, in which a call is refused), and the next call finds it.
TEST(CliWaitTest, WaitsForADaemonStartedJustBefore) {
  TempDir dir("delayq-wait");
  ASSERT_FALSE(dir.path().empty());
  const int port = free_port();
  ASSERT_GT(port, 0);
  BackgroundDaemon d(DELAYQD_PATH,
                     {"--listen", "127.0.0.1:" + std::to_string(port), "--store",
                      dir.sub("store"), "--sync", "none"},
                     {}, dir.sub("log"));
  const CliRun wait = cli({"--url", url_of(port), "wait", "--timeout", "1m"});
  ASSERT_EQ(wait.exit, 0) << describe(wait) << d.log();
  EXPECT_TRUE(contains(wait.out, " at " + url_of(port) + " is ready (store)")) << wait.out;
  EXPECT_TRUE(wait.err.empty()) << wait.err;
  const CliRun stats = cli({"--url", url_of(port), "stats"});
  EXPECT_EQ(stats.exit, 0) << describe(stats);
  // --json, and DELAYQ_URL standing for --url.
  const CliRun again = run_program(DELAYQ_CLI_PATH, {"wait", "--json"}, "",
                                   {"DELAYQ_URL=" + url_of(port)});
  ASSERT_EQ(again.exit, 0) << describe(again);
  const json::Value v = again.json();
  EXPECT_EQ(json::member_string(v, "status"), "ok");
  EXPECT_EQ(json::member_string(v, "backend"), "store");
  EXPECT_EQ(json::member_string(v, "url"), url_of(port));
  EXPECT_FALSE(json::member_string(v, "version").empty());
}

// Nothing listening: it tries until --timeout, then exit 1 naming the URL, the timeout and what
// the last try got.
TEST(CliWaitTest, NothingListeningFailsAfterTheTimeout) {
  const int port = free_port();
  ASSERT_GT(port, 0);
  const auto start = std::chrono::steady_clock::now();
  const CliRun r = cli({"--url", url_of(port), "wait", "--timeout", "400ms"});
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.exit, 1) << describe(r);
  EXPECT_TRUE(contains(r.err, "delayq: wait: unavailable: no answer from /health of the delayqd "
                              "at " + url_of(port) + " within 400ms; the last try: "))
      << r.err;
  EXPECT_TRUE(contains(r.err, "Connection refused")) << r.err;
  EXPECT_GE(took, 400ms);
  EXPECT_TRUE(r.out.empty()) << r.out;
  const CliRun j = cli({"--url", url_of(port), "wait", "--timeout", "0", "--json"});
  EXPECT_EQ(j.exit, 1) << describe(j);
  EXPECT_EQ(json::member_string(j.json(), "error"), "unavailable");
}

// Without --timeout it tries for 10 s.
TEST(CliWaitTest, TheDefaultTimeoutIsTenSeconds) {
  const int port = free_port();
  ASSERT_GT(port, 0);
  const auto start = std::chrono::steady_clock::now();
  const CliRun r = cli({"--url", url_of(port), "wait"});
  EXPECT_GE(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_EQ(r.exit, 1) << describe(r);
  EXPECT_TRUE(contains(r.err, " within 10s; the last try: ")) << r.err;
}

// A delayqd whose routes are not under that path (or another program) answers something else
// than a health answer: that is reported at once, not waited out.
class CliWaitDaemonTest : public StoreDaemonTest {};

TEST_F(CliWaitDaemonTest, AWrongPathFailsAtOnce) {
  const int port = start();
  ASSERT_GT(port, 0);
  const auto begin = std::chrono::steady_clock::now();
  const CliRun r = cli({"--url", url_of(port) + "/delayq", "wait", "--timeout", "1m"});
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 30s) << "not waited out";
  EXPECT_EQ(r.exit, 1) << describe(r);
  EXPECT_TRUE(contains(r.err, "answered GET /delayq/health with HTTP 404 no_route")) << r.err;
  EXPECT_TRUE(contains(r.err, "is the URL, its path included, the daemon's?")) << r.err;
}

// 503 from /health (here: delayqd on a Redis that is down) is "not yet": a wait that began
// while Redis was down ends once Redis is back; a short one fails saying what /health answered.
TEST(CliWaitTest, A503IsWaitedOut) {
  RedisServer redis;
  ASSERT_TRUE(redis.started()) << redis.log();
  TempDir dir("delayq-wait");
  ASSERT_FALSE(dir.path().empty());
  DaemonProcess d(DELAYQD_PATH, dir.sub("log"));
  const int port = d.start({"--listen", "127.0.0.1:0", "--redis", redis.url()});
  ASSERT_GT(port, 0) << d.log();
  redis.kill_now();
  const CliRun down = cli({"--url", url_of(port), "wait", "--timeout", "300ms"});
  EXPECT_EQ(down.exit, 1) << describe(down);
  EXPECT_TRUE(contains(down.err, "the last try: HTTP 503 ")) << down.err;
  const int64_t before = health_503s(port);
  ASSERT_GE(before, 1) << "the first wait's 503 is not in /metrics";
  CliRun later;
  std::thread waiter([&] { later = cli({"--url", url_of(port), "wait", "--timeout", "2m"}); });
  // Redis comes back only once the second wait was seen to be answered 503 at least once.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (health_503s(port) <= before && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  EXPECT_GT(health_503s(port), before) << "the second wait never tried while Redis was down";
  ASSERT_TRUE(redis.start()) << redis.log();
  waiter.join();
  EXPECT_EQ(later.exit, 0) << describe(later) << d.log();
  EXPECT_TRUE(contains(later.out, "is ready (redis)")) << later.out;
}

// Bad usage: exit 2, naming what is wrong, before anything is tried.
TEST(CliWaitTest, BadUsageIsRefused) {
  const struct {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"--url", "http://127.0.0.1:1", "wait", "--timeout", "2h"},
       "--timeout: '2h' is more than the longest wait, 1h"},
      {{"--url", "http://127.0.0.1:1", "wait", "--timeout", "-1s"}, "it is negative"},
      {{"--url", "http://127.0.0.1:1", "wait", "--timeout", "10"}, "has no unit"},
      {{"--url", "http://127.0.0.1:1", "wait", "now"}, "unexpected argument 'now'"},
      {{"--store", "data", "wait"}, "wait takes --url (or DELAYQ_URL)"},
      {{"--redis", "redis://127.0.0.1:1", "wait"}, "wait takes --url (or DELAYQ_URL)"},
      {{"--url", "http://127.0.0.1:1", "get", "x", "--timeout", "1s"},
       "--timeout does not apply to get"},
      {{"--url", "127.0.0.1:1", "wait"}, "bad --url"},
  };
  for (const auto& c : cases) {
    const CliRun r = cli(c.args);
    EXPECT_EQ(r.exit, 2) << describe(r);
    EXPECT_TRUE(contains(r.err, c.says)) << c.says << "\n" << r.err;
  }
  // The bounds: 0 (ask once) and 1h are taken, a nanosecond more than 1h is not.
  EXPECT_EQ(cli::parse_wait_timeout("0").value(), Duration(0));
  EXPECT_EQ(cli::parse_wait_timeout("1h").value(), std::chrono::hours(1));
  EXPECT_EQ(cli::parse_wait_timeout("3600.000000001s").status().message(),
            "'3600.000000001s' is more than the longest wait, 1h");
}

}  // namespace
}  // namespace delayq::testing
