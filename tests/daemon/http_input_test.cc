// What delayqd refuses in a request and how it says so: members a route does not know (a typo
// must not push a job due now), topic names that could not be popped by name or are not text,
// bodies that are not JSON objects, and the id-form routes on a job that is gone. Also the
// /metrics text for topics stored before topics had to be valid UTF-8, and /dead/list's cap.
#include <gtest/gtest.h>

#include <string>

#include "api_harness.h"
#include "common/format.h"
#include "delayq/redis.h"
#include "engine/store_seam.h"
#include "forwarding_queue.h"
#include "common/rules.h"
#include "redis_server.h"

namespace delayq::testing {
namespace {

using namespace std::chrono_literals;

class HttpInputTest : public ApiTest {};

// The reported bug: {"topic":"order","dealy":1800} pushed a job due at once and answered success.
TEST_F(HttpInputTest, UnknownMembersAreRefusedNamingTheClosestKnownOne) {
  const Refused cases[] = {
      {"/push", R"({"topic":"order","dealy":1800})",
       R"(unknown field "dealy" (did you mean "delay"?))"},
      {"/push", R"({"Topic":"order"})", R"(unknown field "Topic" (did you mean "topic"?))"},
      {"/push", R"({"topic":"order","ttr_s":5})",
       R"(unknown field "ttr_s" (did you mean "ttr_ms"?))"},
      {"/push", R"({"topic":"order","urgency":5})",
       R"(unknown field "urgency": a job takes topic, id, delay, delay_ms, due_at_ms, due_at_ns, ttr, )"},
      {"/push", R"({"topic":"t","retry":{"kind":"list","delay":[1]}})",
       R"(unknown field "retry.delay" (did you mean "retry.delays"?))"},
      {"/push", R"({"topic":"t","retry":{"kind":"fixed","delay":1,"factor":2}})",
       R"(unknown field "retry.factor": retry (kind fixed) takes retry.kind, retry.delay, )"},
      {"/push_batch", R"({"job":[]})", R"(unknown field "job" (did you mean "jobs"?))"},
      {"/pop", R"({"topic":"t","timout":5})",
       R"(unknown field "timout" (did you mean "timeout"?))"},
      {"/finish", R"({"id":"j","tokn":"1:j"})", R"(unknown field "tokn" (did you mean "token"?))"},
      {"/nack", R"({"id":"j","delay_s":1})",
       R"(unknown field "delay_s" (did you mean "delay_ms"?))"},
      {"/delete", R"({"ids":"j"})", R"(unknown field "ids" (did you mean "id"?))"},
      {"/get", R"({"id":"j","x":1})", R"(unknown field "x": /get takes id)"},
      {"/reschedule", R"({"id":"j","due_at":1})",
       R"(unknown field "due_at" (did you mean "due_at_ms"?))"},
      {"/stats", R"({"topic":"t"})", R"(unknown field "topic": /stats takes limit, after)"},
      {"/dead/list", R"({"topic":"t","limt":5})",
       R"(unknown field "limt" (did you mean "limit"?))"},
      {"/dead/requeue", R"({"topc":"t"})", R"(unknown field "topc" (did you mean "topic"?))"},
      {"/dead/purge", R"({"topic":"t","all":true})",
       R"(unknown field "all": /dead/purge takes topic)"},
  };
  for (const Refused& c : cases) expect_refused(c);
  EXPECT_EQ(queue_->stats().pushed, 0u);
  // A batch refuses the job with the typo, not its neighbours.
  Answer batch = call("/push", R"([{"topic":"t","id":"a"},{"topic":"t","dealy":5}])");
  const auto& results = batch.data().find("results")->as_array();
  EXPECT_EQ(results[0].find("code")->as_int(), 0) << batch.text;
  EXPECT_TRUE(has(results[1].find("message")->as_string(), "did you mean \"delay\"")) << batch.text;
}

// Every field of ouqiang/delay-queue's README (routers.go reads no others) is still accepted.
TEST_F(HttpInputTest, EveryOuqiangFieldIsStillAccepted) {
  EXPECT_EQ(call("/push", R"({"topic":"order","id":"15702398321","delay":3600,"ttr":120,
                              "body":"{\"uid\": 10829378,\"created\": 1498657365 }"})")
                .code(),
            0);
  EXPECT_EQ(call("/pop", R"({"topic":"order"})").code(), 0);
  EXPECT_EQ(call("/get", R"({"id":"15702398321"})").code(), 0);
  EXPECT_EQ(call("/finish", R"({"id":"15702398321"})").status, 409);  // not reserved: a state
  EXPECT_EQ(call("/delete", R"({"id":"15702398321"})").code(), 0);
  // Members set to null count as absent, as before.
  EXPECT_EQ(call("/push", R"({"topic":"t","id":null,"delay":null,"body":null})").code(), 0);
}

// A topic with a comma could be pushed but not popped by name ("a,b" pops topics a and b).
TEST_F(HttpInputTest, TopicsWithACommaAreRefusedAtPush) {
  Answer a = call("/push", R"({"topic":"a,b"})");
  EXPECT_EQ(a.status, 400) << a.text;
  EXPECT_TRUE(has(a.message(),
                  "contains a comma: /pop reads \"topic\" as a comma-separated "
                  "list"))
      << a.text;
  Answer batch = call("/push_batch", R"({"jobs":[{"topic":"x,y"}]})");
  EXPECT_TRUE(has(batch.text, "contains a comma")) << batch.text;
  EXPECT_EQ(queue_->stats().pushed, 0u);
}

// Topics must be text: refused by the shared rules, so in the same words by every backend.
TEST_F(HttpInputTest, TopicsThatAreNotUtf8AreRefusedByEveryBackend) {
  const std::string topic =
      "ord\xff"
      "er";
  const std::string want =
      "topic is not valid UTF-8 (byte 3 is 0xff): a topic is a name, shown in stats and metrics; "
      "give it as text";
  EXPECT_EQ(queue_->push({.topic = topic}).status().message(), want);
  EXPECT_TRUE(queue_->push({.topic = topic}).is(Errc::invalid_argument));
  EXPECT_EQ(rules::topic_text_problem("ok ✓"), "");
  RedisServer server;
  ASSERT_TRUE(server.started()) << server.log();
  auto redis = open_redis({.url = server.url()}).value();
  auto r = redis->push({.topic = topic});
  EXPECT_TRUE(r.is(Errc::invalid_argument));
  EXPECT_EQ(r.status().message(), want);
  auto batch = redis->push_batch({JobSpec{.topic = topic}, JobSpec{.topic = "fine"}});
  EXPECT_EQ(batch[0].status().message(), want);
  EXPECT_TRUE(batch[1].ok()) << batch[1].status().to_string();
  // (JSON carries text only: the daemon's reader refuses such bytes before they are a topic.)
  Answer a = call("/push",
                  "{\"topic\":\"ord\xff"
                  "er\"}");
  EXPECT_EQ(a.error(), "bad_json") << a.text;
}

// A topic stored before topics had to be text still makes valid Prometheus text: the bad byte
// shows as \xff (the backslash escaped, as the format wants), quotes and newlines escaped.
TEST(HttpMetrics, TopicsThatAreNotTextAreEscapedInMetrics) {
  const auto record = [](uint64_t seq, std::string topic) {
    return engine::JobRecord{.seq = seq,
                             .id = "j" + std::to_string(seq),
                             .topic = std::move(topic),
                             .due = std::chrono::system_clock::now() + 1h,
                             .ttr = 5s};
  };
  auto q = engine::open_engine(
               {}, nullptr,
               [&](const auto& fn) {
                 if (Status s = fn(record(1,
                                          "ord\xff"
                                          "er"));
                     !s.ok())
                   return s;
                 return fn(record(2, "q\"uo\\te\nx"));
               },
               Stats{})
               .value();
  http::Api api(*q, {});
  Answer m = call(api, "/metrics", "", "GET");
  EXPECT_EQ(m.status, 200);
  EXPECT_TRUE(has(m.text, "delayq_jobs{topic=\"ord\\\\xffer\",state=\"delayed\"} 1\n")) << m.text;
  EXPECT_TRUE(has(m.text, "delayq_jobs{topic=\"q\\\"uo\\\\te\\nx\",state=\"delayed\"} 1\n"))
      << m.text;
  EXPECT_EQ(delayq::invalid_utf8_at(m.text), std::string::npos) << "the whole text is UTF-8";
}

// Issue 14, item 4: messages that point the right way.
TEST_F(HttpInputTest, MessagesSayWhatToDo) {
  Answer form = call("/push", "topic=order&delay=10");
  EXPECT_EQ(form.status, 400);
  EXPECT_EQ(form.error(), "bad_json");
  EXPECT_TRUE(has(form.message(),
                  "the body must be a JSON object, e.g. {\"topic\":\"order\"}; "
                  "this one is not JSON (it starts with \"topic=order&delay=10\"; "
                  "a form-encoded body?"))
      << form.text;
  Answer empty = call("/push", "  ");
  EXPECT_EQ(empty.error(), "bad_json");
  EXPECT_TRUE(has(empty.message(), "the body is empty; it must be a JSON object")) << empty.text;
  Answer object_body = call("/push", R"({"topic":"t","body":{"uid":1}})");
  EXPECT_EQ(object_body.status, 400);
  EXPECT_TRUE(has(object_body.message(), "must be a string, not an object: JSON-encode it first"))
      << object_body.text;
  Answer big = call("/push", R"({"topic":"t","body":")" + std::string((1 << 20) + 1, 'x') + "\"}");
  EXPECT_EQ(big.status, 400);
  EXPECT_EQ(big.message(), "body is 1048577 bytes; the limit is 1048576 (delayqd --max-job-bytes)");

