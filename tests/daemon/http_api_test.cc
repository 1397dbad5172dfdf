// The delayqd routes without sockets: requests straight into delayq::http::Api over an
// in-memory engine, answers checked as JSON.
//
// Kept whole over ~400 lines: every test drives the one ApiTest fixture (tests/support), route
// after route, so that all the routes' answers are read in one place.
#include "delayqd/api.h"

#include <gtest/gtest.h>

#include <future>
#include <regex>
#include <thread>

#include "api_harness.h"
#include "delayq/engine.h"
#include "wire/json.h"

namespace {

using namespace std::chrono_literals;
using delayq::http::Api;
using delayq::http::ApiOptions;
using delayq::http::Request;
using delayq::http::Response;
using delayq::testing::has;
namespace json = delayq::wire::json;

using HttpApiTest = delayq::testing::ApiTest;

TEST_F(HttpApiTest, OuqiangFlowPushPopFinish) {
  auto push = call("/push", R"({"topic":"order","id":"15702398321","delay":0,"ttr":120,
                               "body":"{\"uid\": 10829378}"})");
  EXPECT_EQ(push.status, 200);
  EXPECT_EQ(push.code(), 0) << push.text;

  auto pop = call("/pop", R"({"topic":"order"})");
  ASSERT_EQ(pop.code(), 0) << pop.text;
  ASSERT_TRUE(pop.data().is_object()) << pop.text;
  EXPECT_EQ(pop.data().find("id")->as_string(), "15702398321");
  EXPECT_EQ(pop.data().find("body")->as_string(), "{\"uid\": 10829378}");

  auto finish = call("/finish", R"({"id":"15702398321"})");
  EXPECT_EQ(finish.code(), 0) << finish.text;
  EXPECT_EQ(queue_->stats().acked, 1u);

  auto get = call("/get", R"({"id":"15702398321"})");
  EXPECT_EQ(get.code(), 0);
  EXPECT_TRUE(get.data().is_null());

  auto empty = call("/pop", R"({"topic":"order"})");
  EXPECT_EQ(empty.status, 200);
  EXPECT_EQ(empty.code(), 0);
  EXPECT_TRUE(empty.data().is_null());
}

TEST_F(HttpApiTest, GetReportsTheOuqiangJobShape) {
  const auto before = std::chrono::system_clock::now();
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"j","delay":3600,"ttr":30,"body":"b"})").code(), 0);
  auto get = call("/get", R"({"id":"j"})");
  ASSERT_EQ(get.code(), 0) << get.text;
  const auto& d = get.data();
  EXPECT_EQ(d.find("topic")->as_string(), "t");
  EXPECT_EQ(d.find("id")->as_string(), "j");
  EXPECT_EQ(d.find("ttr")->as_int(), 30);
  EXPECT_EQ(d.find("body")->as_string(), "b");
  const int64_t due = d.find("delay")->as_int();  // unix seconds
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          before.time_since_epoch()).count();
  EXPECT_GE(due, now + 3599);
  EXPECT_LE(due, now + 3600 + 600);  // generous: a slow machine
  EXPECT_EQ(d.find("state")->as_string(), "delayed");
}

// /get shows what the queue applies to the job: the ttr and retry policy it was pushed with, or
// the queue's defaults; the policy in the form /push takes, so that it can be pushed again as it
// is. /dead/list shows the same.
TEST_F(HttpApiTest, GetShowsTheEffectiveTtrAndRetryPolicy) {
  delayq::EngineOptions engine;
  engine.limits.default_ttr = 45s;
  engine.limits.default_retry = delayq::RetryPolicy::fixed(2500ms, 6);
  open(ApiOptions{}, engine);
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"plain","delay":60})").code(), 0);
  auto plain = call("/get", R"({"id":"plain"})");
  ASSERT_EQ(plain.code(), 0) << plain.text;
  EXPECT_EQ(plain.data().find("ttr")->as_int(), 45) << plain.text;
  EXPECT_EQ(plain.data().find("ttr_ms")->as_int(), 45000) << plain.text;
  const json::Value* retry = plain.data().find("retry");
  ASSERT_TRUE(retry != nullptr && retry->is_object()) << plain.text;
  EXPECT_EQ(retry->find("kind")->as_string(), "fixed") << plain.text;
  EXPECT_EQ(retry->find("delay_ms")->as_int(), 2500) << plain.text;
  EXPECT_EQ(retry->find("max_attempts")->as_int(), 6) << plain.text;
  EXPECT_EQ(plain.data().find("max_attempts")->as_int(), 6) << plain.text;

  // Its own policy, each kind, shown as pushed; a ttr under a second is 1 in whole seconds.
  const std::string policies[] = {
      R"({"kind":"list","delays_ms":[120000,600000,600000],"max_attempts":4})",
      R"({"kind":"exponential","base_ms":1000,"cap_ms":3600000,"factor":1.5,"jitter":0.25,)"
      R"("max_attempts":10})",
      R"({"kind":"fixed","delay_ms":0,"max_attempts":1})"};
  int n = 0;
  for (const std::string& policy : policies) {
    const std::string id = "own-" + std::to_string(n++);
    ASSERT_EQ(call("/push", R"({"topic":"t","id":")" + id + R"(","ttr":0.5,"retry":)" + policy +
                                "}")
                  .code(),
              0)
        << policy;
    auto got = call("/get", R"({"id":")" + id + R"("})");
    ASSERT_EQ(got.code(), 0) << got.text;
    EXPECT_TRUE(has(got.text, R"("retry":)" + policy)) << got.text;
    EXPECT_EQ(got.data().find("ttr")->as_int(), 1) << got.text;
    EXPECT_EQ(got.data().find("ttr_ms")->as_int(), 500) << got.text;
  }

  // A dead letter is listed with its policy.
  auto pop = call("/pop", R"({"topic":"t"})");
  ASSERT_TRUE(pop.data().is_object()) << pop.text;
  ASSERT_EQ(pop.data().find("id")->as_string(), "own-0") << pop.text;
  ASSERT_EQ(call("/dead_letter", R"({"id":"own-0"})").code(), 0);
  auto dead = call("/dead/list", R"({"topic":"t"})");
  ASSERT_EQ(dead.code(), 0) << dead.text;
  EXPECT_TRUE(has(dead.text, R"("retry":)" + policies[0])) << dead.text;
}

