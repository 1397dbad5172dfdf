// The wire (src/wire): the JSON form of each value delayqd and its clients exchange, written by
// one side and read by the other (the daemon writes jobs, deliveries and stats that the CLI, the
// tests and the benchmark read; the CLI writes jobs to push that the daemon reads), and the
// error words of the answers.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <tuple>

#include "wire/answer.h"
#include "wire/http_reply.h"
#include "wire/jobs.h"
#include "wire/json.h"
#include "wire/spec.h"
#include "wire/stats.h"

namespace {

using namespace std::chrono_literals;
using namespace delayq;
namespace json = delayq::wire::json;

template <typename T, typename Write>
json::Value written(const T& value, Write write) {
  json::Writer w;
  write(w, value);
  auto v = json::parse(w.str());
  EXPECT_TRUE(v.ok()) << w.str();
  return v.ok() ? *v : json::Value();
}

// Every member of each value, compared (the library's types have no operator==).
bool same(const JobSpec& a, const JobSpec& b) {
  return std::tie(a.topic, a.id, a.delay, a.due_at, a.ttr, a.body, a.retry) ==
         std::tie(b.topic, b.id, b.delay, b.due_at, b.ttr, b.body, b.retry);
}
bool same(const JobInfo& a, const JobInfo& b) {
  return std::tie(a.id, a.topic, a.state, a.attempts, a.max_attempts, a.due, a.lease_deadline,
                  a.ttr, a.body, a.retry) == std::tie(b.id, b.topic, b.state, b.attempts,
                                                      b.max_attempts, b.due, b.lease_deadline,
                                                      b.ttr, b.body, b.retry);
}
bool same(const Delivery& a, const Delivery& b) {
  return std::tie(a.id, a.topic, a.body, a.attempt, a.max_attempts, a.token, a.due,
                  a.lease_deadline) == std::tie(b.id, b.topic, b.body, b.attempt, b.max_attempts,
                                                b.token, b.due, b.lease_deadline);
}

JobSpec read_back(const JobSpec& spec) {
  JobSpec back;
  const Status s = wire::read_spec(written(spec, wire::write_spec), back, wire::InputLimits{});
  EXPECT_TRUE(s.ok()) << s.to_string();
  return back;
}

TEST(HttpWire, AJobToPushReadsBackAsWritten) {
  const TimePoint at = TimePoint(std::chrono::milliseconds(1'795'288'348'780));
  JobSpec spec{.topic = "order", .id = "o-42", .due_at = at, .ttr = 90s, .body = "2 x \"beans\""};
  for (const RetryPolicy& p : {RetryPolicy::list({2min, 10min, 1h}), RetryPolicy::fixed(1500ms, 5),
                               RetryPolicy::exponential(1s, 2, 1h, 0.2, 10)}) {
    spec.retry = p;
    EXPECT_TRUE(same(read_back(spec), spec));
  }
  // A delay finer than a millisecond goes in seconds and keeps its microseconds; a due time is
  // rounded up, never earlier than asked.
  const JobSpec fine = read_back({.topic = "t", .delay = 1500us});
  EXPECT_EQ(fine.delay, Duration(1500us));
  const JobSpec up = read_back({.topic = "t", .due_at = at + 1us});
  EXPECT_EQ(up.due_at, at + 1ms);
}

TEST(HttpWire, JobsAndDeliveriesReadBackAsWritten) {
  const TimePoint due = TimePoint(std::chrono::milliseconds(1'795'288'348'780));
  JobInfo job{.id = "o-42",
              .topic = "order",
              .state = JobState::reserved,
              .attempts = 2,
              .max_attempts = 10,
              .due = due,
              .lease_deadline = due + 30s,
              .ttr = 30s,
              .body = "b",
              .retry = RetryPolicy::exponential(1500ms, 1.5, 1h, 0.2, 10)};
  const json::Value j = written(job, wire::write_job);
  EXPECT_TRUE(same(wire::read_job(j), job));
  // What ouqiang/delay-queue clients read: the due time in unix seconds, ttr in seconds.
  EXPECT_EQ(j.find("delay")->as_int(), 1'795'288'348);
  EXPECT_EQ(j.find("ttr")->as_int(), 30);
  // The policy in the form /push takes: it reads back as a spec's policy too.
  json::Writer policy;
  wire::write_retry(policy, job.retry);
  const std::string push = R"({"topic":"t","retry":)" + policy.str() + "}";
  const auto pushed = json::parse(push);
  ASSERT_TRUE(pushed.ok()) << push;
  JobSpec spec;
  ASSERT_TRUE(wire::read_spec(*pushed, spec, wire::InputLimits{}).ok()) << push;
  EXPECT_EQ(spec.retry, job.retry);
  // Each kind, and list delays finer than a millisecond (then all in seconds).
  for (const RetryPolicy& p :
       {RetryPolicy::fixed(0ms, 1), RetryPolicy::fixed(2500us, 3), RetryPolicy::list({2min, 10min}),
        RetryPolicy::list({1500us, 1s}), RetryPolicy::exponential(250us, 3, 1min, 0, 2)}) {
    job.retry = p;
    json::Writer w;
    wire::write_job(w, job);
    EXPECT_EQ(wire::read_job(written(job, wire::write_job)).retry, p) << w.str();
  }
  // A ttr under a second is 1 in whole seconds, never 0 (which /push reads as the default).
  job.ttr = 500ms;
  EXPECT_EQ(written(job, wire::write_job).find("ttr")->as_int(), 1);
  EXPECT_EQ(written(job, wire::write_job).find("ttr_ms")->as_int(), 500);
  // A job from a delayqd that did not show the policy: max_attempts 0, not a made-up policy.
  auto old = json::parse(R"({"id":"o","topic":"t","state":"ready","max_attempts":3})");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(wire::read_job(*old).retry.max_attempts, 0u);

  Delivery d{.id = "o-42",
             .topic = "order",
             .body = "b",
             .attempt = 1,
             .max_attempts = 3,
             .token = Token{"o-42", 7},
             .due = due,
             .lease_deadline = due + 30s};
  auto got = wire::read_delivery(written(d, wire::write_delivery));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_TRUE(same(*got, d));
  // A pop that got nothing answers data null: no delivery.
  EXPECT_TRUE(wire::read_delivery(json::Value()).is(Errc::invalid_argument));
}

TEST(HttpWire, StatsReadBackAsWritten) {
  Stats s;
  s.pushed = 5;
  s.acked = 3;
  s.released = 1;
  s.topics["order"] = TopicStats{1, 2, 3, 4};
  json::Writer w;
  wire::write_stats(w, s, {{"waiting_pops", 9}});
  EXPECT_EQ(w.str().find("\"released\":1,\"waiting_pops\":9,\"topics\":"),
            w.str().find("\"released\""))
      << w.str();
  const Stats back = wire::read_stats(*json::parse(w.str()));
  EXPECT_EQ(back.pushed, 5u);
  EXPECT_EQ(back.acked, 3u);
  EXPECT_EQ(back.released, 1u);
  EXPECT_EQ(back.topics, s.topics);
}

TEST(HttpWire, TimingReadsBackAsWritten) {
  Stats s;
  s.topics["busy"] = TopicStats{.delayed = 3, .ready = 1};
  TopicTiming& t = s.timing["busy"];
  t.due = DueWindows{1, 0, 1, 0, 1};
  t.oldest_ready = 1500ms;
  t.first.buckets[3] = 2;
  t.first.buckets[22] = 1;
  t.first.count = 3;
  t.first.sum_seconds = 14400.0021;
  t.retry.buckets[0] = 1;
  t.retry.count = 1;
  t.retry.clamped = 1;
  s.timing["gone"].first.buckets[5] = 1;  // no live job left: only its lateness
  s.timing["gone"].first.count = 1;
  json::Writer w;
  wire::write_stats(w, s);
  const Stats back = wire::read_stats(*json::parse(w.str()));
  EXPECT_EQ(back.topics, s.topics) << w.str();
  EXPECT_EQ(back.timing, s.timing) << w.str();
  // The bounds come along, in seconds, for a reader that computes quantiles.
  const auto parsed = json::parse(w.str());
  ASSERT_TRUE(parsed.ok());
  const json::Value* bounds = parsed->find("lateness_bounds_s");
  ASSERT_NE(bounds, nullptr);
  ASSERT_EQ(bounds->as_array().size(), Lateness::kBounds.size());
  EXPECT_DOUBLE_EQ(bounds->as_array().front().as_double(), 0.0001);
  EXPECT_DOUBLE_EQ(bounds->as_array().back().as_double(), 14400);
}

TEST(HttpWire, AnswersAndTheirErrorWords) {
  auto ok = wire::read_answer(wire::answer_json(0, "pushed", R"({"id":"a"})"));
  ASSERT_TRUE(ok.has_value());
  EXPECT_TRUE(ok->ok());
  EXPECT_EQ(json::member_string(ok->data, "id"), "a");
  auto refused = wire::read_answer(wire::refusal_json("not_found", "no job with id 'a'"));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->code, 1);
  EXPECT_EQ(refused->error, "not_found");
  EXPECT_TRUE(refused->data.is_null());
  EXPECT_FALSE(wire::read_answer("<html>502 Bad Gateway</html>").has_value());

  // An Errc's own name, a refusal's nearest Errc, anything else unavailable.
  EXPECT_EQ(wire::errc_of(to_string(Errc::stale_token)), Errc::stale_token);
  EXPECT_EQ(wire::errc_of(wire::to_string(wire::Refusal::bad_json)), Errc::invalid_argument);
  EXPECT_EQ(wire::errc_of(wire::to_string(wire::Refusal::shutting_down)), Errc::unavailable);
  EXPECT_EQ(wire::errc_of("ok"), Errc::unavailable);
  EXPECT_EQ(wire::errc_of("teapot"), Errc::unavailable);
}

// Answers read off a connection's bytes: framed by Content-Length, by chunks or by the end of
// the connection; an interim 100 first; two answers in one read; answers cut short; not HTTP.
TEST(HttpWire, RepliesAreReadOffTheBytes) {
  using wire::ReplyParse;
  std::string bytes =
      "HTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 200 OK\r\ncontent-LENGTH: 5\r\nConnection: keep-alive\r\n\r\nhello"
      "HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\nConnection: close"
      "\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  wire::HttpReply r;
  ASSERT_EQ(wire::take_reply(bytes, false, r), ReplyParse::done);
  EXPECT_EQ(r.status, 100);
  EXPECT_EQ(r.body, "");
  ASSERT_EQ(wire::take_reply(bytes, false, r), ReplyParse::done);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
  EXPECT_FALSE(r.close);
  ASSERT_EQ(wire::take_reply(bytes, false, r), ReplyParse::done);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body, "abcde");
  EXPECT_TRUE(r.close);
  EXPECT_TRUE(bytes.empty());
  EXPECT_EQ(wire::take_reply(bytes, true, r), ReplyParse::cut);  // closed, nothing more

  std::string until_close = "HTTP/1.0 200 OK\r\n\r\nall of it";
  EXPECT_EQ(wire::take_reply(until_close, false, r), ReplyParse::incomplete);
  ASSERT_EQ(wire::take_reply(until_close, true, r), ReplyParse::done);
  EXPECT_EQ(r.body, "all of it");

  std::string half = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf";
  EXPECT_EQ(wire::take_reply(half, false, r), ReplyParse::incomplete);
  EXPECT_EQ(wire::take_reply(half, true, r), ReplyParse::cut);
  std::string junk = "SSH-2.0-OpenSSH_9.2\r\n\r\n";
  EXPECT_EQ(wire::take_reply(junk, false, r), ReplyParse::not_http);
  std::string bad_chunk = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
  EXPECT_EQ(wire::take_reply(bad_chunk, false, r), ReplyParse::not_http);
}

}  // namespace
