// delayqd's routes of flow control and browsing (issue 22): /limits/set, /limits/clear,
// /jobs/list, and priority in /push. Every bad input is refused with a 400 that names what is
// wrong before the queue is called; good input reaches the queue with the values parsed, and the
// queue's answer is written as docs/http-api.md shows it. The queue is a recording stub over an
// in-memory engine (tests/support/forwarding_queue.h) answering fixed values, so that the routes
// are checked whatever the engine implements yet.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "api_harness.h"
#include "recording_queue.h"

namespace delayq::testing {
namespace {

using namespace std::chrono_literals;

class HttpFlowTest : public ::testing::Test {
 protected:
  void SetUp() override { open({}); }
  void open(http::ApiOptions options) {
    api_.reset();
    queue_ = std::make_unique<RecordingQueue>();
    options.default_pop_timeout = 0s;
    api_ = std::make_unique<http::Api>(*queue_, options);
  }
  Answer post(const std::string& route, const std::string& body) {
    return call(*api_, route, body);
  }
  // Refused with 400 bad_request saying `says`, and the queue never asked.
  void expect_refused(const std::string& route, const std::string& body, const std::string& says) {
    const size_t lists = queue_->lists.size();
    queue_->topic = "(untouched)";
    const Answer a = post(route, body);
    EXPECT_EQ(a.status, 400) << route << " " << body << " -> " << a.text;
    EXPECT_EQ(a.error(), "bad_request") << a.text;
    EXPECT_TRUE(has(a.message(), says)) << route << " " << body << " -> " << a.text;
    EXPECT_EQ(queue_->topic, "(untouched)") << route << " " << body << " reached the queue";
    EXPECT_EQ(queue_->lists.size(), lists) << route << " " << body << " reached the queue";
  }

  std::unique_ptr<RecordingQueue> queue_;
  std::unique_ptr<http::Api> api_;
};

TEST_F(HttpFlowTest, LimitsSetReachesTheQueueParsedAndAnswersThem) {
  Answer a = post("/limits/set",
                  R"({"topic":" mail ","rate":{"count":50,"per_ms":1000,"burst":10},)"
                  R"("max_in_flight":4})");
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(queue_->topic, "mail");
  EXPECT_EQ(queue_->limits,
            (TopicLimits{.rate = TopicLimits::Rate{50, 1s, 10}, .max_in_flight = 4}));
  EXPECT_EQ(a.message(), "limits set");
  EXPECT_EQ(wire::json::member_string(a.data(), "topic"), "mail");
  const auto* rate = a.data().find("limits")->find("rate");
  ASSERT_NE(rate, nullptr) << a.text;
  EXPECT_EQ(wire::json::member_int(*rate, "count"), 50);
  EXPECT_EQ(wire::json::member_int(*rate, "per_ms"), 1000);
  EXPECT_EQ(wire::json::member_int(*rate, "burst"), 10);
  EXPECT_EQ(wire::json::member_int(*a.data().find("limits"), "max_in_flight"), 4);

  // A period in seconds; a rate alone; max_in_flight alone.
  ASSERT_EQ(post("/limits/set", R"({"topic":"t","rate":{"count":3,"per":0.25}})").status, 200);
  EXPECT_EQ(queue_->limits, (TopicLimits{.rate = TopicLimits::Rate{3, 250ms, 1}}));
  ASSERT_EQ(post("/limits/set", R"({"topic":"t","max_in_flight":1})").status, 200);
  EXPECT_EQ(queue_->limits, (TopicLimits{.max_in_flight = 1}));
}

TEST_F(HttpFlowTest, LimitsSetRefusesBadInputBeforeTheQueue) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"topic":"t"})", "set a rate or max_in_flight (to remove a topic's limits, clear them)"},
      {R"({"max_in_flight":1})", R"(missing field "topic")"},
      {R"({"topic":"t","max_in_flight":1,"x":1})", R"(unknown field "x": /limits/set takes)"},
      {R"({"topic":"t","rate":{"count":5,"per_ms":1000,"bust":2}})",
       R"(unknown field "rate.bust" (did you mean "rate.burst"?))"},
      {R"({"topic":"t","rate":[50,1000]})", R"(field "rate" must be an object)"},
      {R"({"topic":"t","rate":{"count":0,"per_ms":1000}})", "rate count must be at least 1"},
      {R"({"topic":"t","rate":{"count":-5,"per_ms":1000}})", R"(field "rate.count" is out of range)"},
      {R"({"topic":"t","rate":{"count":5,"per_ms":0}})", "rate period must be positive, got 0"},
      {R"({"topic":"t","rate":{"count":5,"per_ms":-1000}})", "rate.per_ms"},
      {R"({"topic":"t","rate":{"count":5,"per_ms":1000,"burst":2000000}})",
       "burst must be between 1 and 1000000"},
      {R"({"topic":"t","rate":{"count":5,"per_ms":1000,"burst":"10"}})",
       R"(field "rate.burst" must be an integer, not a string)"},
      {R"({"topic":"t","max_in_flight":0})", "max_in_flight must be at least 1"},
      {R"({"topic":"t","max_in_flight":4294967296})", R"(field "max_in_flight" is out of range)"},
      {R"({"topic":"t","max_in_flight":2.5})",
       R"(field "max_in_flight" must be an integer, not a non-integer number)"},
  };
  for (const auto& [body, says] : cases) expect_refused("/limits/set", body, says);
  // A period past the queue's max_delay (delayqd --max-delay).
  http::ApiOptions options;
  options.max_delay = 1h;
  open(options);
  expect_refused("/limits/set", R"({"topic":"t","rate":{"count":5,"per_ms":7200000}})",
                 "max_delay");
}

