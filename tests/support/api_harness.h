// Drives delayq::http::Api without sockets for the route tests: a request goes straight into
// Api::handle, the answer comes back parsed as JSON (the common {code, message, data} shape is
// checked on every JSON answer).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "delayq/engine.h"
#include "delayqd/api.h"
#include "wire/json.h"

namespace delayq::testing {

struct Answer {
  int status = 0;
  wire::json::Value body;  // null for answers that are not JSON
  std::string text;
  int code() const { return static_cast<int>(body.find("code")->as_int()); }
  const wire::json::Value& data() const { return *body.find("data"); }
  std::string error() const {
    const wire::json::Value* e = body.find("error");
    return e ? e->as_string() : "";
  }
  std::string message() const {
    const wire::json::Value* m = body.find("message");
    return m ? m->as_string() : "";
  }
};

// Whether `s` holds `part`: the messages are checked by the words that matter in them.
inline bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// One request through `api`, answered within a generous bound (the machine may be loaded).
inline Answer call(http::Api& api, const std::string& target, const std::string& body,
                   const std::string& method = "POST", const std::string& auth = "") {
  std::promise<http::Response> p;
  auto f = p.get_future();
  api.handle(http::Request{method, target, auth, body},
             [&p](http::Response r) { p.set_value(std::move(r)); });
  EXPECT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  http::Response r = f.get();
  Answer a;
  a.status = r.status;
  a.text = r.body;
  if (r.content_type == "application/json") {
    auto parsed = wire::json::parse(r.body, wire::json::kReplyLimits);
    EXPECT_TRUE(parsed.ok()) << r.body;
    if (parsed) a.body = std::move(*parsed);
    EXPECT_NE(a.body.find("code"), nullptr) << r.body;
    EXPECT_NE(a.body.find("message"), nullptr) << r.body;
    EXPECT_NE(a.body.find("data"), nullptr) << r.body;
  }
  return a;
}

// An in-memory engine behind an Api, reopened with other options by open().
class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override { open({}); }

  void open(http::ApiOptions options, EngineOptions engine = {}) {
    api_.reset();
    queue_.reset();
    queue_ = Engine::open(engine).value();
    options.default_pop_timeout = std::chrono::seconds(0);  // pops answer at once by default
    api_ = std::make_unique<http::Api>(*queue_, options);
  }

  Answer call(const std::string& target, const std::string& body,
              const std::string& method = "POST", const std::string& auth = "") {
    return testing::call(*api_, target, body, method, auth);
  }

  // A POST to `route` with `body` and a part of the message that must refuse it.
  struct Refused {
    const char* route;
    const char* body;
    std::string says;
  };
  // The request is refused with 400 bad_request, its message holding `says`. Returns the answer
  // for further checks.
  Answer expect_refused(const Refused& r) {
    Answer a = call(r.route, r.body);
    EXPECT_EQ(a.status, 400) << r.route << " " << r.body << " -> " << a.text;
    EXPECT_EQ(a.error(), "bad_request") << a.text;
    EXPECT_TRUE(has(a.message(), r.says)) << r.route << " " << r.body << " -> " << a.text;
    return a;
  }

  std::unique_ptr<Engine> queue_;
  std::unique_ptr<http::Api> api_;
};

}  // namespace delayq::testing
