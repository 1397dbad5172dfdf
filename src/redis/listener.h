// The wake-ups of a client's waiting consumers: one thread subscribed to every shard's wake
// channel. The scripts publish there when a job becomes ready or is scheduled earlier than its
// topic's earliest (lua/prelude.lua, schedule() and wake()); each message makes the waiters
// claim again. A lost message (a broken subscription, a server restart) costs them at most one
// sweep (RedisOptions::sweep), and every (re)subscription wakes them too, since messages may have
// been missed while unsubscribed.
//
// In a cluster, the scripts' PUBLISH reaches every node over the cluster bus, so one
// subscription on any node hears every shard; when that node fails, the next one is tried.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "delayq/clock.h"
#include "redis/connection.h"

namespace delayq::redis {

class Listener {
 public:
  struct Options {
    Duration connect_timeout;
    // After a failed subscription the next attempt waits this long, doubling up to the max.
    Duration reconnect_min;
    Duration reconnect_max;
  };
  // `channels`: what to subscribe to; `endpoints`: the servers that may serve the subscription,
  // asked afresh at each attempt (Router::endpoints); `on_wake`: called on the listener's thread
  // at each message and each (re)subscription.
  Listener(std::vector<std::string> channels, std::function<std::vector<Endpoint>()> endpoints,
           std::function<void()> on_wake, Options opt);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Starts the thread.
  void start();
  // Ends the subscription and the thread; returns once the thread has ended. Idempotent.
  void stop();

 private:
  void run();
  // Reads messages from a subscribed connection until it breaks (or stop() shuts it down).
  void read_messages(Connection& c);

  const std::vector<std::string> channels_;
  const std::function<std::vector<Endpoint>()> endpoints_;
  const std::function<void()> on_wake_;
  const Options opt_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;        // under mu_
  Connection* conn_ = nullptr;  // under mu_: the subscribed connection, for stop()
  std::thread thread_;
};

}  // namespace delayq::redis