TEST_F(HttpFlowTest, LimitsClearReachesTheQueueAndRefusesBadInput) {
  Answer a = post("/limits/clear", R"({"topic":"mail"})");
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(queue_->topic, "mail");
  EXPECT_EQ(a.message(), "limits cleared");
  EXPECT_TRUE(a.data().find("limits")->is_null()) << a.text;
  expect_refused("/limits/clear", R"({})", R"(missing field "topic")");
  expect_refused("/limits/clear", R"({"topic":"t","rate":null})",
                 R"(unknown field "rate": /limits/clear takes topic)");
  expect_refused("/limits/clear", R"({"topic":5})", R"(field "topic" must be a string)");
}

TEST_F(HttpFlowTest, TheQueuesRefusalIsAnsweredWithItsStatus) {
  queue_->refuse = Status(Errc::invalid_argument, "list_jobs is not supported by this backend yet");
  Answer a = post("/jobs/list", R"({"topic":"t","state":"ready"})");
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.error(), "invalid_argument");
  EXPECT_TRUE(has(a.message(), "not supported")) << a.text;
  queue_->refuse = Status(Errc::closed, "the queue is closed");
  EXPECT_EQ(post("/limits/set", R"({"topic":"t","max_in_flight":1})").status, 503);
  EXPECT_EQ(post("/limits/clear", R"({"topic":"t"})").status, 503);
}

JobInfo job(std::string id, std::string body = "x") {
  return JobInfo{.id = std::move(id), .topic = "t", .state = JobState::dead, .body = std::move(body),
                 .priority = 9, .dead_since = TimePoint(std::chrono::milliseconds(1500))};
}

