// The wire of flow control and browsing (issue 22): priority in a job to push, in a job shown and
// in a delivery; a dead job's dead_since; a topic's limits as /limits/set takes them (and every
// refusal of a bad one, in the library's words); /stats's "flow"; a /jobs/list page. Each
// written by one side and read back by the other.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "wire/flow.h"
#include "wire/jobs.h"
#include "wire/json.h"
#include "wire/spec.h"
#include "wire/stats.h"

namespace {

using namespace std::chrono_literals;
using namespace delayq;
namespace json = delayq::wire::json;

json::Value parsed(const std::string& text) {
  auto v = json::parse(text);
  EXPECT_TRUE(v.ok()) << text;
  return v.ok() ? *v : json::Value();
}

template <typename T, typename Write>
json::Value written(const T& value, Write write) {
  json::Writer w;
  write(w, value);
  return parsed(w.str());
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Status read_spec_text(const std::string& text, JobSpec& spec) {
  return wire::read_spec(parsed(text), spec, wire::InputLimits{});
}

TEST(HttpFlowWire, APriorityToPushReadsBackAsWritten) {
  for (uint32_t p : {0u, 1u, 1023u, 1025u, 4294967295u}) {
    JobSpec back;
    ASSERT_TRUE(wire::read_spec(written(JobSpec{.topic = "t", .priority = p}, wire::write_spec),
                                back, wire::InputLimits{})
                    .ok());
    EXPECT_EQ(back.priority, p);
  }
  // The default is not written (an older delayqd refuses the member), and reads as the default.
  json::Writer w;
  wire::write_spec(w, JobSpec{.topic = "t"});
  EXPECT_FALSE(has(w.str(), "priority")) << w.str();
  JobSpec back;
  ASSERT_TRUE(read_spec_text(w.str(), back).ok());
  EXPECT_EQ(back.priority, kDefaultPriority);
}

TEST(HttpFlowWire, ABadPriorityIsRefusedNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"topic":"t","priority":-1})", R"(field "priority" is out of range (0 to 4294967295))"},
      {R"({"topic":"t","priority":4294967296})",
       R"(field "priority" is out of range (0 to 4294967295))"},
      {R"({"topic":"t","priority":99999999999999999999})",
       R"(field "priority" is out of range (0 to 4294967295))"},
      {R"({"topic":"t","priority":1.5})",
       R"(field "priority" must be an integer, not a non-integer number)"},
      {R"({"topic":"t","priority":"5"})", R"(field "priority" must be an integer, not a string)"},
      {R"({"topic":"t","priority":true})", R"(field "priority" must be an integer, not a boolean)"},
  };
  for (const auto& [text, says] : cases) {
    JobSpec spec;
    const Status s = read_spec_text(text, spec);
    EXPECT_EQ(s.code(), Errc::invalid_argument) << text;
    EXPECT_TRUE(has(s.message(), says)) << text << " -> " << s.message();
  }
}

TEST(HttpFlowWire, PriorityAndDeadSinceTravelWithJobsAndDeliveries) {
  const TimePoint due = TimePoint(std::chrono::milliseconds(1'795'288'348'780));
  JobInfo dead{.id = "d", .topic = "t", .state = JobState::dead, .due = due, .priority = 7,
               .dead_since = due + 1500ms + 3ns};
  const json::Value v = written(dead, wire::write_job);
  EXPECT_EQ(json::member_int(v, "priority"), 7);
  EXPECT_EQ(json::member_int(v, "dead_since_ms"), 1'795'288'350'280);
  const JobInfo back = wire::read_job(v);
  EXPECT_EQ(back.priority, 7u);
  EXPECT_EQ(back.dead_since, dead.dead_since);
  // Only a dead job shows dead_since.
  JobInfo ready = dead;
  ready.state = JobState::ready;
  ready.dead_since = {};
  EXPECT_EQ(written(ready, wire::write_job).find("dead_since_ms"), nullptr);
  // A job from a delayqd before priorities reads with the default.
  EXPECT_EQ(wire::read_job(parsed(R"({"id":"a","state":"ready"})")).priority, kDefaultPriority);
  EXPECT_EQ(wire::read_job(parsed(R"({"id":"a","priority":-3})")).priority, kDefaultPriority);

  Delivery d{.id = "a", .topic = "t", .attempt = 1, .token = {.id = "a", .fence = 3},
             .priority = 4294967295u};
  auto got = wire::read_delivery(written(d, wire::write_delivery));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->priority, 4294967295u);
}

