// delayqd's limits on what a request may ask for: durations and times are range-checked against
// the queue's max_delay before any arithmetic (a far-future value must never wrap into a job due
// now), and each refusal names the field and the limit, in the library's words.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "api_harness.h"
#include "common/rules.h"

namespace delayq::testing {
namespace {

using namespace std::chrono_literals;

class HttpLimitsTest : public ApiTest {};

// The reported bug: 8e9 s (or 8e12 ms) from now wrapped past the year 2262 into the past, and
// the job was delivered at once.
TEST_F(HttpLimitsTest, FarReschedulesAreRefusedNotWrapped) {
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"j","delay":60})").code(), 0);
  const TimePoint due = queue_->get("j")->due;
  for (const char* body : {R"({"id":"j","delay":8e9})", R"({"id":"j","delay_ms":8000000000000})",
                           R"({"id":"j","delay":9.5e9})", R"({"id":"j","delay_ms":9300000000000})",
                           R"({"id":"j","due_at_ms":9000000000000000000})"}) {
    Answer a = call("/reschedule", body);
    EXPECT_EQ(a.status, 400) << body << " -> " << a.text;
    EXPECT_TRUE(has(a.message(), "max_delay (3650d)")) << a.text;
    EXPECT_EQ(queue_->get("j")->state, JobState::delayed) << body;
    EXPECT_EQ(queue_->get("j")->due, due) << body;
  }
  EXPECT_TRUE(queue_->reserve("t", 0ms).is(Errc::timeout)) << "nothing may be ready";
}

// The reported bug: a due_at_ms of a whole millisecond became a due time up to 128 ns before it
// (the milliseconds were multiplied into nanoseconds as a double), so that /get showed a due_ms
// one less than was sent, for about a third of the values. Whole milliseconds now stay exact, in
// times and in durations past 2^53 ns (104 days).
TEST_F(HttpLimitsTest, WholeMillisecondsStayExact) {
  const int64_t base = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch() + 24h)
                           .count();
  for (int64_t ms = base; ms < base + 1000; ++ms) {
    const std::string id = "j" + std::to_string(ms);
    const std::string push =
        R"({"topic":"t","id":")" + id + R"(","due_at_ms":)" + std::to_string(ms) + "}";
    ASSERT_EQ(call("/push", push).code(), 0);
    ASSERT_EQ(call("/get", R"({"id":")" + id + R"("})").data().find("due_ms")->as_int(), ms);
    ASSERT_EQ(queue_->get(id)->due, TimePoint(std::chrono::milliseconds(ms)));
  }
  const int64_t far = 200LL * 86'400'000 + 1;  // 200 days and a millisecond
  auto d = rules::user_duration("delay_ms", static_cast<double>(far), rules::Unit::milliseconds,
                                std::chrono::hours(24 * 3650));
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(*d, std::chrono::milliseconds(far));
  auto t = rules::user_time("due_at_ms", static_cast<double>(base), rules::Unit::milliseconds,
                            SystemClock::instance().now(), std::chrono::hours(24 * 3650));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(*t, TimePoint(std::chrono::milliseconds(base)));
}

