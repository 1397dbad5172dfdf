// The wake channel listener (see listener.h).
#include "redis/listener.h"

#include <algorithm>
#include <memory>
#include <string_view>
#include <utility>

namespace delayq::redis {

Listener::Listener(std::vector<std::string> channels,
                   std::function<std::vector<Endpoint>()> endpoints, std::function<void()> on_wake,
                   Options opt)
    : channels_(std::move(channels)),
      endpoints_(std::move(endpoints)),
      on_wake_(std::move(on_wake)),
      opt_(opt) {}

Listener::~Listener() {
  stop();
}

void Listener::start() {
  thread_ = std::thread([this] { run(); });
}

void Listener::stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    if (conn_ != nullptr) conn_->shutdown();
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void Listener::run() {
  Duration backoff = opt_.reconnect_min;
  size_t turn = 0;
  std::unique_lock lock(mu_);
  while (!stopped_) {
    lock.unlock();
    const std::vector<Endpoint> eps = endpoints_();
    const Endpoint& ep = eps[turn++ % eps.size()];
    // No call timeout: a subscribed connection waits for messages as long as it takes.
    Result<std::unique_ptr<Connection>> c =
        Connection::open(ep, opt_.connect_timeout, Duration::zero());
    lock.lock();
    if (stopped_) return;
    if (c) {
      conn_ = c->get();
      lock.unlock();
      std::vector<std::string_view> argv{"SUBSCRIBE"};
      argv.insert(argv.end(), channels_.begin(), channels_.end());
      // An error reply (NOAUTH: the server wants a password) is a failed subscription too.
      if (Result<Reply> r = (*c)->call(argv); r && !r->is_error()) {
        backoff = opt_.reconnect_min;
        --turn;  // stay with a node that works
        read_messages(**c);
      }
      lock.lock();
      conn_ = nullptr;
    }
    cv_.wait_for(lock, backoff, [&] { return stopped_; });
    backoff = std::min<Duration>(backoff * 2, opt_.reconnect_max);
  }
}

void Listener::read_messages(Connection& c) {
  on_wake_();  // wake-ups may have been missed while unsubscribed
  for (;;) {
    Result<Reply> m = c.read();
    if (!m) return;
    if (m->type == Reply::Type::array && !m->elements.empty() && m->elements[0].str == "message")
      on_wake_();
  }
}

}  // namespace delayq::redis