TEST_F(HttpApiTest, DeleteIsIdempotent) {
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"j","delay":60})").code(), 0);
  auto del = call("/delete", R"({"id":"j"})");
  EXPECT_EQ(del.code(), 0);
  EXPECT_TRUE(del.data().find("deleted")->as_bool());
  auto again = call("/delete", R"({"id":"j"})");
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.code(), 0);
  EXPECT_FALSE(again.data().find("deleted")->as_bool());
}

TEST_F(HttpApiTest, TokensAreFenced) {
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"j","ttr_ms":100000})").code(), 0);
  auto pop = call("/pop", R"({"topic":"t"})");
  const std::string token = pop.data().find("token")->as_string();
  // nack it (back at once), pop again: the first token is stale now.
  ASSERT_EQ(call("/nack", R"({"token":")" + token + R"(","delay_ms":0})").code(), 0);
  auto pop2 = call("/pop", R"({"topic":"t"})");
  ASSERT_TRUE(pop2.data().is_object()) << pop2.text;
  EXPECT_EQ(pop2.data().find("attempt")->as_int(), 2);
  const std::string token2 = pop2.data().find("token")->as_string();
  auto stale = call("/finish", R"({"token":")" + token + R"("})");
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.code(), 1);
  EXPECT_EQ(stale.error(), "stale_token");
  auto touch = call("/touch", R"({"token":")" + token2 + R"("})");
  EXPECT_EQ(touch.code(), 0) << touch.text;
  EXPECT_TRUE(touch.data().find("lease_deadline_ms")->is_int());
  auto wrong_id = call("/finish", R"({"id":"other","token":")" + token2 + R"("})");
  EXPECT_EQ(wrong_id.status, 400);
  EXPECT_EQ(call("/finish", R"({"token":")" + token2 + R"("})").code(), 0);
  auto gone = call("/finish", R"({"token":")" + token2 + R"("})");
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(gone.error(), "not_found");
}

TEST_F(HttpApiTest, FinishWithoutTokenUsesTheLatestDelivery) {
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"j"})").code(), 0);
  ASSERT_TRUE(call("/pop", R"({"topic":"t"})").data().is_object());
  ASSERT_EQ(call("/nack", R"({"id":"j","delay":0})").code(), 0);  // tokenless nack, too
  auto pop = call("/pop", R"({"topic":"t"})");
  ASSERT_TRUE(pop.data().is_object());
  EXPECT_EQ(call("/finish", R"({"id":"j"})").code(), 0);
  EXPECT_TRUE(queue_->get("j").is(delayq::Errc::not_found));
  // A job pushed but never popped: nothing to finish.
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"k","delay":60})").code(), 0);
  auto early = call("/finish", R"({"id":"k"})");
  EXPECT_EQ(early.status, 409);
  EXPECT_EQ(early.error(), "invalid_state");
  // Finishing a job that is gone is fine, as in ouqiang/delay-queue.
  EXPECT_EQ(call("/finish", R"({"id":"never"})").code(), 0);
}

TEST_F(HttpApiTest, FinishAfterRestartCancelsTheReservedJob) {
  // A job reserved by a delivery this Api never saw (as after a daemon restart).
  ASSERT_TRUE(queue_->push({.topic = "t", .id = "j"}).ok());
  ASSERT_TRUE(queue_->reserve("t", 1s).ok());
  EXPECT_EQ(call("/finish", R"({"id":"j"})").code(), 0);
  EXPECT_TRUE(queue_->get("j").is(delayq::Errc::not_found));
}

TEST_F(HttpApiTest, MillisecondDelaysAndDueAt) {
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"a","delay_ms":250})").code(), 0);
  auto info = queue_->get("a").value();
  EXPECT_EQ(info.state, delayq::JobState::delayed);
  const int64_t far = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count() + 3'600'000;
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"b","due_at_ms":)" + std::to_string(far) + "}").code(),
            0);
  EXPECT_EQ(queue_->get("b")->state, delayq::JobState::delayed);
  auto both = call("/push", R"({"topic":"t","delay":1,"delay_ms":5})");
  EXPECT_EQ(both.status, 400);
  // A fractional delay in seconds is fine too.
  EXPECT_EQ(call("/push", R"({"topic":"t","id":"c","delay":0.5})").code(), 0);
}

TEST_F(HttpApiTest, RetryPolicies) {
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"l","retry":{"kind":"list","delays":[0,0]}})")
                .code(), 0);
  for (int i = 0; i < 3; ++i) {
    auto pop = call("/pop", R"({"topic":"t"})");
    ASSERT_TRUE(pop.data().is_object()) << i << pop.text;
    EXPECT_EQ(pop.data().find("max_attempts")->as_int(), 3);
    ASSERT_EQ(call("/nack", R"({"id":"l"})").code(), 0);
  }
  EXPECT_EQ(queue_->get("l")->state, delayq::JobState::dead);
  auto dead = call("/dead/list", R"({"topic":"t"})");
  ASSERT_EQ(dead.code(), 0);
  ASSERT_EQ(dead.data().find("jobs")->as_array().size(), 1u);
  EXPECT_EQ(dead.data().find("jobs")->as_array()[0].find("id")->as_string(), "l");
  EXPECT_EQ(call("/dead/requeue", R"({"id":"l"})").code(), 0);
  EXPECT_EQ(queue_->get("l")->state, delayq::JobState::ready);

  EXPECT_EQ(call("/push", R"({"topic":"t","retry":{"kind":"fixed","delay_ms":10,"max_attempts":2}})")
                .code(), 0);
  EXPECT_EQ(call("/push", R"({"topic":"t","retry":{"kind":"exponential","base":1,"factor":3,
                                                   "cap":60,"jitter":0.5,"max_attempts":4}})")
                .code(), 0);
  const char* bad[] = {
      R"({"topic":"t","retry":{"kind":"weird"}})",
      R"({"topic":"t","retry":{"kind":"list","delays":[]}})",
      R"({"topic":"t","retry":{"kind":"list","delays":[-1]}})",
      R"({"topic":"t","retry":{"kind":"exponential","factor":0.5}})",
      R"({"topic":"t","retry":{"kind":"fixed","max_attempts":0}})",
      R"({"topic":"t","retry":"fixed"})",
  };
  for (const char* b : bad) {
    auto a = call("/push", b);
    EXPECT_EQ(a.status, 400) << b << " -> " << a.text;
    EXPECT_EQ(a.code(), 1);
  }
}

