// delayqd's schedule routes (issue 23): /schedules/set, /remove, /get, /list, /pause, /resume,
// over an in-memory engine on a ManualClock, so that occurrences fire when the test moves time.
// Each route's answer as docs/http-api.md shows it, and a bad value of every member refused with
// a 400 naming it, nothing stored.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "api_harness.h"
#include "delayq/engine.h"

namespace delayq::testing {
namespace {

using namespace std::chrono_literals;
using wire::json::member_int;
using wire::json::member_string;
using wire::json::Value;

// 2026-12-01T00:00:00Z: Berlin is at UTC+1, so 09:00 there is 08:00Z.
const TimePoint kDec1{std::chrono::seconds(1'796'083'200)};

class HttpScheduleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions opt;
    opt.clock = &clock_;
    queue_ = Engine::open(opt).value();
    http::ApiOptions a;
    a.default_pop_timeout = 0s;
    api_ = std::make_unique<http::Api>(*queue_, a);
  }
  Answer post(const std::string& route, const std::string& body) {
    return call(*api_, route, body);
  }
  void expect_refused(const std::string& route, const std::string& body, const std::string& says) {
    const Answer a = post(route, body);
    EXPECT_EQ(a.status, 400) << route << " " << body << " -> " << a.text;
    EXPECT_TRUE(has(a.message(), says)) << route << " " << body << " -> " << a.text;
    auto page = queue_->list_schedules(10);
    ASSERT_TRUE(page.ok());
    EXPECT_EQ(page->schedules.size(), stored_) << route << " " << body << " changed the schedules";
  }

  static constexpr const char* kNightly =
      R"({"id":" nightly ","rule":"0 9 * * *","zone":"Europe/Berlin",)"
      R"("job":{"topic":"t","body":"sweep","priority":3,"ttr_ms":60000},)"
      R"("catch_up":"all","catch_up_max":5,"overlap":"skip"})";

  ManualClock clock_{kDec1};
  std::unique_ptr<Engine> queue_;
  std::unique_ptr<http::Api> api_;
  size_t stored_ = 0;  // schedules the queue holds, for expect_refused
};

TEST_F(HttpScheduleTest, SetAnswersTheScheduleWithItsNextRunsInUtc) {
  const Answer a = post("/schedules/set", kNightly);
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.message(), "schedule set");
  const Value& d = a.data();
  EXPECT_EQ(member_string(d, "id"), "nightly");
  EXPECT_EQ(member_string(d, "rule"), "0 9 * * *");
  EXPECT_EQ(member_string(d, "zone"), "Europe/Berlin");
  EXPECT_EQ(member_string(d, "catch_up"), "all");
  EXPECT_EQ(member_int(d, "catch_up_max"), 5);
  EXPECT_EQ(member_string(d, "overlap"), "skip");
  EXPECT_FALSE(d.find("paused")->as_bool());
  EXPECT_TRUE(d.find("last_fired")->is_null());
  EXPECT_EQ(member_int(d, "fired"), 0);
  const Value& job = *d.find("job");
  EXPECT_EQ(member_string(job, "topic"), "t");
  EXPECT_EQ(member_string(job, "body"), "sweep");
  EXPECT_EQ(member_int(job, "priority"), 3);
  EXPECT_EQ(member_int(job, "ttr_ms"), 60000);
  const auto& next = d.find("next")->as_array();
  ASSERT_EQ(next.size(), 5u) << a.text;
  EXPECT_EQ(member_string(next[0], "utc"), "2026-12-01T08:00:00Z");
  EXPECT_EQ(member_int(next[0], "ms"), 1'796'083'200'000 + 8 * 3'600'000);
  EXPECT_EQ(member_string(next[4], "utc"), "2026-12-05T08:00:00Z");

  // The queue holds what was sent.
  auto info = queue_->get_schedule("nightly");
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->spec.job.priority, 3u);
  EXPECT_EQ(info->spec.job.ttr, 60s);
  EXPECT_EQ(info->spec.catch_up, ScheduleSpec::CatchUp::all);
  EXPECT_EQ(info->spec.overlap, ScheduleSpec::Overlap::skip);
}