// Every duration and time a request can carry, far beyond max_delay: refused, naming the field.
TEST_F(HttpLimitsTest, EveryDurationFieldIsCheckedBeforeItIsConverted) {
  struct Case {
    const char* route;
    const char* body;
    const char* field;
  };
  const Case cases[] = {
      {"/push", R"({"topic":"t","delay":9.5e9})", "delay"},
      {"/push", R"({"topic":"t","delay":1e300})", "delay"},
      {"/push", R"({"topic":"t","delay_ms":9300000000000})", "delay_ms"},
      {"/push", R"({"topic":"t","ttr":9.5e9})", "ttr"},
      {"/push", R"({"topic":"t","ttr_ms":9300000000000})", "ttr_ms"},
      {"/push", R"({"topic":"t","retry":{"kind":"fixed","delay":9.5e9}})", "retry.delay"},
      {"/push", R"({"topic":"t","retry":{"kind":"fixed","delay_ms":9300000000000}})",
       "retry.delay_ms"},
      {"/push", R"({"topic":"t","retry":{"kind":"list","delays":[1,9.5e9]}})", "retry.delays[1]"},
      {"/push", R"({"topic":"t","retry":{"kind":"list","delays_ms":[9300000000000]}})",
       "retry.delays_ms[0]"},
      {"/push", R"({"topic":"t","retry":{"kind":"exponential","base":9.5e9}})", "retry.base"},
      {"/push", R"({"topic":"t","retry":{"kind":"exponential","cap_ms":9300000000000}})",
       "retry.cap_ms"},
      {"/pop", R"({"topic":"t","timeout":9.5e9})", "timeout"},
      {"/pop", R"({"topic":"t","timeout_ms":9300000000000})", "timeout_ms"},
      {"/nack", R"({"token":"1:j","delay":9.5e9})", "delay"},
      {"/nack", R"({"token":"1:j","delay_ms":9300000000000})", "delay_ms"},
  };
  for (const Case& c : cases) {
    Answer a = expect_refused({c.route, c.body, std::string(c.field) + " of "});
    EXPECT_TRUE(has(a.message(), "exceeds max_delay (3650d)")) << a.text;
  }
  // Too large for a Duration: shown as the number that was sent.
  EXPECT_EQ(call("/push", R"({"topic":"t","delay":9.5e9})").message(),
            "delay of 9.5e+09s exceeds max_delay (3650d)");
  Answer due = call("/push", R"({"topic":"t","due_at_ms":9000000000000000000})");
  EXPECT_EQ(due.status, 400) << due.text;
  EXPECT_TRUE(has(due.message(), "due_at_ms is ")) << due.text;
  EXPECT_TRUE(has(due.message(), " away, beyond max_delay (3650d)")) << due.text;
  EXPECT_EQ(queue_->stats().pushed, 0u);
}

// Negative values get the library's own words (common/rules), not a generic range.
TEST_F(HttpLimitsTest, NegativeDurationsReadAsTheLibrarySaysThem) {
  Answer a = call("/push", R"({"topic":"t","delay":-5})");
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.message(), "delay is negative (-5s); use 0 for 'now'") << a.text;
  EXPECT_EQ(queue_->push({.topic = "t", .delay = -5s}).status().message(), a.message());
  a = call("/push", R"({"topic":"t","ttr_ms":-1500})");
  EXPECT_TRUE(has(a.message(), "ttr_ms is negative (-1500ms)")) << a.text;
  a = call("/pop", R"({"topic":"t","timeout":-0.5})");
  EXPECT_TRUE(has(a.message(), "timeout is negative (-500ms)")) << a.text;
  a = call("/push", R"({"topic":"t","due_at_ms":-1})");
  EXPECT_EQ(a.status, 400);
  EXPECT_TRUE(has(a.message(), "due_at_ms")) << a.text;
}

// The limit is the queue's max_delay, which delayqd hands to the Api.
TEST_F(HttpLimitsTest, TheLimitIsTheQueuesMaxDelay) {
  http::ApiOptions opt;
  opt.max_delay = 1h;
  EngineOptions engine;
  engine.limits.max_delay = 1h;
  open(opt, engine);
  Answer a = call("/push", R"({"topic":"t","delay":3601})");
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.message(), "delay of 1h1s exceeds max_delay (1h)") << a.text;
  EXPECT_EQ(call("/push", R"({"topic":"t","id":"ok","delay":3600})").code(), 0);
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  a = call("/reschedule",
           R"({"id":"ok","due_at_ms":)" + std::to_string(now_ms + 2 * 3'600'000) + "}");
  EXPECT_EQ(a.status, 400);
  EXPECT_TRUE(has(a.message(), "beyond max_delay (1h)")) << a.text;
  a = call("/pop", R"({"topic":"t","timeout":7200})");
  EXPECT_TRUE(has(a.message(), "timeout of 2h exceeds max_delay (1h)")) << a.text;
}

// Bodies of 4 MiB (delayqd's default --max-body-bytes) in the shapes that cost a parser most.
// Each must be answered, with success or a 4xx naming what was wrong. The caps bound the work by
// construction (at most 256 members per object, 10000 elements per array, 100000 values); the
// time of each is printed, not asserted (the machine is shared): the old reader, whose duplicate
// check compared every pair of keys, needed minutes for the first shape, and this test's ctest
// timeout would catch that.
std::string repeat(size_t bytes, const std::function<std::string(size_t)>& piece,
                   const std::string& open, const std::string& sep, const std::string& close) {
  std::string out = open;
  for (size_t i = 0; out.size() < bytes; ++i) out += (i ? sep : "") + piece(i);
  return out + close;
}

