// The Redis backend's reading of server replies (src/redis/script_replies.h), without a server:
// RESP bytes through parse_resp() as a connection reads them, then the readers. The replies here
// are ones a server should never send (numbers at the ends of int64: a damaged key, another program
// writing the backend's keys); what matters is that reading them is defined and gives the nearest
// representable value. Each case was found by tests/fuzz/redis_reply_fuzz.cc.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "redis/resp.h"
#include "redis/script_replies.h"

namespace delayq::redis {
namespace {

std::vector<Reply> elements_of(const std::string& resp) {
  Result<std::vector<Reply>> r = parse_resp(resp);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok() || r->size() != 1) return {};
  return std::move(r->front().elements);
}

constexpr const char* kMax = "9223372036854775807";
constexpr const char* kMin = "-9223372036854775808";

TEST(RedisReplies, AJobInfoTtrOutOfRangeSaturates) {
  // get's fields: id, state, attempts, max_attempts, due, lease, ttr (µs), body, policy, priority.
  const std::string job = "*10\r\n$1\r\nj\r\n:2\r\n:1\r\n:10\r\n:1\r\n:2\r\n:";
  const std::string body_policy = "\r\n$1\r\nb\r\n*0\r\n:1024\r\n";
  std::vector<Reply> e = elements_of(job + kMax + body_policy);
  ASSERT_EQ(e.size(), 10u);
  EXPECT_EQ(read_job_info(e, 0, "t").ttr, Duration::max());
  e = elements_of(job + kMin + body_policy);
  ASSERT_EQ(e.size(), 10u);
  EXPECT_EQ(read_job_info(e, 0, "t").ttr, Duration::min());
  e = elements_of(job + "30000000" + body_policy);  // 30 s, the usual case, unchanged
  ASSERT_EQ(e.size(), 10u);
  EXPECT_EQ(read_job_info(e, 0, "t").ttr, std::chrono::seconds(30));
}

// The policy of get and list_dead: {kind, base, factor, cap, jitter, {delays}}, the doubles as
// text; what is missing or malformed keeps RetryPolicy's default, out-of-range numbers saturate.
TEST(RedisReplies, AJobInfoCarriesItsRetryPolicy) {
  const std::string job =
      "*10\r\n$1\r\nj\r\n:0\r\n:0\r\n:4\r\n:1\r\n:0\r\n:30000000\r\n$1\r\nb\r\n";
  const std::string prio = ":1024\r\n";
  std::vector<Reply> e = elements_of(
      job + "*6\r\n:2\r\n:1500000\r\n$3\r\n1.5\r\n:60000000\r\n$19\r\n0.20000000000000001\r\n*0\r\n" + prio);
  ASSERT_EQ(e.size(), 10u);
  RetryPolicy want = RetryPolicy::exponential(1500ms, 1.5, 1min, 0.2, 4);
  EXPECT_EQ(read_job_info(e, 0, "t").retry, want);

  e = elements_of(job + "*6\r\n:1\r\n:0\r\n$1\r\n2\r\n:0\r\n$1\r\n0\r\n*2\r\n:120000000\r\n:600000000\r\n" + prio);
  ASSERT_EQ(e.size(), 10u);
  const RetryPolicy list = read_job_info(e, 0, "t").retry;
  EXPECT_EQ(list.kind, RetryPolicy::Kind::list);
  EXPECT_EQ(list.delays, (std::vector<Duration>{2min, 10min}));
  EXPECT_EQ(list.max_attempts, 4u);  // the job's max_attempts, whatever the list's length

  e = elements_of(job + "*5\r\n:0\r\n:" + kMax + "\r\n$3\r\nabc\r\n:" + kMin + "\r\n:3\r\n" + prio);
  ASSERT_EQ(e.size(), 10u);
  const RetryPolicy odd = read_job_info(e, 0, "t").retry;
  EXPECT_EQ(odd.kind, RetryPolicy::Kind::fixed);
  EXPECT_EQ(odd.base, Duration::max());
  EXPECT_EQ(odd.factor, RetryPolicy().factor);  // not a number: the default
  EXPECT_EQ(odd.cap, Duration::min());
  EXPECT_EQ(odd.jitter, 3.0);  // an integer reply is read as it is
  EXPECT_TRUE(odd.delays.empty());  // no delays element
}

// A job's priority (get, list_dead, and each job of a claim): a u32 as sent; a number no script
// sends (negative, beyond 32 bits, not a number) reads as the default rather than wrapping.
TEST(RedisReplies, APriorityIsAU32OrTheDefault) {
  const auto prio = [](const std::string& resp) {
    const std::vector<Reply> one = *parse_resp(resp);
    return read_priority(one.at(0));
  };
  EXPECT_EQ(prio(":0\r\n"), 0u);
  EXPECT_EQ(prio(":7\r\n"), 7u);
  EXPECT_EQ(prio(":4294967295\r\n"), 4294967295u);
  EXPECT_EQ(prio(":4294967296\r\n"), kDefaultPriority);
  EXPECT_EQ(prio(":-1\r\n"), kDefaultPriority);
  EXPECT_EQ(prio("$3\r\nabc\r\n"), kDefaultPriority);
  // A claim of two jobs: 9 fields each, the priority last.
  std::vector<Reply> e = elements_of(
      "*19\r\n:0\r\n"
      "$1\r\na\r\n$1\r\nt\r\n$0\r\n\r\n:1\r\n:3\r\n:5\r\n:1\r\n:2\r\n:9\r\n"
      "$1\r\nb\r\n$1\r\nt\r\n$0\r\n\r\n:1\r\n:3\r\n:6\r\n:1\r\n:2\r\n:1024\r\n");
  std::vector<Delivery> got;
  ASSERT_TRUE(read_deliveries(e, &got));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].priority, 9u);
  EXPECT_EQ(got[1].id, "b");
  EXPECT_EQ(got[1].priority, kDefaultPriority);
}