TEST_F(HttpScheduleTest, GetShowsWhatFiredPauseResumeListAndRemove) {
  ASSERT_EQ(post("/schedules/set", kNightly).status, 200);
  ASSERT_EQ(post("/schedules/set", R"({"id":"often","rule":"every 90s","job":{"topic":"t"},)"
                                   R"("start_ms":1796083200000,"end_ms":1796083500000})")
                .status,
            200);
  clock_.advance(8h);
  Answer a = post("/schedules/get", R"({"id":"nightly"})");
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(member_int(a.data(), "fired"), 1);
  EXPECT_EQ(member_string(*a.data().find("last_fired"), "utc"), "2026-12-01T08:00:00Z");
  const auto& live = a.data().find("live_jobs")->as_array();
  ASSERT_EQ(live.size(), 1u) << a.text;
  EXPECT_EQ(live[0].as_string(), "nightly@2026-12-01T08:00:00Z");

  // "every 90s" from 00:00:00 to 00:05:00 (end excluded): 4 occurrences, all past; catch-up
  // "one" (the default) made one job and passed over three.
  a = post("/schedules/get", R"({"id":"often"})");
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(member_int(a.data(), "start_ms"), 1'796'083'200'000);
  EXPECT_EQ(member_int(a.data(), "end_ms"), 1'796'083'500'000);
  EXPECT_EQ(member_int(a.data(), "fired") + member_int(a.data(), "skipped_catch_up"), 4) << a.text;
  EXPECT_TRUE(a.data().find("next")->as_array().empty()) << a.text;

  a = post("/schedules/pause", R"({"id":"nightly"})");
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.message(), "schedule paused");
  EXPECT_TRUE(a.data().find("paused")->as_bool());
  a = post("/schedules/resume", R"({"id":"nightly"})");
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_FALSE(a.data().find("paused")->as_bool());

  a = post("/schedules/list", R"({"limit":1})");
  ASSERT_EQ(a.status, 200) << a.text;
  ASSERT_EQ(a.data().find("schedules")->as_array().size(), 1u);
  EXPECT_EQ(member_string(a.data().find("schedules")->as_array()[0], "id"), "nightly");
  const std::string cursor = member_string(a.data(), "cursor");
  ASSERT_FALSE(cursor.empty()) << a.text;
  a = post("/schedules/list", R"({"limit":1,"cursor":")" + cursor + R"("})");
  ASSERT_EQ(a.status, 200) << a.text;
  ASSERT_EQ(a.data().find("schedules")->as_array().size(), 1u);
  EXPECT_EQ(member_string(a.data().find("schedules")->as_array()[0], "id"), "often");
  EXPECT_TRUE(a.data().find("cursor")->is_null()) << a.text;
  // No body at all lists the first page.
  EXPECT_EQ(call(*api_, "/schedules/list", "").status, 200);

  a = post("/schedules/remove", R"({"id":"often"})");
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(member_string(a.data(), "id"), "often");
  a = post("/schedules/get", R"({"id":"often"})");
  EXPECT_EQ(a.status, 404) << a.text;
  EXPECT_EQ(a.error(), "not_found");
  for (const char* route : {"/schedules/remove", "/schedules/pause", "/schedules/resume"})
    EXPECT_EQ(post(route, R"({"id":"often"})").status, 404) << route;
  // The job nightly pushed stays.
  EXPECT_TRUE(queue_->get("nightly@2026-12-01T08:00:00Z").ok());
}

// /metrics counts each schedule's occurrences by outcome, and all schedules' together.
TEST_F(HttpScheduleTest, MetricsCountOccurrencesByOutcome) {
  ASSERT_EQ(post("/schedules/set", kNightly).status, 200);
  clock_.advance(8h);   // 09:00 in Berlin: fired
  clock_.advance(24h);  // the next day, the first job still ready: skipped (overlap skip)
  // Every 90 s in a span now past: catch-up "one" pushes one job and passes over the rest.
  ASSERT_EQ(post("/schedules/set", R"({"id":"often","rule":"every 90s","job":{"topic":"t"},)"
                                   R"("start_ms":1796083200000,"end_ms":1796083500000})")
                .status,
            200);
  const std::string text = call(*api_, "/metrics", "", "GET").text;
  for (const char* want : {
           "delayq_schedules 2",
           "delayq_schedule_occurrences_total{schedule=\"nightly\",outcome=\"fired\"} 1",
           "delayq_schedule_occurrences_total{schedule=\"nightly\",outcome=\"skipped_overlap\"} 1",
           "delayq_schedule_occurrences_total{schedule=\"often\",outcome=\"fired\"} 1",
           "delayq_schedule_occurrences_total{schedule=\"often\",outcome=\"skipped_catch_up\"} 3",
           "delayq_schedules_occurrences_total{outcome=\"fired\"} 2",
           "delayq_schedules_occurrences_total{outcome=\"skipped_overlap\"} 1",
           "delayq_schedules_occurrences_total{outcome=\"skipped_catch_up\"} 3",
       })
    EXPECT_TRUE(has(text, want)) << want << "\n" << text;
}

