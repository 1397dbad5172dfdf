// delayqd's /metrics passes Prometheus's own checker: `promtool check metrics` (Debian's
// prometheus package, which scripts/test.sh installs) reads the text of a real daemon holding
// jobs in several topics, with lateness recorded (first attempts and retries), a dead letter and
// a topic past --metrics-topics (the overflow series), and schedules (one past that cap too).
// Any problem promtool reports fails the test. Skipped, saying so, only where promtool is not
// installed.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "daemon_process.h"
#include "delayqd/metrics.h"
#include "http_client.h"

namespace {

using namespace std::chrono_literals;
using delayq::testing::HttpClient;
using MetricsPromtool = delayq::testing::StoreDaemonTest;

// Runs `command` through the shell; its exit status and what it printed (stdout and stderr).
std::pair<int, std::string> run(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST_F(MetricsPromtool, TheMetricsTextPassesPromtoolCheckMetrics) {
  if (run("command -v promtool").first != 0)
    GTEST_SKIP() << "promtool is not installed (Debian package prometheus; scripts/test.sh "
                    "installs it)";
  const int port = start({"--metrics-topics", "2"});
  ASSERT_GT(port, 0);
  HttpClient c(port);
  const auto ok = [](const delayq::testing::HttpAnswer& a) {
    EXPECT_EQ(a.code(), 0) << a.body;
    return a;
  };
  // Topics "orders" and "sms" get series; "zz-overflow" comes third, past the cap.
  ok(c.post("/push", R"({"topic":"orders","id":"o1"})"));
  ok(c.post("/push", R"({"topic":"orders","id":"o2","delay":1800})"));
  ok(c.post("/push",
            R"({"topic":"sms","id":"s1","retry":{"kind":"fixed","delay":1,"max_attempts":2}})"));
  ok(c.post("/push", R"({"topic":"zz-overflow","id":"z1","delay":90000})"));
  ok(c.post("/push", R"({"topic":"zz-overflow","id":"z2"})"));
  std::this_thread::sleep_for(20ms);
  ok(c.post("/pop", R"({"topic":"orders","timeout":5})"));  // a first attempt
  ok(c.post("/pop", R"({"topic":"sms","timeout":5})"));
  ok(c.post("/nack", R"({"id":"s1","delay":0})"));  // a retry ...
  ok(c.post("/pop", R"({"topic":"sms","timeout":5})"));
  ok(c.post("/nack", R"({"id":"s1"})"));  // ... then dead
  ok(c.post("/pop", R"({"topic":"zz-overflow","timeout":5})"));
  // Three schedules, the third past the cap of named series; none fires during the test (the
  // first occurrence an hour away), so the jobs above are all the topics hold.
  const int64_t in_an_hour = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch() + 1h)
                                 .count();
  for (const char* id : {"a", "b-two", "c"})
    ok(c.post("/schedules/set", std::string(R"({"id":")") + id +
                                    R"(","rule":"every 1h","job":{"topic":"orders"},"start_ms":)" +
                                    std::to_string(in_an_hour) + "}"));
  const std::string text = c.get("/metrics").body;
  for (const char* want :
       {"delayq_lateness_seconds_bucket{topic=\"orders\",attempt=\"first\",le=\"+Inf\"} 1",
        "delayq_lateness_seconds_count{topic=\"sms\",attempt=\"retry\"} 1",
        "delayq_lateness_seconds_count{overflow=\"true\",attempt=\"first\"} 1",
        "delayq_jobs{topic=\"sms\",state=\"dead\"} 1",
        "delayq_delayed_jobs_by_due{topic=\"orders\",due=\"next_hour\"} 1",
        "delayq_delayed_jobs_by_due{overflow=\"true\",due=\"next_week\"} 1",
        "delayq_oldest_ready_age_seconds{topic=\"orders\"} 0", "delayq_overflow_topics 1",
        "delayq_schedules 3",
        "delayq_schedule_occurrences_total{schedule=\"b-two\",outcome=\"fired\"} 0",
        "delayq_schedules_occurrences_total{outcome=\"skipped_catch_up\"} 0"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  EXPECT_EQ(text.find("schedule=\"c\""), std::string::npos) << "past the cap:\n" << text;
  const std::string file = dir_.sub("metrics.txt");
  std::ofstream(file) << text;
  const auto [status, said] = run("promtool check metrics < " + file);
  EXPECT_EQ(status, 0) << said << "\n" << text;
  EXPECT_EQ(said, "") << "promtool reported problems:\n" << said;
}

// The flow-control series (src/delayqd/flow_metrics.cc) pass promtool too. The queue behind a
// daemon on this branch keeps no limits yet, so their text is made from a Stats holding some,
// with the same Metrics the daemon uses.
TEST_F(MetricsPromtool, TheFlowSeriesPassPromtoolCheckMetrics) {
  if (run("command -v promtool").first != 0)
    GTEST_SKIP() << "promtool is not installed (Debian package prometheus; scripts/test.sh "
                    "installs it)";
  delayq::Stats st;
  st.topics["mail"].ready = 3;
  st.flow["mail"] = {.limits = {.rate = delayq::TopicLimits::Rate{50, 1s, 10}, .max_in_flight = 4},
                     .tokens = 7, .in_flight = 3, .throttled_rate = 11,
                     .throttled_concurrency = 13};
  st.flow["quiet \"one\""] = {.limits = {.rate = delayq::TopicLimits::Rate{1, 1500us, 1}}};
  st.flow["solo"] = {.limits = {.max_in_flight = 1}, .in_flight = 1};
  delayq::http::Metrics m(1000);
  const std::string text = m.text(st, {});
  ASSERT_NE(text.find("delayq_topic_throttled_total{topic=\"mail\",reason=\"rate\"} 11"),
            std::string::npos)
      << text;
  const std::string file = dir_.sub("flow-metrics.txt");
  std::ofstream(file) << text;
  const auto [status, said] = run("promtool check metrics < " + file);
  EXPECT_EQ(status, 0) << said << "\n" << text;
  EXPECT_EQ(said, "") << "promtool reported problems:\n" << said;
}

}  // namespace
