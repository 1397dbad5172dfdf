// delayqd's /metrics text (src/delayqd/metrics.cc, timing_metrics.cc, prometheus.cc) to the byte,
// from a fixed Stats: a line of each kind of series, so that a change in how the text is put
// together (it is written with fmt) cannot change what a scraper reads.
#include "delayqd/metrics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "delayqd/api.h"
#include "wire/version.h"

namespace {

using delayq::Stats;

Stats fixed_stats() {
  Stats st;
  st.pushed = 12;
  st.topics["a"].delayed = 4;
  st.topics["a"].ready = 2;
  const std::string odd("b\xff\"\\\n", 5);  // invalid UTF-8, a quote, a backslash, a newline
  st.topics[odd].dead = 1;
  st.topics[odd].paused = true;
  st.topics["c"].reserved = 9;  // past --metrics-topics 2: in the overflow
  // Limited topics: a rate and a concurrency limit; a concurrency limit alone; one past the cap.
  st.flow["a"] = {.limits = {.rate = delayq::TopicLimits::Rate{50, std::chrono::seconds(2), 10},
                             .max_in_flight = 4},
                  .tokens = 7, .in_flight = 3, .throttled_rate = 11, .throttled_concurrency = 13};
  st.flow[odd] = {.limits = {.max_in_flight = 1}, .in_flight = 1};
  st.flow["z"] = {.limits = {.max_in_flight = 2}};
  for (const char* name : {"a", "c"}) {
    auto& t = st.timing[name];
    t.due = {1, 2, 3, 4, 5};
    t.oldest_ready = std::chrono::microseconds(1234567);
    t.first.buckets[3] = 2;   // at most 1 ms
    t.first.buckets[22] = 1;  // over 4 h
    t.first.count = 3;
    t.first.sum_seconds = 14400.123;
    t.retry.buckets[0] = 1;
    t.retry.count = 1;
    t.retry.sum_seconds = 1e-5;
    t.retry.clamped = 1;
  }
  return st;
}

TEST(MetricsText, EachKindOfLineToTheByte) {
  delayq::http::Metrics m(2);
  m.observe(delayq::http::Route::push, 200, std::chrono::steady_clock::now());
  const std::string text = m.text(fixed_stats(), {3, 4});
  const std::string version(delayq::wire::version());
  for (const std::string& line : std::vector<std::string>{
           "# HELP delayq_pushed_total Jobs pushed (since the store was created).\n"
           "# TYPE delayq_pushed_total counter\n"
           "delayq_pushed_total 12\n",
           "\ndelayq_jobs{topic=\"a\",state=\"delayed\"} 4\n"
           "delayq_jobs{topic=\"a\",state=\"ready\"} 2\n"
           "delayq_jobs{topic=\"a\",state=\"reserved\"} 0\n"
           "delayq_jobs{topic=\"a\",state=\"dead\"} 0\n",
           "\ndelayq_jobs{topic=\"b\\\\xff\\\"\\\\\\n\",state=\"dead\"} 1\n",
           "\ndelayq_jobs{overflow=\"true\",state=\"reserved\"} 9\n",
           "\ndelayq_overflow_topics 1\n",
           "\ndelayq_topic_paused{topic=\"a\"} 0\n"
           "delayq_topic_paused{topic=\"b\\\\xff\\\"\\\\\\n\"} 1\n",
           "\ndelayq_paused_topics 1\n",
           "# HELP delayq_topic_rate_limit_per_second Hand-outs per second the topic's rate "
           "allows on average (topics with a rate).\n"
           "# TYPE delayq_topic_rate_limit_per_second gauge\n"
           "delayq_topic_rate_limit_per_second{topic=\"a\"} 25\n"
           "# HELP delayq_topic_rate_burst",
           "\ndelayq_topic_rate_burst{topic=\"a\"} 10\n# HELP delayq_topic_tokens",
           "\ndelayq_topic_tokens{topic=\"a\"} 7\n# HELP delayq_topic_max_in_flight",
           "\ndelayq_topic_max_in_flight{topic=\"a\"} 4\n"
           "delayq_topic_max_in_flight{topic=\"b\\\\xff\\\"\\\\\\n\"} 1\n# HELP",
           "# TYPE delayq_topic_in_flight gauge\n"
           "delayq_topic_in_flight{topic=\"a\"} 3\n"
           "delayq_topic_in_flight{topic=\"b\\\\xff\\\"\\\\\\n\"} 1\n# HELP",
           "# TYPE delayq_topic_throttled_total counter\n"
           "delayq_topic_throttled_total{topic=\"a\",reason=\"rate\"} 11\n"
           "delayq_topic_throttled_total{topic=\"a\",reason=\"concurrency\"} 13\n",
           "\ndelayq_limited_topics 3\n",
           "\ndelayq_lateness_seconds_bucket{topic=\"a\",attempt=\"first\",le=\"0.001\"} 2\n",
           "\ndelayq_lateness_seconds_bucket{topic=\"a\",attempt=\"first\",le=\"+Inf\"} 3\n"
           "delayq_lateness_seconds_sum{topic=\"a\",attempt=\"first\"} 14400.123\n"
           "delayq_lateness_seconds_count{topic=\"a\",attempt=\"first\"} 3\n",
           "\ndelayq_lateness_seconds_sum{topic=\"a\",attempt=\"retry\"} 1e-05\n",
           "\ndelayq_delayed_jobs_by_due{topic=\"a\",due=\"next_minute\"} 1\n"
           "delayq_delayed_jobs_by_due{topic=\"a\",due=\"next_hour\"} 2\n"
           "delayq_delayed_jobs_by_due{topic=\"a\",due=\"next_day\"} 3\n"
           "delayq_delayed_jobs_by_due{topic=\"a\",due=\"next_week\"} 4\n"
           "delayq_delayed_jobs_by_due{topic=\"a\",due=\"beyond\"} 5\n",
           "\ndelayq_oldest_ready_age_seconds{topic=\"a\"} 1.234567\n",
           "\ndelayq_lateness_clamped_total 2\n", "\ndelayqd_waiting_pops 3\n",
           "\ndelayqd_connections 4\n", "\ndelayq_build_info{version=\"" + version + "\"} 1\n",
           "\ndelayqd_http_requests_total{route=\"push\",status=\"200\"} 1\n",
           "\ndelayqd_http_request_duration_seconds_bucket{route=\"push\",le=\"+Inf\"} 1\n",
           "\ndelayqd_http_request_duration_seconds_count{route=\"push\"} 1\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing:\n" << line << "\nin:\n" << text;
  }
  // The limited topic past --metrics-topics 2 has no flow series of its own.
  EXPECT_EQ(text.find("topic=\"z\""), std::string::npos) << text;
}

}  // namespace