TEST_F(HttpScheduleTest, EveryMemberIsCheckedNamingIt) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"rule":"@daily","job":{"topic":"t"}})", R"(missing field "id")"},
      {R"({"id":5,"rule":"@daily","job":{"topic":"t"}})", R"(field "id" must be)"},
      {R"({"id":"a@b","rule":"@daily","job":{"topic":"t"}})", "'@'"},
      {R"({"id":"a","job":{"topic":"t"}})", R"(missing field "rule")"},
      {R"({"id":"a","rule":"0 0 30 2 *","job":{"topic":"t"}})", "rule"},
      {R"({"id":"a","rule":"61 * * * *","job":{"topic":"t"}})", "minute"},
      {R"({"id":"a","rule":"@daily","zone":"Mars/Olympus","job":{"topic":"t"}})", "zone"},
      {R"({"id":"a","rule":"@daily","zone":7,"job":{"topic":"t"}})", R"(field "zone" must be)"},
      {R"({"id":"a","rule":"@daily"})", R"(missing field "job")"},
      {R"({"id":"a","rule":"@daily","job":"t"})", R"(field "job" must be an object)"},
      {R"({"id":"a","rule":"@daily","job":{"body":"x"}})", R"(in field "job": missing field "topic")"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t","id":"x"}})", R"(field "job.id" is not taken)"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t","delay":1}})", R"("job.delay" is not taken)"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t","due_at_ms":1}})", R"("job.due_at_ms")"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t","priority":-1}})", "priority"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t","ttr_ms":-5}})", "ttr"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t","retry":{"kind":"x"}}})", "retry.kind"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t"},"start_ms":-1})", "start_ms"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t"},"start_ms":"soon"})", R"("start_ms" must be)"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t"},"end_ms":1e300})", "end_ms"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t"},"end_ms":9223372036854775807})", "end_ms"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t"},"start_ms":1796083300000,)"
       R"("end_ms":1796083200000})",
       "end must be after start"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t"},"catch_up":"some"})",
       R"(field "catch_up" must be "skip", "one" or "all", not "some")"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t"},"catch_up_max":0})", "catch_up_max"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t"},"catch_up_max":10001})", "catch_up_max"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t"},"catch_up_max":1e20})", "catch_up_max"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t"},"overlap":"never"})",
       R"(field "overlap" must be "allow" or "skip", not "never")"},
      {R"({"id":"a","rule":"@daily","job":{"topic":"t"},"catchup":"one"})",
       R"(did you mean "catch_up"?)"},
      {R"({"id":"a","rule":"every 0s","job":{"topic":"t"}})", "rule"},
      {R"({"id":"a","rule":"every 999999999d","job":{"topic":"t"}})", "rule"},
  };
  for (const auto& [body, says] : cases) expect_refused("/schedules/set", body, says);

  ASSERT_EQ(post("/schedules/set", kNightly).status, 200);
  stored_ = 1;
  expect_refused("/schedules/list", R"({"limit":0})", "limit");
  expect_refused("/schedules/list", R"({"limit":1001})", "limit");
  expect_refused("/schedules/list", R"({"cursor":5})", R"(field "cursor" must be)");
  expect_refused("/schedules/list", R"({"topic":"t"})", R"(unknown field "topic")");
  for (const char* route :
       {"/schedules/get", "/schedules/remove", "/schedules/pause", "/schedules/resume"}) {
    expect_refused(route, R"({})", R"(missing field "id")");
    expect_refused(route, R"({"id":"nightly","x":1})", R"(unknown field "x")");
  }
}

}  // namespace
}  // namespace delayq::testing