TEST_F(HttpLimitsTest, FourMebibytesOfAnyShapeAreAnsweredWithinTheCaps) {
  constexpr size_t kBody = size_t{4} << 20;
  const auto key = [](size_t i) { return "\"k" + std::to_string(i) + "\":0"; };
  const auto zero = [](size_t) { return std::string("0"); };
  // 256 keys of 40 bytes sharing a 36-byte prefix: the most key comparing within the caps.
  const auto wide_job = [](size_t) {
    std::string o = "{";
    for (int k = 0; k < 256; ++k)
      o += (k ? "," : "") + ("\"" + std::string(36, 'p') + std::to_string(1000 + k) + "\":1");
    return o + "}";
  };
  struct Shape {
    const char* name;
    const char* route;
    std::string body;
    const char* expect;  // in the message
  };
  const std::vector<Shape> shapes = {
      {"many keys", "/push", repeat(kBody, key, "{", ",", "}"),
       "over the cap of 256 members in one object"},
      {"many tiny values", "/push", repeat(kBody, zero, "[", ",", "]"),
       "over the cap of 10000 elements in one array"},
      {"nested tiny values", "/push",
       repeat(
           kBody, [&](size_t) { return repeat(19999, zero, "[", ",", "]"); }, "[", ",", "]"),
       "over the cap of 100000 values in one document"},
      {"deep nesting", "/push", std::string(kBody / 2, '[') + std::string(kBody / 2, ']'),
       "nested deeper than 64"},
      {"long escaped string", "/push",
       repeat(
           kBody, [](size_t) { return std::string("\\u00e9\\n"); }, R"({"topic":"t","body":")", "",
           "\"}"),
       "(delayqd --max-job-bytes)"},
      {"a long number", "/push", R"({"topic":"t","delay":1)" + std::string(kBody, '0') + "}",
       "over the cap of 64 characters in one number"},
      {"wide objects", "/push_batch", repeat(kBody, wide_job, R"({"jobs":[)", ",", "]}"),
       "jobs pushed"},
  };
  for (const Shape& s : shapes) {
    ASSERT_GE(s.body.size(), kBody) << s.name;
    const auto start = std::chrono::steady_clock::now();
    Answer a = call(s.route, s.body);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "[ shape    ] " << s.name << ": HTTP " << a.status << " in " << seconds << " s\n";
    EXPECT_GE(a.status, 200) << s.name;
    EXPECT_LT(a.status, 500) << s.name << ": " << a.text.substr(0, 300);
    EXPECT_TRUE(has(a.message(), s.expect)) << s.name << ": " << a.text.substr(0, 300);
  }
  EXPECT_EQ(call("/push", R"({"topic":"t"})").code(), 0) << "still serving";
}

// The reported bug: a ttr under a millisecond was taken, and the job could never be finished
// (every ack came after its lease ran out; /get showed "ttr": 0). A ttr in seconds is checked
// before it is converted, so that a tiny one cannot round to 0 (the default) either; 0 still
// means the default, and 1 ms is the shortest ttr taken.
TEST_F(HttpLimitsTest, TtrBelowOneMillisecondIsRefused) {
  for (const char* body : {R"({"topic":"t","id":"a","ttr":0.0004})",
                           R"({"topic":"t","id":"a","ttr":0.000999})",
                           R"({"topic":"t","id":"a","ttr":1e-10})",
                           R"({"topic":"t","id":"a","ttr":5e-324})"}) {
    Answer a = expect_refused({"/push", body, "below the minimum of 1ms"});
    EXPECT_TRUE(has(a.message(), "use 0 for the default ttr")) << a.text;
    EXPECT_TRUE(queue_->get("a").is(Errc::not_found)) << body;
  }
  Answer batch = call("/push_batch", R"({"jobs":[{"topic":"t","id":"b","ttr":0.0005}]})");
  EXPECT_TRUE(has(batch.text, "below the minimum of 1ms")) << batch.text;
  EXPECT_TRUE(queue_->get("b").is(Errc::not_found));
  // The library refuses it too, in the same words, whatever sends it.
  auto lib = queue_->push({.topic = "t", .id = "c", .ttr = std::chrono::microseconds(400)});
  EXPECT_TRUE(lib.is(Errc::invalid_argument)) << lib.status().to_string();
  EXPECT_TRUE(has(lib.status().message(), "below the minimum of 1ms")) << lib.status().to_string();
  // The edges: 1 ms in either unit, and 0 (the default, 30 s).
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"s","ttr":0.001})").code(), 0);
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"m","ttr_ms":1})").code(), 0);
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"z","ttr":0})").code(), 0);
  EXPECT_EQ(queue_->get("s")->ttr, 1ms);
  EXPECT_EQ(queue_->get("m")->ttr, 1ms);
  EXPECT_EQ(queue_->get("z")->ttr, 30s);
}