TEST_F(HttpApiTest, DeadLetterPurgeAndTopicRequeue) {
  for (const char* id : {"x", "y"}) {
    ASSERT_EQ(call("/push", std::string(R"({"topic":"d","id":")") + id + R"("})").code(), 0);
    ASSERT_TRUE(call("/pop", R"({"topic":"d"})").data().is_object());
    ASSERT_EQ(call("/dead_letter", std::string(R"({"id":")") + id + R"("})").code(), 0);
  }
  auto requeue = call("/dead/requeue", R"({"topic":"d"})");
  EXPECT_EQ(requeue.data().find("requeued")->as_int(), 2);
  ASSERT_TRUE(call("/pop", R"({"topic":"d"})").data().is_object());
  ASSERT_EQ(call("/dead_letter", R"({"id":"x"})").code(), 0);
  auto purge = call("/dead/purge", R"({"topic":"d"})");
  EXPECT_EQ(purge.data().find("purged")->as_int(), 1);
}

TEST_F(HttpApiTest, BatchPush) {
  auto batch = call("/push_batch", R"({"jobs":[{"topic":"b","id":"1"},{"topic":""},
                                               {"topic":"b","id":"1"},{"topic":"b"}]})");
  EXPECT_EQ(batch.status, 200);
  EXPECT_EQ(batch.code(), 1);  // not every job went in
  const auto& results = batch.data().find("results")->as_array();
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].find("code")->as_int(), 0);
  EXPECT_EQ(results[1].find("error")->as_string(), "invalid_argument");
  EXPECT_EQ(results[2].find("error")->as_string(), "duplicate_id");
  EXPECT_EQ(results[3].find("code")->as_int(), 0);
  EXPECT_EQ(batch.data().find("pushed")->as_int(), 2);
  auto array = call("/push", R"([{"topic":"b"},{"topic":"b"}])");
  EXPECT_EQ(array.code(), 0) << array.text;
  EXPECT_EQ(queue_->stats().topics["b"].ready, 4u);
}

// /finish (and /ack) with "tokens": several deliveries in one request, each settled or refused
// on its own (Queue::ack_batch), the answer saying which, in order; bad input refused whole.
TEST_F(HttpApiTest, FinishSeveralTokensAtOnce) {
  std::vector<std::string> tokens;
  for (const char* id : {"a1", "a2", "a3"}) {
    ASSERT_EQ(call("/push", std::string(R"({"topic":"acks","id":")") + id + "\"}").code(), 0);
    auto pop = call("/pop", R"({"topic":"acks","timeout":5})");
    ASSERT_TRUE(pop.data().is_object()) << pop.text;
    tokens.push_back(pop.data().find("token")->as_string());
  }
  // The first alone, then a batch: a2, a stale a1, a3, a token that does not parse.
  ASSERT_EQ(call("/ack", R"({"token":")" + tokens[0] + "\"}").code(), 0);
  auto batch = call("/ack", R"({"tokens":[")" + tokens[1] + R"(",")" + tokens[0] + R"(",")" +
                                tokens[2] + R"(","nonsense"]})");
  EXPECT_EQ(batch.status, 200) << batch.text;
  EXPECT_EQ(batch.code(), 1) << batch.text;  // not every delivery was finished
  EXPECT_EQ(batch.message(), "2 of 4 finished") << batch.text;
  const auto& results = batch.data().find("results")->as_array();
  ASSERT_EQ(results.size(), 4u) << batch.text;
  EXPECT_EQ(results[0].find("code")->as_int(), 0);
  EXPECT_EQ(results[1].find("error")->as_string(), "not_found") << batch.text;
  EXPECT_EQ(results[2].find("code")->as_int(), 0);
  EXPECT_EQ(results[3].find("error")->as_string(), "invalid_argument") << batch.text;
  EXPECT_EQ(batch.data().find("finished")->as_int(), 2);
  EXPECT_EQ(batch.data().find("refused")->as_int(), 2);
  EXPECT_EQ(queue_->stats().acked, 3u);
  EXPECT_EQ(queue_->stats().topics["acks"].reserved, 0u);
  // All finished: code 0, on /finish as on /ack.
  ASSERT_EQ(call("/push", R"({"topic":"acks","id":"a4"})").code(), 0);
  auto pop = call("/pop", R"({"topic":"acks","timeout":5})");
  ASSERT_TRUE(pop.data().is_object()) << pop.text;
  auto all = call("/finish", R"({"tokens":[")" + pop.data().find("token")->as_string() + "\"]}");
  EXPECT_EQ(all.code(), 0) << all.text;
  EXPECT_EQ(all.message(), "1 of 1 finished") << all.text;
  // A token given twice: the second is not_found.
  ASSERT_EQ(call("/push", R"({"topic":"acks","id":"a5"})").code(), 0);
  pop = call("/pop", R"({"topic":"acks","timeout":5})");
  ASSERT_TRUE(pop.data().is_object()) << pop.text;
  const std::string t5 = pop.data().find("token")->as_string();
  auto twice = call("/finish", R"({"tokens":[")" + t5 + R"(",")" + t5 + "\"]}");
  EXPECT_EQ(twice.message(), "1 of 2 finished") << twice.text;
  const auto& r2 = twice.data().find("results")->as_array();
  ASSERT_EQ(r2.size(), 2u);
  EXPECT_EQ(r2[0].find("code")->as_int(), 0);
  EXPECT_EQ(r2[1].find("error")->as_string(), "not_found") << twice.text;

  // Refused whole, nothing finished: not an array, empty, not strings, mixed with token or id,
  // over the limit (1000, ApiOptions::max_batch).
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"tokens":"1:a"})", "field \"tokens\" must be an array"},
      {R"({"tokens":[]})", "\"tokens\" is empty"},
      {R"({"tokens":["1:a",2]})", "tokens[1] must be a string"},
      {R"({"tokens":["1:a"],"token":"1:a"})", "give \"tokens\", or one \"token\" or \"id\""},
      {R"({"tokens":["1:a"],"id":"a"})", "give \"tokens\", or one \"token\" or \"id\""},
      {R"({"toknes":["1:a"]})", "did you mean \"tokens\"?"},
  };
  for (const auto& [body, why] : bad) {
    auto r = call("/ack", body);
    EXPECT_EQ(r.status, 400) << body << ": " << r.text;
    EXPECT_EQ(r.error(), "bad_request") << body;
    EXPECT_TRUE(has(r.message(), why)) << body << ": " << r.text;
  }
  std::string many = R"({"tokens":[)";
  for (int i = 0; i < 1001; ++i) many += std::string(i ? "," : "") + "\"1:x\"";
  auto over = call("/ack", many + "]}");
  EXPECT_EQ(over.status, 413) << over.text;
  EXPECT_EQ(over.error(), "too_large");
  EXPECT_TRUE(has(over.message(), "at most 1000 tokens in one request")) << over.text;
}