TopicLimits limits_of(const std::string& body, Status& s, std::string& topic,
                      Duration max_delay = 24h * 3650) {
  TopicLimits l;
  wire::InputLimits in;
  in.max_delay = max_delay;
  s = wire::read_limits_request(parsed(body), in, topic, l);
  return l;
}

TEST(HttpFlowWire, LimitsReadBackAsWritten) {
  const TopicLimits cases[] = {
      {.rate = TopicLimits::Rate{50, 1s, 10}, .max_in_flight = 4},
      {.rate = TopicLimits::Rate{1, 1500us, 1}},
      {.max_in_flight = 4294967295u},
      {.rate = TopicLimits::Rate{4294967295u, 24h, 1'000'000}},
  };
  for (const TopicLimits& l : cases) {
    // As /limits/set reads it (the client writes this body), and as /stats shows it.
    json::Writer inner;
    wire::write_limits(inner, l);
    const json::Value shown = parsed(inner.str());
    json::Writer request;
    wire::write_limits_request(request, "t", l);
    const std::string body = request.str();
    Status s;
    std::string topic;
    EXPECT_EQ(limits_of(body, s, topic), l) << body;
    EXPECT_TRUE(s.ok()) << body << " -> " << s.to_string();
    EXPECT_EQ(topic, "t");
    EXPECT_EQ(wire::read_limits(shown), l) << inner.str();
  }
  // The period in milliseconds when whole, else in seconds; a burst left out is 1.
  json::Writer w;
  wire::write_limits(w, {.rate = TopicLimits::Rate{50, 1s, 10}});
  EXPECT_EQ(w.str(), R"({"rate":{"count":50,"per_ms":1000,"burst":10}})");
  Status s;
  std::string topic;
  EXPECT_EQ(limits_of(R"({"topic":" t ","rate":{"count":5,"per":0.5}})", s, topic),
            (TopicLimits{.rate = TopicLimits::Rate{5, 500ms, 1}}));
  EXPECT_EQ(topic, "t");
}

TEST(HttpFlowWire, BadLimitsAreRefusedInTheLibrarysWords) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"topic":"t"})", "set a rate or max_in_flight"},
      {R"({"rate":{"count":1,"per_ms":1}})", R"(missing field "topic")"},
      {R"({"topic":"","max_in_flight":1})", R"(field "topic" is empty)"},
      {R"({"topic":"t","max_in_flight":1,"burst":3})",
       R"(unknown field "burst": /limits/set takes topic, rate, max_in_flight)"},
      {R"({"topic":"t","max_inflight":1})",
       R"(unknown field "max_inflight" (did you mean "max_in_flight"?))"},
      {R"({"topic":"t","rate":{"count":1,"per_ms":1,"brust":2}})",
       R"(unknown field "rate.brust" (did you mean "rate.burst"?))"},
      {R"({"topic":"t","rate":"50/s"})", R"(field "rate" must be an object)"},
      {R"({"topic":"t","rate":{"per_ms":1000}})", R"(missing field "rate.count")"},
      {R"({"topic":"t","rate":{"count":5}})", R"(missing field "rate.per_ms")"},
      {R"({"topic":"t","rate":{"count":0,"per_ms":1000}})", "rate count must be at least 1"},
      {R"({"topic":"t","rate":{"count":-1,"per_ms":1000}})",
       R"(field "rate.count" is out of range (0 to 4294967295))"},
      {R"({"topic":"t","rate":{"count":4294967296,"per_ms":1000}})",
       R"(field "rate.count" is out of range (0 to 4294967295))"},
      {R"({"topic":"t","rate":{"count":1.5,"per_ms":1000}})",
       R"(field "rate.count" must be an integer, not a non-integer number)"},
      {R"({"topic":"t","rate":{"count":5,"per_ms":0}})", "rate period must be positive"},
      {R"({"topic":"t","rate":{"count":5,"per_ms":-5}})", "rate.per_ms"},
      {R"({"topic":"t","rate":{"count":5,"per_ms":1.5}})",
       R"(field "rate.per_ms" must be an integer)"},
      {R"({"topic":"t","rate":{"count":5,"per":1,"per_ms":1000}})",
       R"(give "rate.per" or "rate.per_ms", not both)"},
      {R"({"topic":"t","rate":{"count":5,"per":8e9}})", "rate.per"},
      {R"({"topic":"t","rate":{"count":5,"per_ms":1000,"burst":0}})",
       "burst must be between 1 and 1000000, got 0"},
      {R"({"topic":"t","rate":{"count":5,"per_ms":1000,"burst":1000001}})",
       "burst must be between 1 and 1000000, got 1000001"},
      {R"({"topic":"t","rate":{"count":5,"per_ms":1000,"burst":-1}})",
       R"(field "rate.burst" is out of range)"},
      {R"({"topic":"t","max_in_flight":0})", "max_in_flight must be at least 1"},
      {R"({"topic":"t","max_in_flight":-2})", R"(field "max_in_flight" is out of range)"},
      {R"({"topic":"t","max_in_flight":"4"})",
       R"(field "max_in_flight" must be an integer, not a string)"},
  };
  for (const auto& [body, says] : cases) {
    Status s;
    std::string topic;
    limits_of(body, s, topic);
    EXPECT_EQ(s.code(), Errc::invalid_argument) << body;
    EXPECT_TRUE(has(s.message(), says)) << body << " -> " << s.message();
  }
  // A period beyond the queue's max_delay, in the library's words.
  Status s;
  std::string topic;
  limits_of(R"({"topic":"t","rate":{"count":5,"per_ms":7200000}})", s, topic, 1h);
  EXPECT_EQ(s.code(), Errc::invalid_argument);
  EXPECT_TRUE(has(s.message(), "max_delay")) << s.message();
}