TEST_F(HttpFlowTest, JobsListReachesTheQueueParsedAndWritesThePage) {
  queue_->pages = {JobPage{{job("a"), job("b")}, "c1.next"}};
  Answer a = post("/jobs/list", R"({"topic":" t ","state":"dead","limit":2,"cursor":"c1.prev"})");
  ASSERT_EQ(a.status, 200) << a.text;
  ASSERT_EQ(queue_->lists.size(), 1u);
  EXPECT_EQ(queue_->lists[0].topic, "t");
  EXPECT_EQ(queue_->lists[0].state, JobState::dead);
  EXPECT_EQ(queue_->lists[0].limit, 2u);
  EXPECT_EQ(queue_->lists[0].cursor, "c1.prev");
  const auto& jobs = a.data().find("jobs")->as_array();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(wire::json::member_string(jobs[0], "id"), "a");
  EXPECT_EQ(wire::json::member_int(jobs[0], "priority"), 9);
  EXPECT_EQ(wire::json::member_int(jobs[0], "dead_since_ms"), 1500);
  EXPECT_EQ(wire::json::member_string(a.data(), "cursor"), "c1.next");

  // The defaults: 100 jobs from the first page; the last page answers a null cursor.
  queue_->lists.clear();
  queue_->pages = {JobPage{{job("a")}, ""}};
  a = post("/jobs/list", R"({"topic":"t","state":"ready"})");
  ASSERT_EQ(a.status, 200) << a.text;
  ASSERT_EQ(queue_->lists.size(), 1u);
  EXPECT_EQ(queue_->lists[0].state, JobState::ready);
  EXPECT_EQ(queue_->lists[0].limit, 16u) << "a first round of what 16 MiB holds at 1 MiB a job";
  EXPECT_EQ(queue_->lists[0].cursor, "");
  EXPECT_TRUE(a.data().find("cursor")->is_null()) << a.text;
}

TEST_F(HttpFlowTest, JobsListRefusesBadInputBeforeTheQueue) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"state":"ready"})", R"(missing field "topic")"},
      {R"({"topic":"t"})", R"(missing field "state")"},
      {R"({"topic":"t","state":"waiting"})",
       R"(field "state" must be "delayed", "ready", "reserved" or "dead", not "waiting")"},
      {R"({"topic":"t","state":"Ready"})", R"(not "Ready")"},
      {R"({"topic":"t","state":1})", R"(field "state" must be a string, not a number)"},
      {R"({"topic":"t","state":"ready","limit":0})", R"(field "limit" is out of range (1 to 1000))"},
      {R"({"topic":"t","state":"ready","limit":-1})", R"(field "limit" is out of range (1 to 1000))"},
      {R"({"topic":"t","state":"ready","limit":1001})",
       R"(field "limit" is out of range (1 to 1000))"},
      {R"({"topic":"t","state":"ready","limit":"10"})",
       R"(field "limit" must be an integer, not a string)"},
      {R"({"topic":"t","state":"ready","limit":2.5})",
       R"(field "limit" must be an integer, not a non-integer number)"},
      {R"({"topic":"t","state":"ready","cursor":7})", R"(field "cursor" must be a string)"},
      {R"({"topic":"t","state":"ready","cusror":"c"})",
       R"(unknown field "cusror" (did you mean "cursor"?))"},
  };
  for (const auto& [body, says] : cases) expect_refused("/jobs/list", body, says);
}

// With large bodies allowed, a page is asked for in rounds that each fit in the answer's cap, and
// a round that does not fit is asked again for what did: the cursor answered follows the last
// job shown.
TEST_F(HttpFlowTest, JobsListStaysWithinTheAnswersCap) {
  http::ApiOptions options;
  options.max_job_bytes = 1000;
  options.max_list_bytes = 5000;
  open(options);
  const std::string big(1500, 'b');
  queue_->pages = {
      JobPage{{job("a"), job("b"), job("c"), job("d"), job("e")}, "c1.after-e"},
      JobPage{{job("f", big), job("g", big), job("h", big), job("i", big), job("j", big)},
              "c1.after-j"},
      JobPage{{job("f", big)}, "c1.after-f"},
  };
  Answer a = post("/jobs/list", R"({"topic":"t","state":"dead","limit":20})");
  ASSERT_EQ(a.status, 200) << a.text;
  ASSERT_EQ(queue_->lists.size(), 3u);
  EXPECT_EQ(queue_->lists[0].limit, 5u);  // 5000 / 1000
  EXPECT_EQ(queue_->lists[1].cursor, "c1.after-e");
  EXPECT_EQ(queue_->lists[2].cursor, "c1.after-e");
  EXPECT_LT(queue_->lists[2].limit, queue_->lists[1].limit);
  const auto& jobs = a.data().find("jobs")->as_array();
  EXPECT_EQ(jobs.size(), 5u + queue_->lists[2].limit) << a.text;
  EXPECT_EQ(wire::json::member_string(a.data(), "cursor"), "c1.after-f");
  EXPECT_TRUE(has(a.message(), "this page stops after")) << a.text;
}