TEST_F(HttpApiTest, PopWaitsAndTakesSeveralTopics) {
  std::thread pusher([&] {
    std::this_thread::sleep_for(200ms);
    (void)queue_->push({.topic = "second", .id = "late"});
  });
  auto pop = call("/pop", R"({"topic":"first, second","timeout":60})");
  pusher.join();
  ASSERT_TRUE(pop.data().is_object()) << pop.text;
  EXPECT_EQ(pop.data().find("id")->as_string(), "late");
  EXPECT_EQ(pop.data().find("topic")->as_string(), "second");
  ASSERT_TRUE(queue_->push({.topic = "z", .id = "zz"}).ok());
  auto list = call("/pop", R"({"topics":["y","z"],"timeout_ms":0})");
  ASSERT_TRUE(list.data().is_object()) << list.text;
}

// A delivery whose answer cannot be written (the server found its client gone, or the write
// failed) is given back through Response::undelivered: ready again at once, the attempt not
// counted, so that a job with one attempt is not dead-lettered unhandled; `released` counts it.
// The server's side (when it calls undelivered) is in delayqd_connection_test.cc.
TEST_F(HttpApiTest, ADeliveryThatCannotBeWrittenIsGivenBackUncounted) {
  ASSERT_TRUE(queue_->push({.topic = "t", .id = "j", .retry = delayq::RetryPolicy::fixed(1h, 1)}).ok());
  std::promise<Response> p;
  api_->handle(Request{"POST", "/pop", "", R"({"topic":"t"})"},
               [&p](Response r) { p.set_value(std::move(r)); });
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
  Response r = f.get();
  ASSERT_NE(r.body.find("\"j\""), std::string::npos) << r.body;
  ASSERT_TRUE(r.undelivered) << "a delivery's answer carries its give-back";
  EXPECT_EQ(queue_->get("j")->state, delayq::JobState::reserved);
  r.undelivered();
  const auto info = queue_->get("j");
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->state, delayq::JobState::ready);
  EXPECT_EQ(info->attempts, 0u);
  EXPECT_EQ(queue_->stats().released, 1u);
  EXPECT_EQ(queue_->stats().dead_lettered, 0u);
  // Handed out again, and handled this time.
  auto again = call("/pop", R"({"topic":"t"})");
  ASSERT_EQ(again.code(), 0) << again.text;
  EXPECT_EQ(again.data().find("id")->as_string(), "j");
  EXPECT_EQ(call("/finish", R"({"id":"j"})").code(), 0);
}

TEST_F(HttpApiTest, WaitingPopsAreLimited) {
  ApiOptions opt;
  opt.max_waiting_pops = 1;
  open(opt);
  std::promise<Response> first;
  api_->handle(Request{"POST", "/pop", "", R"({"topic":"t","timeout":60})"},
               [&](Response r) { first.set_value(std::move(r)); });
  auto second = call("/pop", R"({"topic":"t","timeout":60})");
  EXPECT_EQ(second.status, 503);
  EXPECT_EQ(second.error(), "overloaded");
  ASSERT_TRUE(queue_->push({.topic = "t"}).ok());
  auto f = first.get_future();
  ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
  EXPECT_EQ(f.get().status, 200);
}

TEST_F(HttpApiTest, DrainAnswersWaitingPopsWithNoJob) {
  std::promise<Response> waiting;
  api_->handle(Request{"POST", "/pop", "", R"({"topic":"t","timeout":60})"},
               [&](Response r) { waiting.set_value(std::move(r)); });
  api_->begin_drain();
  auto refused = call("/push", R"({"topic":"t"})");
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.error(), "shutting_down");
  EXPECT_EQ(api_->in_flight(), 0u);
  queue_->close();
  auto f = waiting.get_future();
  ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
  Response r = f.get();
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.close);
  auto body = json::parse(r.body).value();
  EXPECT_EQ(body.find("code")->as_int(), 0);
  EXPECT_TRUE(body.find("data")->is_null());
}