TEST(HttpFlowWire, StatsCarryEveryLimitedTopicsFlow) {
  Stats st;
  st.topics["busy"].ready = 3;
  st.flow["busy"] = {.limits = {.rate = TopicLimits::Rate{50, 1s, 10}, .max_in_flight = 4},
                     .tokens = 7, .in_flight = 2, .throttled_rate = 11,
                     .throttled_concurrency = 13};
  st.flow["idle"] = {.limits = {.max_in_flight = 1}};
  const json::Value v = written(st, [](json::Writer& w, const Stats& s) { wire::write_stats(w, s); });
  const json::Value* busy = v.find("flow")->find("busy");
  ASSERT_NE(busy, nullptr);
  EXPECT_EQ(json::member_int(*busy, "tokens"), 7);
  EXPECT_EQ(json::member_int(*busy->find("limits")->find("rate"), "per_ms"), 1000);
  EXPECT_EQ(wire::read_stats(v).flow, st.flow);
  // A page of topics still shows every limited topic.
  json::Writer w;
  const wire::TopicPage page{.after = "zzz", .limit = 1};
  wire::write_stats(w, st, {}, &page);
  EXPECT_EQ(wire::read_stats(parsed(w.str())).flow, st.flow);
  // Stats from a delayqd before flow control: none.
  EXPECT_TRUE(wire::read_stats(parsed(R"({"pushed":1})")).flow.empty());
}

TEST(HttpFlowWire, APageReadsBackAsWritten) {
  JobPage page;
  page.jobs.push_back({.id = "a", .topic = "t", .state = JobState::ready, .priority = 3});
  page.jobs.push_back({.id = "b", .topic = "t", .state = JobState::ready});
  page.cursor = "c1.abc";
  const json::Value v = written(page, wire::write_page);
  const JobPage back = wire::read_page(v);
  ASSERT_EQ(back.jobs.size(), 2u);
  EXPECT_EQ(back.jobs[0].id, "a");
  EXPECT_EQ(back.jobs[0].priority, 3u);
  EXPECT_EQ(back.jobs[1].priority, kDefaultPriority);
  EXPECT_EQ(back.cursor, "c1.abc");
  // The last page: a null cursor.
  json::Writer w;
  wire::write_page(w, JobPage{});
  EXPECT_EQ(w.str(), R"({"jobs":[],"cursor":null})");
  EXPECT_TRUE(wire::read_page(parsed(w.str())).cursor.empty());
}

}  // namespace