// The reported bug: a reserve over 100 000 topics that timed out named every one of them, a
// message of 1.5 MB. It names the first few and says how many more.
TEST_F(HttpLimitsTest, ReserveTimeoutOverManyTopicsNamesAFew) {
  std::vector<std::string> topics;
  for (int i = 0; i < 100'000; ++i) topics.push_back("topic-" + std::to_string(i));
  auto r = queue_->reserve(topics, 0ms);
  ASSERT_TRUE(r.is(Errc::timeout)) << (r.ok() ? r->id : r.status().to_string());
  const std::string m = r.status().message();
  EXPECT_LT(m.size(), 1024u) << m.substr(0, 2000);
  EXPECT_TRUE(has(m, "'topic-0', 'topic-1', 'topic-2'")) << m.substr(0, 2000);
  EXPECT_TRUE(has(m, "and 99997 more")) << m.substr(0, 2000);
  EXPECT_FALSE(has(m, "topic-3")) << m.substr(0, 2000);
  // A few topics are all named, as before.
  auto two = queue_->reserve(std::vector<std::string>{"x", "y"}, 0ms);
  EXPECT_EQ(two.status().message(), "no job of 'x', 'y' became ready in time");
}

// The reported bug: /stats listed every topic (47 MB at 100 000 topics). It lists at most
// `limit` topics (default 1000, at most 10000) in name order, from after `after`, says whether it
// was cut ("truncated") and where the next page starts ("next_after"); the totals always come.
TEST_F(HttpLimitsTest, StatsListsTopicsInPages) {
  for (int i = 0; i < 1001; ++i) {
    char topic[16];
    std::snprintf(topic, sizeof topic, "t%04d", i);
    ASSERT_EQ(call("/push", std::string(R"({"topic":")") + topic + R"("})").code(), 0);
  }
  Answer all = call("/stats", "", "GET");
  ASSERT_EQ(all.code(), 0) << all.text.substr(0, 300);
  EXPECT_EQ(all.data().find("topics")->as_object().size(), 1000u);
  EXPECT_TRUE(all.data().find("truncated")->as_bool());
  EXPECT_EQ(all.data().find("next_after")->as_string(), "t0999");
  EXPECT_EQ(all.data().find("pushed")->as_int(), 1001);
  EXPECT_TRUE(has(all.message(), "next_after")) << all.message();
  std::vector<std::string> seen;
  std::string after;
  for (int page = 0; page < 20; ++page) {
    const std::string body =
        after.empty() ? R"({"limit":400})" : R"({"limit":400,"after":")" + after + "\"}";
    Answer a = call("/stats", body);
    ASSERT_EQ(a.code(), 0) << a.text.substr(0, 300);
    EXPECT_EQ(a.data().find("pushed")->as_int(), 1001) << "the totals come on every page";
    for (const auto& [name, t] : a.data().find("topics")->as_object()) seen.push_back(name);
    if (!a.data().find("truncated")->as_bool()) {
      EXPECT_EQ(a.data().find("next_after"), nullptr);
      break;
    }
    after = a.data().find("next_after")->as_string();
  }
  ASSERT_EQ(seen.size(), 1001u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.front(), "t0000");
  EXPECT_EQ(seen.back(), "t1000");
  expect_refused({"/stats", R"({"limit":0})", "\"limit\""});
  expect_refused({"/stats", R"({"limit":10001})", "\"limit\""});
}

}  // namespace
}  // namespace delayq::testing