TEST_F(HttpApiTest, BadRequests) {
  struct Case {
    const char* method;
    const char* target;
    const char* body;
    int status;
    const char* error;
  };
  const Case cases[] = {
      {"POST", "/push", "", 400, "bad_json"},
      {"POST", "/push", "{", 400, "bad_json"},
      {"POST", "/push", "{\"topic\":\"t\",}", 400, "bad_json"},
      {"POST", "/push", "\"just a string\"", 400, "bad_request"},
      {"POST", "/push", "{}", 400, "bad_request"},
      {"POST", "/push", "{\"topic\":\"  \"}", 400, "bad_request"},
      {"POST", "/push", "{\"topic\":7}", 400, "bad_request"},
      {"POST", "/push", "{\"topic\":\"t\",\"delay\":\"10\"}", 400, "bad_request"},
      {"POST", "/push", "{\"topic\":\"t\",\"delay\":-1}", 400, "bad_request"},
      {"POST", "/push", "{\"topic\":\"t\",\"delay_ms\":1.5}", 400, "bad_request"},
      {"POST", "/push", "{\"topic\":\"t\",\"delay\":1e300}", 400, "bad_request"},
      {"POST", "/push", "{\"topic\":\"t\",\"body\":{}}", 400, "bad_request"},
      {"POST", "/push", "{\"topic\":\"t\",\"ttr\":true}", 400, "bad_request"},
      {"POST", "/pop", "{}", 400, "bad_request"},
      {"POST", "/pop", "{\"topic\":\",,\"}", 400, "bad_request"},
      {"POST", "/pop", "{\"topic\":\"t\",\"timeout\":-5}", 400, "bad_request"},
      {"POST", "/finish", "{}", 400, "bad_request"},
      {"POST", "/finish", "{\"token\":\"nonsense\"}", 400, "bad_request"},
      {"POST", "/delete", "{\"id\":5}", 400, "bad_request"},
      {"POST", "/get", "[]", 400, "bad_request"},
      {"POST", "/dead/requeue", "{}", 400, "bad_request"},
      {"POST", "/nope", "{}", 404, "no_route"},
      {"GET", "/push", "", 405, "method_not_allowed"},
      {"POST", "/metrics", "", 405, "method_not_allowed"},
      {"DELETE", "/stats", "", 405, "method_not_allowed"},
      {"POST", "/touch", "{\"id\":\"never-popped\"}", 404, "not_found"},
      {"POST", "/reschedule", "{\"id\":\"missing\",\"delay\":1}", 404, "not_found"},
  };
  for (const Case& c : cases) {
    auto a = call(c.target, c.body, c.method);
    EXPECT_EQ(a.status, c.status) << c.method << " " << c.target << " " << c.body << " -> " << a.text;
    EXPECT_EQ(a.code(), 1) << a.text;
    EXPECT_EQ(a.error(), c.error) << c.target << " " << c.body << " -> " << a.text;
    EXPECT_FALSE(a.body.find("message")->as_string().empty());
  }
  // Still serving.
  EXPECT_EQ(call("/push", R"({"topic":"t"})").code(), 0);
  EXPECT_EQ(call("/push", R"({"topic":"t","id":"dup"})").code(), 0);
  auto dup = call("/push", R"({"topic":"t","id":"dup"})");
  EXPECT_EQ(dup.status, 409);
  EXPECT_EQ(dup.error(), "duplicate_id");
}

TEST_F(HttpApiTest, BearerToken) {
  ApiOptions opt;
  opt.bearer_token = "s3cret";
  open(opt);
  EXPECT_EQ(call("/push", R"({"topic":"t"})").status, 401);
  EXPECT_EQ(call("/push", R"({"topic":"t"})", "POST", "Bearer wrong").status, 401);
  EXPECT_EQ(call("/push", R"({"topic":"t"})", "POST", "Bearer s3cret1").status, 401);
  EXPECT_EQ(call("/push", R"({"topic":"t"})", "POST", "Bearer s3cret").status, 200);
  EXPECT_EQ(call("/health", "", "GET").status, 200);  // health stays open for probes
  EXPECT_EQ(call("/metrics", "", "GET").status, 401);
}