  // The id forms of /touch, /nack and /dead_letter: a job that is gone is not_found (as the error
  // table says), one that nobody holds is invalid_state.
  for (const char* route : {"/touch", "/nack", "/dead_letter"}) {
    Answer gone = call(route, R"({"id":"never-pushed"})");
    EXPECT_EQ(gone.status, 404) << route << " " << gone.text;
    EXPECT_EQ(gone.error(), "not_found") << gone.text;
  }
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"waiting","delay":60})").code(), 0);
  Answer idle = call("/nack", R"({"id":"waiting"})");
  EXPECT_EQ(idle.status, 409);
  EXPECT_EQ(idle.error(), "invalid_state") << idle.text;
  // Reserved by a delivery this daemon did not hand out (as after a restart): pass the token.
  ASSERT_TRUE(queue_->push({.topic = "r", .id = "held"}).ok());
  ASSERT_TRUE(queue_->reserve("r", 0ms).ok());
  Answer held = call("/touch", R"({"id":"held"})");
  EXPECT_EQ(held.error(), "stale_token") << held.text;
  EXPECT_TRUE(has(held.message(), "pass the \"token\" from /pop")) << held.text;
}

// /dead/list answers at most max_list_bytes: the jobs that fit, and says it cut the list.
TEST_F(HttpInputTest, DeadListAnswersAreCapped) {
  http::ApiOptions opt;
  opt.max_list_bytes = 2800;  // two of these jobs (some 1300 bytes each), not three
  open(opt);
  for (int i = 0; i < 3; ++i) {
    const std::string id = "d" + std::to_string(i);
    ASSERT_TRUE(queue_
                    ->push({.topic = "t",
                            .id = id,
                            .body = std::string(1000, 'b'),
                            .retry = RetryPolicy::fixed(0s, 1)})
                    .ok());
    ASSERT_TRUE(queue_->dead_letter(queue_->reserve("t", 0ms)->token).ok());
  }
  Answer cut = call("/dead/list", R"({"topic":"t"})");
  EXPECT_EQ(cut.status, 200) << cut.text;
  EXPECT_EQ(cut.data().find("jobs")->as_array().size(), 2u) << cut.text;
  EXPECT_TRUE(cut.data().find("truncated")->as_bool());
  EXPECT_LE(cut.text.size(), 2800u + 400u);
  EXPECT_TRUE(has(cut.message(),
                  "only the first 2 dead letters fit in one answer (at most 2800 bytes)"))
      << cut.text;
  EXPECT_EQ(http::ApiOptions{}.max_list_bytes, size_t{16} << 20) << "docs/http-api.md says 16 MiB";
  Answer whole = call("/dead/list", R"({"topic":"t","limit":2})");
  EXPECT_FALSE(whole.data().find("truncated")->as_bool()) << whole.text;
  EXPECT_EQ(whole.message(), "ok");
}

