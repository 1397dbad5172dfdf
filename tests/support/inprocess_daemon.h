// delayqd's server and Api over a Queue the test owns, in this process, on a free loopback port;
// stopped (drained, the queue closed, as SIGTERM does) when it goes out of scope, through
// ServerOptions::stop, so that several can run in one test process.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "delayq/queue.h"
#include "delayqd/api.h"
#include "delayqd/server.h"

namespace delayq::testing {

class InProcessDaemon {
 public:
  explicit InProcessDaemon(Queue& queue, http::ApiOptions options = {}) {
    api_ = std::make_unique<http::Api>(queue, options);
    http::ServerOptions server;
    server.port = 0;
    server.threads = 2;
    server.stop = &stop_;
    auto at = listening_.get_future();
    thread_ = std::thread([this, &queue, server] {
      std::string error;
      const bool ran = http::run_server(
          *api_, queue, server, [this](const std::string& a) { listening_.set_value(a); }, error);
      if (!ran) listening_.set_value("");
    });
    if (at.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      ADD_FAILURE() << "the in-process server did not listen within 60 s";
      return;
    }
    address_ = at.get();
    EXPECT_FALSE(address_.empty()) << "the in-process server could not listen";
  }
  InProcessDaemon(const InProcessDaemon&) = delete;
  InProcessDaemon& operator=(const InProcessDaemon&) = delete;
  ~InProcessDaemon() {
    stop_.request();
    if (thread_.joinable()) thread_.join();
  }

  // "http://127.0.0.1:PORT", or "" when it could not listen.
  std::string url() const { return address_.empty() ? "" : "http://" + address_; }

 private:
  std::unique_ptr<http::Api> api_;
  http::ServerStop stop_;
  std::promise<std::string> listening_;
  std::string address_;
  std::thread thread_;
};

}  // namespace delayq::testing
