// The HTTP client Queue (delayq::open_http) on flow control and browsing: set_topic_limits,
// clear_topic_limits and list_jobs reach the queue behind a delayqd (run in this process over a
// recording queue, tests/support/recording_queue.h) with the values given, their answers read
// back; priority travels with a push and back with get(); stats() carries the flow. Bad values
// are refused by the client itself, in the library's words, without a request.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>

#include "api_harness.h"
#include "delayq/engine.h"
#include "delayq/http.h"
#include "delayqd/server.h"
#include "inprocess_daemon.h"
#include "recording_queue.h"

namespace delayq::testing {
namespace {

using namespace std::chrono_literals;

class HttpFlowClient : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = std::make_unique<InProcessDaemon>(recorder_);
    ASSERT_FALSE(daemon_->url().empty());
    auto q = open_http(daemon_->url());
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    q_ = std::move(*q);
  }
  void TearDown() override {
    if (q_) q_->close();
    daemon_.reset();
  }

  RecordingQueue recorder_;
  std::unique_ptr<InProcessDaemon> daemon_;
  std::unique_ptr<Queue> q_;
};

TEST_F(HttpFlowClient, LimitsReachTheQueueAsGiven) {
  const TopicLimits limits{.rate = TopicLimits::Rate{50, 1s, 10}, .max_in_flight = 4};
  ASSERT_TRUE(q_->set_topic_limits("mail", limits).ok());
  EXPECT_EQ(recorder_.topic, "mail");
  EXPECT_EQ(recorder_.limits, limits);
  // A period finer than a millisecond travels in seconds, exactly enough.
  const TopicLimits fine{.rate = TopicLimits::Rate{1, 1500us, 1}};
  ASSERT_TRUE(q_->set_topic_limits("t", fine).ok());
  EXPECT_EQ(recorder_.limits, fine);
  recorder_.topic.clear();
  ASSERT_TRUE(q_->clear_topic_limits("mail").ok());
  EXPECT_EQ(recorder_.topic, "mail");
  // The queue's refusal comes back as it was.
  recorder_.refuse = Status(Errc::invalid_argument, "set_topic_limits is not supported by this "
                                                    "backend yet");
  Status s = q_->set_topic_limits("t", fine);
  EXPECT_EQ(s.code(), Errc::invalid_argument);
  EXPECT_TRUE(has(s.message(), "not supported by this backend yet")) << s.to_string();
}

TEST_F(HttpFlowClient, BadLimitsAreRefusedWithoutARequest) {
  const std::pair<TopicLimits, const char*> cases[] = {
      {TopicLimits{}, "set a rate or max_in_flight"},
      {TopicLimits{.rate = TopicLimits::Rate{0, 1s, 1}}, "rate count must be at least 1"},
      {TopicLimits{.rate = TopicLimits::Rate{5, 0s, 1}}, "rate period must be positive"},
      {TopicLimits{.rate = TopicLimits::Rate{5, 1s, 0}}, "burst must be between 1 and 1000000"},
      {TopicLimits{.max_in_flight = 0}, "max_in_flight must be at least 1"},
  };
  for (const auto& [l, says] : cases) {
    recorder_.topic = "(untouched)";
    Status s = q_->set_topic_limits("t", l);
    EXPECT_EQ(s.code(), Errc::invalid_argument) << says;
    EXPECT_TRUE(has(s.message(), says)) << s.to_string();
    EXPECT_EQ(recorder_.topic, "(untouched)");
  }
  for (size_t limit : {size_t{0}, size_t{1001}}) {
    auto page = q_->list_jobs("t", JobState::ready, limit);
    EXPECT_EQ(page.status().code(), Errc::invalid_argument);
    EXPECT_TRUE(has(page.status().message(), "limit must be between 1 and 1000")) << limit;
  }
  EXPECT_TRUE(recorder_.lists.empty());
}

TEST_F(HttpFlowClient, APageComesBackAsTheQueueGaveIt) {
  JobInfo dead{.id = "a", .topic = "t", .state = JobState::dead, .body = "x", .priority = 3,
               .dead_since = TimePoint(std::chrono::milliseconds(1'795'288'348'780)) + 5ns};
  recorder_.pages = {JobPage{{dead, JobInfo{.id = "b", .topic = "t", .state = JobState::dead}},
                             "c1.next"}};
  auto page = q_->list_jobs("t", JobState::dead, 2, "c1.prev");
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  ASSERT_EQ(recorder_.lists.size(), 1u);
  EXPECT_EQ(recorder_.lists[0].state, JobState::dead);
  EXPECT_EQ(recorder_.lists[0].limit, 2u);
  EXPECT_EQ(recorder_.lists[0].cursor, "c1.prev");
  ASSERT_EQ(page->jobs.size(), 2u);
  EXPECT_EQ(page->jobs[0].priority, 3u);
  EXPECT_EQ(page->jobs[0].dead_since, dead.dead_since);
  EXPECT_EQ(page->jobs[0].body, "x");
  EXPECT_EQ(page->jobs[1].priority, kDefaultPriority);
  EXPECT_EQ(page->cursor, "c1.next");
  // The last page: no cursor.
  recorder_.pages = {JobPage{{}, ""}};
  page = q_->list_jobs("t", JobState::ready, 10);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->cursor.empty());
  EXPECT_EQ(recorder_.lists.back().cursor, "");
}

TEST_F(HttpFlowClient, APushCarriesItsPriority) {
  ASSERT_TRUE(q_->push({.topic = "t", .id = "a", .delay = 60s, .priority = 0}).ok());
  EXPECT_EQ(recorder_.pushed.priority, 0u);
  ASSERT_TRUE(q_->push({.topic = "t", .id = "b", .delay = 60s}).ok());
  EXPECT_EQ(recorder_.pushed.priority, kDefaultPriority);
  ASSERT_TRUE(q_->push({.topic = "t", .id = "c", .priority = 4294967295u}).ok());
  EXPECT_EQ(recorder_.pushed.priority, 4294967295u);
}

TEST_F(HttpFlowClient, StatsCarryTheFlow) {
  recorder_.flow["mail"] = {.limits = {.rate = TopicLimits::Rate{50, 1s, 10}, .max_in_flight = 4},
                            .tokens = 7, .in_flight = 2, .throttled_rate = 11,
                            .throttled_concurrency = 13};
  recorder_.flow["slow"] = {.limits = {.max_in_flight = 1}, .in_flight = 1};
  EXPECT_EQ(q_->stats().flow, recorder_.flow);
}

// ServerOptions::stop, which the in-process daemon of these tests relies on: a request made before
// the server listens stops it as soon as it does, draining as SIGTERM does (the queue closed).
TEST(ServerStop, ARequestBeforeTheServerRunsStopsItOnceItListens) {
  auto queue = Engine::open({}).value();
  http::Api api(*queue, {});
  http::ServerStop stop;
  stop.request();
  http::ServerOptions o;
  o.port = 0;
  o.threads = 1;
  o.stop = &stop;
  std::string error, at;
  auto ran = std::async(std::launch::async, [&] {
    return http::run_server(api, *queue, o, [&](const std::string& a) { at = a; }, error);
  });
  ASSERT_EQ(ran.wait_for(60s), std::future_status::ready) << "the server did not stop";
  EXPECT_TRUE(ran.get()) << error;
  EXPECT_FALSE(at.empty());
  EXPECT_EQ(queue->push({.topic = "t"}).status().code(), Errc::closed);
  stop.request();  // after the server returned: nothing to stop, nothing happens
}

}  // namespace
}  // namespace delayq::testing