// A queue that records the limit of every list_dead() call and makes dead letters.
class ListWatchingQueue final : public ForwardingQueue {
 public:
  std::vector<size_t> limits;
  Result<std::vector<JobInfo>> list_dead(std::string_view topic, size_t limit) override {
    limits.push_back(limit);
    return ForwardingQueue::list_dead(topic, limit);
  }
  void add_dead(const std::string& id, size_t body_bytes) {
    ASSERT_TRUE(push({.topic = "t",
                      .id = id,
                      .body = std::string(body_bytes, 'b'),
                      .retry = RetryPolicy::fixed(0s, 1)})
                    .ok());
    ASSERT_TRUE(dead_letter(reserve("t", 0ms)->token).ok());
  }
};

// What a /dead/list request holds in memory is bounded, not only its answer: the jobs are asked
// for in rounds, and no round asks for more new jobs than the answer's room could hold if each
// body were as large as --max-job-bytes. Small bodies: more rounds, the same answer.
TEST(DeadListMemory, NoRoundAsksForMoreThanTheAnswerCouldHoldAtTheLargestBody) {
  ListWatchingQueue q;
  for (int i = 0; i < 40; ++i) q.add_dead("d" + std::to_string(i), 10);
  http::ApiOptions opt;
  opt.max_list_bytes = 4096;
  opt.max_job_bytes = 1024;  // so a round may add 4 jobs at the most
  http::Api api(q, opt);
  Answer all = call(api, "/dead/list", R"({"topic":"t","limit":40})");
  ASSERT_EQ(all.status, 200) << all.text;
  const size_t listed = all.data().find("jobs")->as_array().size();
  EXPECT_TRUE(all.data().find("truncated")->as_bool()) << "40 jobs of ~150 bytes do not fit in 4096";
  EXPECT_GT(listed, 4u) << "more than the first round's 4: the rounds grew " << all.text;
  EXPECT_TRUE(has(all.message(), "only the first " + std::to_string(listed) + " dead letters"))
      << all.text;
  ASSERT_FALSE(q.limits.empty());
  EXPECT_LE(q.limits.front(), 4u);
  for (size_t i = 1; i < q.limits.size(); ++i) {
    EXPECT_GT(q.limits[i], q.limits[i - 1]);
    EXPECT_LE(q.limits[i] - q.limits[i - 1], 4u) << "round " << i;
  }
  // Fewer dead letters than asked for, all fitting: every one listed, not cut.
  q.limits.clear();
  Answer few = call(api, "/dead/list", R"({"topic":"t","limit":3})");
  EXPECT_EQ(few.data().find("jobs")->as_array().size(), 3u) << few.text;
  EXPECT_FALSE(few.data().find("truncated")->as_bool());
  EXPECT_EQ(q.limits, std::vector<size_t>{3});
  // The default --max-job-bytes (1 MiB) and answer cap (16 MiB): 16 jobs in the first round.
  ListWatchingQueue d;
  for (int i = 0; i < 20; ++i) d.add_dead("e" + std::to_string(i), 10);
  http::Api defaults(d, http::ApiOptions{});
  Answer twenty = call(defaults, "/dead/list", R"({"topic":"t"})");
  EXPECT_EQ(twenty.data().find("jobs")->as_array().size(), 20u) << twenty.text;
  EXPECT_FALSE(twenty.data().find("truncated")->as_bool());
  ASSERT_FALSE(d.limits.empty());
  EXPECT_EQ(d.limits.front(), 16u);
}

}  // namespace
}  // namespace delayq::testing