// The dashboard's files (src/delayqd/ui, built in): served to anyone, since they hold no data and
// the page sends the token itself; each with its type and a policy that lets the browser run
// only this daemon's own script. Its behaviour in a browser: tests/daemon/dashboard_test.py.
TEST_F(HttpApiTest, TheDashboardsFilesAreServedWithoutTheTokenUnderAStrictPolicy) {
  ApiOptions opt;
  opt.bearer_token = "s3cret";
  open(opt);
  const auto get = [&](const std::string& target, const std::string& method = "GET") {
    std::promise<Response> p;
    api_->handle(Request{method, target, "", ""},
                 [&p](Response r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  };
  const std::pair<const char*, const char*> files[] = {{"/ui", "text/html; charset=utf-8"},
                                                       {"/ui/", "text/html; charset=utf-8"},
                                                       {"/ui/app.js", "text/javascript; charset=utf-8"},
                                                       {"/ui/topic.js", "text/javascript; charset=utf-8"},
                                                       {"/ui/schedules.js", "text/javascript; charset=utf-8"},
                                                       {"/ui/style.css", "text/css; charset=utf-8"}};
  for (const auto& [path, type] : files) {
    const Response r = get(path);
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    EXPECT_EQ(r.content_type, type) << path;
    EXPECT_GT(r.body.size(), 500u) << path;
    std::string csp;
    for (const auto& [name, value] : r.headers)
      if (name == "Content-Security-Policy") csp = value;
    EXPECT_TRUE(has(csp, "script-src 'self'") && has(csp, "frame-ancestors 'none'")) << csp;
  }
  // The page loads what is served, and nothing from elsewhere.
  const std::string page = get("/ui").body;
  EXPECT_TRUE(has(page, "src=\"/ui/app.js\"") && has(page, "src=\"/ui/topic.js\"") &&
              has(page, "src=\"/ui/schedules.js\"") && has(page, "href=\"/ui/style.css\""))
      << page;
  EXPECT_FALSE(has(page, "http://") || has(page, "https://")) << page;
  EXPECT_EQ(get("/ui", "POST").status, 405);
  EXPECT_EQ(get("/ui/nope.js").status, 404);
  // The data behind it still needs the token.
  EXPECT_EQ(call("/stats", "", "GET").status, 401);
}

TEST_F(HttpApiTest, StatsAndMetrics) {
  ASSERT_EQ(call("/push", R"({"topic":"m\"x","delay":60})").code(), 0);
  auto stats = call("/stats", "", "GET");
  ASSERT_EQ(stats.code(), 0);
  EXPECT_EQ(stats.data().find("pushed")->as_int(), 1);
  EXPECT_EQ(stats.data().find("topics")->find("m\"x")->find("delayed")->as_int(), 1);
  EXPECT_EQ(call("/stats", "{}").code(), 0);
  auto metrics = call("/metrics", "", "GET");
  EXPECT_EQ(metrics.status, 200);
  const std::string& m = metrics.text;
  EXPECT_NE(m.find("delayq_pushed_total 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("delayq_jobs{topic=\"m\\\"x\",state=\"delayed\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("delayqd_http_requests_total{route=\"push\",status=\"200\"} 1\n"),
            std::string::npos) << m;
  EXPECT_NE(m.find("delayqd_http_request_duration_seconds_bucket{route=\"push\",le=\"+Inf\"} 1\n"),
            std::string::npos) << m;
  EXPECT_NE(m.find("# TYPE delayqd_http_request_duration_seconds histogram"), std::string::npos);
  auto health = call("/health", "", "GET");
  EXPECT_EQ(health.data().find("status")->as_string(), "ok");
}

// The delayq_jobs series of /metrics: a topic's series stays, reading 0, once the topic empties
// (Prometheus alerts on absent series misfire); past --metrics-topics a new topic takes the
// place of the one empty the longest, or, with none empty, is summed in the overflow series,
// which is always there. docs/operations.md ("Metrics to watch").
TEST_F(HttpApiTest, JobSeriesReadZeroWhenATopicEmptiesAndTheirNumberIsCapped) {
  ApiOptions options;
  options.max_metric_topics = 2;
  open(options);
  const auto metrics = [&] { return call("/metrics", "", "GET").text; };
  const auto series = [](const std::string& labels, const char* state, int n) {
    return "delayq_jobs{" + labels + ",state=\"" + state + "\"} " + std::to_string(n) + "\n";
  };
  const auto has = [](const std::string& m, const std::string& line) {
    return m.find(line) != std::string::npos;
  };
  std::string m = metrics();
  EXPECT_TRUE(has(m, series("overflow=\"true\"", "ready", 0))) << m;  // there from the start
  EXPECT_TRUE(has(m, "delayq_overflow_topics 0\n")) << m;

  ASSERT_EQ(call("/push", R"({"topic":"a","id":"a1"})").code(), 0);
  m = metrics();
  EXPECT_TRUE(has(m, series("topic=\"a\"", "ready", 1))) << m;
  ASSERT_EQ(call("/delete", R"({"id":"a1"})").code(), 0);
  m = metrics();
  for (const char* state : {"delayed", "ready", "reserved", "dead"})
    EXPECT_TRUE(has(m, series("topic=\"a\"", state, 0))) << state << "\n" << m;

  // b fills the cap (a stays, empty); c finds a empty and takes its place.
  ASSERT_EQ(call("/push", R"({"topic":"b","id":"b1","delay":60})").code(), 0);
  m = metrics();
  EXPECT_TRUE(has(m, series("topic=\"a\"", "ready", 0))) << m;
  EXPECT_TRUE(has(m, series("topic=\"b\"", "delayed", 1))) << m;
  ASSERT_EQ(call("/push", R"({"topic":"c","id":"c1","delay":60})").code(), 0);
  m = metrics();
  EXPECT_FALSE(has(m, "topic=\"a\"")) << m;
  EXPECT_TRUE(has(m, series("topic=\"c\"", "delayed", 1))) << m;

  // Both named topics hold jobs: d and e are summed in the overflow series.
  ASSERT_EQ(call("/push", R"({"topic":"d","id":"d1","delay":60})").code(), 0);
  ASSERT_EQ(call("/push", R"({"topic":"e","id":"e1"})").code(), 0);
  m = metrics();
  EXPECT_FALSE(has(m, "topic=\"d\"")) << m;
  EXPECT_FALSE(has(m, "topic=\"e\"")) << m;
  EXPECT_TRUE(has(m, series("overflow=\"true\"", "delayed", 1))) << m;
  EXPECT_TRUE(has(m, series("overflow=\"true\"", "ready", 1))) << m;
  EXPECT_TRUE(has(m, "delayq_overflow_topics 2\n")) << m;
  EXPECT_TRUE(has(m, series("topic=\"b\"", "delayed", 1))) << m;
  EXPECT_TRUE(has(m, series("topic=\"c\"", "delayed", 1))) << m;

  // b empties: the next scrape gives its place to d (first by name of the overflow topics).
  ASSERT_EQ(call("/delete", R"({"id":"b1"})").code(), 0);
  m = metrics();
  EXPECT_FALSE(has(m, "topic=\"b\"")) << m;
  EXPECT_TRUE(has(m, series("topic=\"d\"", "delayed", 1))) << m;
  EXPECT_TRUE(has(m, series("overflow=\"true\"", "ready", 1))) << m;  // e
  EXPECT_TRUE(has(m, "delayq_overflow_topics 1\n")) << m;
  // Never more than the cap's topics, whatever comes.
  size_t named = 0;
  for (size_t at = 0; (at = m.find("delayq_jobs{topic=", at)) != std::string::npos; ++at) ++named;
  EXPECT_EQ(named, 2u * 4) << m;
}

// /stats and /metrics carry each topic's timing (TopicTiming): on a ManualClock, a job popped
// 3 ms after its due time is in the 5 ms bucket, and a job due in 30 min in next_hour.
// The engine on a ManualClock, which must outlive it: the queue goes first.
class HttpApiClockTest : public HttpApiTest {
 protected:
  void SetUp() override {
    delayq::EngineOptions engine;
    engine.clock = &clock;
    open({}, engine);
  }
  void TearDown() override {
    api_.reset();
    queue_.reset();
  }
  delayq::ManualClock clock;
};

TEST_F(HttpApiClockTest, StatsAndMetricsCarryLatenessAndWhatFiresWhen) {
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"later","delay":1800})").code(), 0);
  ASSERT_EQ(call("/push", R"({"topic":"t","id":"now"})").code(), 0);
  clock.advance(3ms);
  ASSERT_EQ(call("/pop", R"({"topic":"t"})").code(), 0);
  auto stats = call("/stats", "", "GET");
  const json::Value* t = stats.data().find("topics")->find("t");
  ASSERT_NE(t, nullptr) << stats.text;
  EXPECT_EQ(t->find("due")->find("next_hour")->as_int(), 1) << stats.text;
  EXPECT_EQ(t->find("due")->find("next_minute")->as_int(), 0);
  EXPECT_EQ(t->find("oldest_ready_s")->as_double(), 0);
  const json::Value* first = t->find("lateness")->find("first");
  EXPECT_EQ(first->find("count")->as_int(), 1);
  EXPECT_NEAR(first->find("sum_s")->as_double(), 0.003, 1e-12);
  EXPECT_EQ(first->find("buckets")->as_array()[5].as_int(), 1);
  EXPECT_EQ(stats.data().find("lateness_bounds_s")->as_array()[5].as_double(), 0.005);

  const std::string m = call("/metrics", "", "GET").text;
  for (const char* line :
       {"# TYPE delayq_lateness_seconds histogram\n",
        "delayq_lateness_seconds_bucket{topic=\"t\",attempt=\"first\",le=\"0.0025\"} 0\n",
        "delayq_lateness_seconds_bucket{topic=\"t\",attempt=\"first\",le=\"0.005\"} 1\n",
        "delayq_lateness_seconds_bucket{topic=\"t\",attempt=\"first\",le=\"14400\"} 1\n",
        "delayq_lateness_seconds_bucket{topic=\"t\",attempt=\"first\",le=\"+Inf\"} 1\n",
        "delayq_lateness_seconds_sum{topic=\"t\",attempt=\"first\"} 0.003\n",
        "delayq_lateness_seconds_count{topic=\"t\",attempt=\"retry\"} 0\n",
        "delayq_lateness_seconds_count{overflow=\"true\",attempt=\"first\"} 0\n",
        "delayq_delayed_jobs_by_due{topic=\"t\",due=\"next_hour\"} 1\n",
        "delayq_oldest_ready_age_seconds{topic=\"t\"} 0\n", "delayq_lateness_clamped_total 0\n"})
    EXPECT_TRUE(delayq::testing::has(m, line)) << line << m;
}

// Topics past --metrics-topics have their lateness summed in the overflow histogram, which only
// grows (its series are counters) whichever topics take or give up a series of their own; a
// topic whose jobs come and go between scrapes gets a series by its deliveries.
TEST_F(HttpApiTest, OverflowLatenessOnlyGrowsAsTopicsComeAndGo) {
  ApiOptions options;
  options.max_metric_topics = 1;
  open(options);
  const auto count = [&](const std::string& labels) -> int64_t {
    const std::string m = call("/metrics", "", "GET").text;
    const std::string key = "delayq_lateness_seconds_count{" + labels + ",attempt=\"first\"} ";
    const size_t at = m.find(key);
    return at == std::string::npos ? -1 : std::stoll(m.substr(at + key.size()));
  };
  const auto deliver = [&](const std::string& topic, const std::string& id) {
    ASSERT_EQ(call("/push", R"({"topic":")" + topic + R"(","id":")" + id + R"("})").code(), 0);
    ASSERT_EQ(call("/pop", R"({"topic":")" + topic + R"("})").code(), 0);
    ASSERT_EQ(call("/finish", R"({"id":")" + id + R"("})").code(), 0);
  };
  deliver("a", "a1");
  deliver("b", "b1");
  // Both delivered since the last scrape; one series: a (first by name), b in the overflow.
  EXPECT_EQ(count("topic=\"a\""), 1);
  EXPECT_EQ(count("topic=\"b\""), -1);
  EXPECT_EQ(count("overflow=\"true\""), 1);
  // Only b is busy now: it takes a's place, with its whole history; the overflow keeps what it
  // counted for b while b had no series.
  deliver("b", "b2");
  EXPECT_EQ(count("topic=\"b\""), 2);
  EXPECT_EQ(count("topic=\"a\""), -1);
  EXPECT_EQ(count("overflow=\"true\""), 1);
  // a again: b had nothing since, so a takes the series back; b's history stays out of the
  // overflow (it was exported under its name up to now).
  deliver("a", "a2");
  EXPECT_EQ(count("topic=\"a\""), 2);
  EXPECT_EQ(count("overflow=\"true\""), 1);
}

// POST /backup: the name is one directory name (checked before the backup is asked for), a
// missing one is made of the time; without a backup hook the route says how to get one.
TEST_F(HttpApiTest, BackupNamesAreOneDirectoryNameAndTheRouteNeedsBackupDir) {
  auto off = call("/backup", "");
  EXPECT_EQ(off.status, 403);
  EXPECT_EQ(off.error(), "forbidden");
  EXPECT_NE(off.message().find("--backup-dir DIR"), std::string::npos) << off.message();

  ApiOptions redis;
  redis.backend = "redis";
  open(redis);
  auto r = call("/backup", R"({"name":"n"})");
  EXPECT_EQ(r.status, 501);
  EXPECT_NE(r.message().find("BGSAVE"), std::string::npos) << r.message();

  std::vector<std::string> asked;
  ApiOptions options;
  options.backup = [&](const std::string& name) -> delayq::Result<std::string> {
    asked.push_back(name);
    return "/backups/" + name;
  };
  open(options);
  auto made = call("/backup", R"({"name":"nightly-2026.11_21"})");
  ASSERT_EQ(made.code(), 0) << made.text;
  EXPECT_EQ(made.data().find("dir")->as_string(), "/backups/nightly-2026.11_21");
  auto generated = call("/backup", "");
  ASSERT_EQ(generated.code(), 0) << generated.text;
  ASSERT_EQ(asked.size(), 2u);
  const std::regex generated_name(R"(backup-20\d{6}T\d{6}\.\d{3}Z)");  // YYYYMMDDThhmmss.mmmZ
  EXPECT_TRUE(std::regex_match(asked[1], generated_name)) << asked[1];
  for (const char* bad : {R"({"name":"../x"})", R"({"name":"a/b"})", R"({"name":".x"})",
                          R"({"name":""})", R"({"name":"a b"})", R"({"nmae":"x"})"}) {
    auto a = call("/backup", bad);
    EXPECT_EQ(a.status, 400) << bad;
  }
  EXPECT_EQ(asked.size(), 2u) << "a refused name reached the backup";
  EXPECT_EQ(call("/backup", "", "GET").status, 405);
}

// ---- /pause and /resume ----

// A paused topic: /pop gets no job (other topics still do), /stats and /metrics show the pause,
// /resume hands the job out; both answer the topic's state, also when it was so already.
TEST_F(HttpApiTest, PauseAndResumeATopic) {
  ASSERT_EQ(call("/push", R"({"topic":"p","id":"p1"})").code(), 0);
  ASSERT_EQ(call("/push", R"({"topic":"q","id":"q1"})").code(), 0);
  for (int i = 0; i < 2; ++i) {
    auto paused = call("/pause", R"({"topic":"p"})");
    ASSERT_EQ(paused.code(), 0) << paused.text;
    EXPECT_EQ(paused.data().find("topic")->as_string(), "p");
    EXPECT_TRUE(paused.data().find("paused")->as_bool());
  }
  EXPECT_TRUE(call("/pop", R"({"topic":"p"})").data().is_null());
  auto other = call("/pop", R"({"topics":["p","q"]})");
  ASSERT_TRUE(other.data().is_object()) << other.text;
  EXPECT_EQ(other.data().find("id")->as_string(), "q1");
  auto stats = call("/stats", "", "GET");
  EXPECT_TRUE(stats.data().find("topics")->find("p")->find("paused")->as_bool()) << stats.text;
  EXPECT_FALSE(stats.data().find("topics")->find("q")->find("paused")->as_bool()) << stats.text;
  std::string m = call("/metrics", "", "GET").text;
  EXPECT_NE(m.find("delayq_topic_paused{topic=\"p\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("delayq_topic_paused{topic=\"q\"} 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("delayq_paused_topics 1\n"), std::string::npos) << m;
  auto resumed = call("/resume", R"({"topic":"p"})");
  ASSERT_EQ(resumed.code(), 0) << resumed.text;
  EXPECT_FALSE(resumed.data().find("paused")->as_bool());
  EXPECT_EQ(call("/resume", R"({"topic":"p"})").code(), 0);
  auto popped = call("/pop", R"({"topic":"p"})");
  ASSERT_TRUE(popped.data().is_object()) << popped.text;
  EXPECT_EQ(popped.data().find("id")->as_string(), "p1");
  m = call("/metrics", "", "GET").text;
  EXPECT_NE(m.find("delayq_paused_topics 0\n"), std::string::npos) << m;
}

// A paused topic without jobs is listed, and its delayq_topic_paused series counts against
// --metrics-topics like a topic with jobs.
TEST_F(HttpApiTest, AnEmptyPausedTopicIsListedAndItsSeriesIsCapped) {
  ApiOptions options;
  options.max_metric_topics = 1;
  open(options);
  ASSERT_EQ(call("/pause", R"({"topic":"a"})").code(), 0);
  ASSERT_EQ(call("/pause", R"({"topic":"b"})").code(), 0);
  auto stats = call("/stats", "", "GET");
  const json::Value* a = stats.data().find("topics")->find("a");
  ASSERT_NE(a, nullptr) << stats.text;
  EXPECT_TRUE(a->find("paused")->as_bool());
  EXPECT_EQ(a->find("ready")->as_int(), 0);
  const std::string m = call("/metrics", "", "GET").text;
  size_t named = 0;
  for (size_t at = 0; (at = m.find("delayq_topic_paused{", at)) != std::string::npos; ++at) ++named;
  EXPECT_EQ(named, 1u) << m;
  EXPECT_NE(m.find("delayq_paused_topics 2\n"), std::string::npos) << m;
}

// What /pause and /resume refuse: no topic, other members, a topic the queue refuses, the
// wrong method, a missing token.
TEST_F(HttpApiTest, PauseAndResumeRefuseBadRequests) {
  for (const char* route : {"/pause", "/resume"}) {
    SCOPED_TRACE(route);
    EXPECT_EQ(call(route, "{}").status, 400);
    EXPECT_EQ(call(route, R"({"topic":"t","id":"x"})").status, 400);
    EXPECT_EQ(call(route, R"({"topic":7})").status, 400);
    auto long_topic = call(route, R"({"topic":")" + std::string(300, 't') + R"("})");
    EXPECT_EQ(long_topic.status, 400) << long_topic.text;
    EXPECT_EQ(call(route, "", "GET").status, 405);
  }
  ApiOptions opt;
  opt.bearer_token = "s3cret";
  open(opt);
  EXPECT_EQ(call("/pause", R"({"topic":"t"})").status, 401);
  EXPECT_EQ(call("/pause", R"({"topic":"t"})", "POST", "Bearer s3cret").status, 200);
}

}  // namespace