TEST_F(HttpFlowTest, PushTakesAPriorityAndRefusesABadOne) {
  ASSERT_EQ(post("/push", R"({"topic":"t","id":"a","priority":0})").status, 200);
  EXPECT_EQ(queue_->pushed.priority, 0u);
  ASSERT_EQ(post("/push", R"({"topic":"t","id":"b","priority":4294967295})").status, 200);
  EXPECT_EQ(queue_->pushed.priority, 4294967295u);
  ASSERT_EQ(post("/push", R"({"topic":"t","id":"c"})").status, 200);
  EXPECT_EQ(queue_->pushed.priority, kDefaultPriority);
  const std::pair<const char*, const char*> cases[] = {
      {R"({"topic":"t","priority":-1})", R"(field "priority" is out of range (0 to 4294967295))"},
      {R"({"topic":"t","priority":4294967296})",
       R"(field "priority" is out of range (0 to 4294967295))"},
      {R"({"topic":"t","priority":1e30})", R"(field "priority" is out of range)"},
      {R"({"topic":"t","priority":0.5})",
       R"(field "priority" must be an integer, not a non-integer number)"},
      {R"({"topic":"t","priority":"high"})", R"(field "priority" must be an integer, not a string)"},
      {R"({"topic":"t","priorty":3})", R"(unknown field "priorty" (did you mean "priority"?))"},
  };
  const size_t pushes = std::count(queue_->calls.begin(), queue_->calls.end(), "push");
  for (const auto& [body, says] : cases) {
    const Answer a = post("/push", body);
    EXPECT_EQ(a.status, 400) << body << " -> " << a.text;
    EXPECT_TRUE(has(a.message(), says)) << body << " -> " << a.text;
  }
  // A batch: the job with the bad priority is refused, its neighbour pushed with its own.
  Answer batch = post("/push_batch", R"({"jobs":[{"topic":"t","id":"d","priority":-2},)"
                                     R"({"topic":"t","id":"e","priority":7}]})");
  ASSERT_EQ(batch.status, 200) << batch.text;
  const auto& results = batch.data().find("results")->as_array();
  EXPECT_NE(wire::json::member_int(results[0], "code"), 0) << batch.text;
  EXPECT_EQ(wire::json::member_int(results[1], "code"), 0) << batch.text;
  EXPECT_EQ(std::count(queue_->calls.begin(), queue_->calls.end(), "push"), pushes)
      << "a refused push reached the queue";
}

TEST_F(HttpFlowTest, GetShowsThePriority) {
  ASSERT_EQ(post("/push", R"({"topic":"t","id":"a","priority":12,"delay":60})").status, 200);
  Answer a = post("/get", R"({"id":"a"})");
  ASSERT_EQ(a.status, 200) << a.text;
  // The engine on this branch may not keep priorities yet: the field is there, as the queue said.
  ASSERT_NE(a.data().find("priority"), nullptr) << a.text;
}

// Each route is counted under its own name in /metrics.
TEST_F(HttpFlowTest, TheRoutesHaveTheirNamesInMetrics) {
  ASSERT_EQ(post("/limits/set", R"({"topic":"t","max_in_flight":1})").status, 200);
  ASSERT_EQ(post("/limits/clear", R"({"topic":"t"})").status, 200);
  ASSERT_EQ(post("/jobs/list", R"({"topic":"t","state":"ready"})").status, 200);
  EXPECT_EQ(post("/jobs/list", R"({"topic":"t"})").status, 400);
  const std::string text = call(*api_, "/metrics", "", "GET").text;
  for (const char* line : {"delayqd_http_requests_total{route=\"limits_set\",status=\"200\"} 1\n",
                           "delayqd_http_requests_total{route=\"limits_clear\",status=\"200\"} 1\n",
                           "delayqd_http_requests_total{route=\"jobs_list\",status=\"200\"} 1\n",
                           "delayqd_http_requests_total{route=\"jobs_list\",status=\"400\"} 1\n"})
    EXPECT_TRUE(has(text, line)) << line << text;
}

}  // namespace
}  // namespace delayq::testing