// A claim that found nothing ready says how long until the next due time or lease deadline.
TEST(RedisReplies, AWaitOutOfRangeSaturates) {
  std::vector<Reply> e = elements_of(std::string("*2\r\n:6\r\n:") + kMax + "\r\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(read_next_wait(e), Duration::max());
  e = elements_of("*2\r\n:6\r\n:29223372036854775\r\n");  // the input the fuzzer found
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(read_next_wait(e), Duration::max());
  e = elements_of("*2\r\n:6\r\n:1500\r\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(read_next_wait(e), std::chrono::microseconds(1500));
  e = elements_of("*2\r\n:6\r\n:-1\r\n");  // nothing scheduled at all
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(read_next_wait(e), std::nullopt);
}

// A reschedule refused as too far away says by how much `when` lies beyond the server's now.
TEST(RedisReplies, TheServersNowFromARefusalSaturates) {
  const int64_t when_us = 1'704'067'200'000'000;  // 2024-01-01, as the client sends it
  std::vector<Reply> e = elements_of(std::string("*2\r\n:1\r\n:") + kMin + "\r\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(read_server_now(when_us, e), TimePoint::max());
  EXPECT_EQ(read_server_now(0, e), TimePoint::max());  // the input the fuzzer found
  e = elements_of(std::string("*2\r\n:1\r\n:") + kMax + "\r\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(read_server_now(-when_us, e), TimePoint::min());
  e = elements_of("*2\r\n:1\r\n:1000000\r\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(read_server_now(when_us, e), from_us(when_us) - std::chrono::seconds(1));
}

// A script's refusal comes back as a value (not stashed anywhere), in the engine's words for
// what the call asked.
TEST(RedisReplies, RefusalsAreTypedOutcomesInTheEnginesWords) {
  const Rules rules(Limits{std::chrono::hours(1), 1024, std::chrono::seconds(30), RetryPolicy{}});
  const Token t{"j", 7};
  std::vector<Reply> r = *parse_resp("*3\r\n:4\r\n:2\r\n:3\r\n");  // stale: reserved, 3
  Result<JobAnswer> a = read_job_answer(r.at(0), kAck);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(std::holds_alternative<Refusal>(*a));
  const Status stale =
      refusal_status(std::get<Refusal>(*a), {.script = kAck, .id = t.id, .token = &t}, rules);
  EXPECT_TRUE(stale.is(Errc::stale_token));
  EXPECT_EQ(stale.to_string(), Rules::stale(t, JobState::reserved, 3).to_string());
  // get never refuses a token: such a reply is corrupt, named after its script.
  const Status odd = refusal_status(std::get<Refusal>(*a), {.script = kGet, .id = t.id}, rules);
  EXPECT_TRUE(odd.is(Errc::corrupt));
  EXPECT_NE(odd.message().find("'get'"), std::string::npos) << odd.to_string();

  r = *parse_resp("*1\r\n:3\r\n");  // no such job
  a = read_job_answer(r.at(0), kCancel);
  ASSERT_TRUE(a.ok() && std::holds_alternative<Refusal>(*a));
  EXPECT_EQ(
      refusal_status(std::get<Refusal>(*a), {.script = kCancel, .id = "j"}, rules).to_string(),
      Rules::not_found("j").to_string());

  r = *parse_resp("*2\r\n:5\r\n:3\r\n");  // requeue_dead of a job that is not dead
  a = read_job_answer(r.at(0), kRequeueDead);
  ASSERT_TRUE(a.ok() && std::holds_alternative<Refusal>(*a));
  EXPECT_EQ(
      refusal_status(std::get<Refusal>(*a), {.script = kRequeueDead, .id = "j"}, rules).to_string(),
      Rules::requeue_refused("j", JobState::dead).to_string());

  r = *parse_resp("*2\r\n:99\r\n$5\r\nother\r\n");  // the job lives in topic "other"
  a = read_job_answer(r.at(0), kTouch);
  ASSERT_TRUE(a.ok() && std::holds_alternative<Elsewhere>(*a));
  EXPECT_EQ(std::get<Elsewhere>(*a).topic, "other");

  r = *parse_resp("*1\r\n:42\r\n");  // no such code
  EXPECT_TRUE(read_job_answer(r.at(0), kTouch).is(Errc::corrupt));
  r = *parse_resp("*1\r\n:4\r\n");  // a stale token without the job's state
  EXPECT_TRUE(read_job_answer(r.at(0), kAck).is(Errc::corrupt));
}

// reschedule refused as too far away: the engine's message, measured from the server's now.
TEST(RedisReplies, ARescheduleTooFarIsMeasuredFromTheServersNow) {
  const Rules rules(Limits{std::chrono::hours(1), 1024, std::chrono::seconds(30), RetryPolicy{}});
  const int64_t when_us = 1'704'067'200'000'000;                      // 2024-01-01
  std::vector<Reply> r = *parse_resp("*2\r\n:1\r\n:3600000001\r\n");  // 1 h and 1 µs ahead
  Result<JobAnswer> a = read_job_answer(r.at(0), kReschedule);
  ASSERT_TRUE(a.ok() && std::holds_alternative<Refusal>(*a));
  const JobCall call{
      .script = kReschedule, .id = "j", .when = from_us(when_us), .when_us = when_us};
  const Status s = refusal_status(std::get<Refusal>(*a), call, rules);
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
  EXPECT_EQ(s.to_string(), rules
                               .reschedule_refused("j", JobState::delayed, from_us(when_us),
                                                   from_us(when_us - 3'600'000'001))
                               .to_string());
}

// A reply whose numbers put the server's now out of range (damaged, or not from our scripts)
// is measured without overflow: found by redis_reply_fuzz (signed overflow in when - now), once
// with a server now far in the future and once with the earliest there is.
TEST(RedisReplies, ARescheduleRefusalWithAServerNowOutOfRangeDoesNotOverflow) {
  const Rules rules(Limits{std::chrono::hours(1), 1024, std::chrono::seconds(30), RetryPolicy{}});
  for (const char* reply : {"*2\r\n:1\r\n:31530006000000002\r\n",
                            "*2\r\n:1\r\n:3153153600200000001\r\n"}) {
    SCOPED_TRACE(reply);
    std::vector<Reply> r = *parse_resp(reply);
    Result<JobAnswer> a = read_job_answer(r.at(0), kReschedule);
    ASSERT_TRUE(a.ok() && std::holds_alternative<Refusal>(*a));
    const JobCall call{.script = kReschedule, .id = "j", .when = from_us(0), .when_us = 0};
    const Status s = refusal_status(std::get<Refusal>(*a), call, rules);
    EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
    EXPECT_NE(s.message().find("beyond max_delay (1h)"), std::string::npos) << s.message();
  }
}

// The stats hash: the totals by name and the lateness counters (late:<f|r>:<bucket|su|cl>:<topic>,
// the topic last, so that it may hold anything); other fields are skipped.
TEST(RedisReplies, TheStatsHashGivesTotalsAndLatenessPerTopic) {
  std::string resp = "*18\r\n";
  for (const char* kv : {"delivered", "7", "late:f:05:a:b", "2", "late:f:su:a:b", "6000",
                         "late:r:22:a:b", "1", "late:r:cl:a:b", "1", "late:f:00:", "9",
                         "late:x:00:t", "9", "late:f:99:t", "9", "late:f:0x:t", "9"})
    resp += "$" + std::to_string(std::string(kv).size()) + "\r\n" + kv + "\r\n";
  Result<std::vector<Reply>> r = parse_resp(resp);
  ASSERT_TRUE(r.ok() && r->size() == 1) << r.status().to_string();
  Stats st;
  read_totals(r->front(), st);
  EXPECT_EQ(st.delivered, 7u);
  ASSERT_EQ(st.timing.size(), 1u) << "malformed fields are skipped";
  const TopicTiming& t = st.timing.at("a:b");
  EXPECT_EQ(t.first.count, 2u);
  EXPECT_EQ(t.first.buckets[5], 2u);
  EXPECT_DOUBLE_EQ(t.first.sum_seconds, 0.006);
  EXPECT_EQ(t.retry.count, 1u);
  EXPECT_EQ(t.retry.buckets[22], 1u);
  EXPECT_EQ(t.retry.clamped, 1u);
}

// A topic's row of a stats reply: counts, the delayed jobs due before each window's end (each
// including the one before), the age of the front of the ready line in µs.
TEST(RedisReplies, ATopicsRowGivesItsWindowsAndRefusesCountsThatDoNotNest) {
  std::vector<Reply> e = elements_of("*1\r\n*9\r\n:5\r\n:1\r\n:0\r\n:0\r\n:1\r\n:1\r\n:3\r\n"
                                     ":4\r\n:2500000\r\n");
  ASSERT_EQ(e.size(), 1u);
  std::optional<TopicTiming> t = read_topic_timing(e[0]);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->due, (DueWindows{1, 0, 2, 1, 1}));
  EXPECT_EQ(t->oldest_ready, std::chrono::milliseconds(2500));
  e = elements_of("*1\r\n*9\r\n:5\r\n:1\r\n:0\r\n:0\r\n:3\r\n:1\r\n:3\r\n:4\r\n:0\r\n");
  EXPECT_FALSE(read_topic_timing(e[0]).has_value());
}

}  // namespace
}  // namespace delayq::redis
