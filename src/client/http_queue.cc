// HttpQueue's connections, requests and answers, close() and health() (see http_queue.h).
#include "client/http_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <utility>

#include "wire/answer.h"

namespace delayq::client {

namespace json = wire::json;

HttpQueue::HttpQueue(wire::HttpEndpoint at, HttpOptions options)
    : at_(std::move(at)),
      options_(std::move(options)),
      close_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

HttpQueue::~HttpQueue() {
  if (fork_.forked()) {
    // The parent's threads do not exist here: their handles are neither joined nor destroyed
    // (common/fork_guard.h); the child's exit or exec gives the memory back.
    new std::list<Waiter>(std::move(waiters_));
    return;
  }
  close();
  if (close_fd_ >= 0) ::close(close_fd_);
}

Status HttpQueue::usable() const {
  if (fork_.forked()) return fork_.refusal();
  if (closed_.load(std::memory_order_acquire))
    return Status(Errc::closed, "the queue of delayqd at " + at_.host + ":" +
                                    std::to_string(at_.port) + " was closed (Queue::close)");
  return Status();
}

std::unique_ptr<wire::HttpClient> HttpQueue::take_client() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  return std::make_unique<wire::HttpClient>(
      at_, wire::HttpClientOptions{.token = options_.token,
                                   .timeout = options_.call_timeout,
                                   .user_agent = options_.user_agent});
}

void HttpQueue::give_back(std::unique_ptr<wire::HttpClient> c) {
  std::lock_guard lock(mu_);
  if (idle_.size() < options_.connections && !closed_.load()) idle_.push_back(std::move(c));
}

Result<json::Value> HttpQueue::call(std::string_view method, std::string_view path,
                                    const std::string& body, Duration extra_wait, int wake,
                                    bool after_close) {
  if (Status s = usable(); !s.ok() && !(after_close && s.is(Errc::closed))) return s;
  // A long poll has its own deadline: the wait on top of the call timeout. A call after close()
  // has a connection of its own (the pool is gone).
  const bool own = closed_.load();
  std::unique_ptr<wire::HttpClient> client =
      own ? std::make_unique<wire::HttpClient>(
                at_, wire::HttpClientOptions{.token = options_.token,
                                             .timeout = options_.call_timeout,
                                             .user_agent = options_.user_agent})
          : take_client();
  client->set_timeout(options_.call_timeout + extra_wait);
  if (!own) client->set_wake_fds(close_fd_, wake);
  Result<wire::HttpReply> reply = client->request(method, path, body);
  client->set_wake_fds(-1, -1);
  if (!own) give_back(std::move(client));
  if (!reply) {
    if (reply.is(Errc::cancelled) && closed_.load()) return usable();
    return reply.status();
  }
  std::optional<wire::Answer> answer = wire::read_answer(reply->body);
  if (!answer) {
    return Status(Errc::io_error, "HTTP " + std::to_string(reply->status) + " from " +
                                      std::string(path) +
                                      " with an answer that is not delayqd's JSON: " +
                                      reply->body.substr(0, 200));
  }
  // A batch that was partly refused answers 200 with code 1 and no "error": its data says which.
  if (reply->status == 200 && (answer->ok() || answer->error.empty()))
    return std::move(answer->data);
  const std::string& name = answer->error;
  const Errc errc = wire::errc_of(name);
  std::string message = answer->message;
  if (name == "unauthorized")
    message = "delayqd refused the request (HTTP 401 unauthorized: " + message +
              "); give its bearer token";
  else if ((errc == Errc::unavailable && name != "unavailable") || name == "forbidden" ||
           name == "not_supported")
    message = "delayqd answered HTTP " + std::to_string(reply->status) + " " + name + ": " + message;
  return Status(errc, message);
}

Status HttpQueue::health() {
  if (Status s = usable(); !s.ok()) return s;
  return call("GET", "/health", "").status();
}

Result<std::string> HttpQueue::backup(const std::string& name) {
  json::Writer w;
  w.begin_object().key("name").value(name).end_object();
  auto data = call("POST", "/backup", w.str());
  if (!data) return data.status();
  return json::member_string(*data, "dir");
}

void HttpQueue::wake_waiters() {
  std::lock_guard lock(mu_);
  const uint64_t one = 1;
  for (int fd : consumer_fds_) [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
}

void HttpQueue::close() {
  if (fork_.forked()) return;
  {
    std::lock_guard lock(mu_);
    if (closing_) return;
    closing_ = true;
  }
  stop_consumers();
  closed_.store(true, std::memory_order_release);
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(close_fd_, &one, sizeof one);
  // The reserve_async() threads end with `closed` now; this one is not joined when it is one of
  // them (a callback that closes the queue).
  std::list<Waiter> waiters;
  {
    std::lock_guard lock(waiters_mu_);
    waiters.swap(waiters_);
  }
  for (Waiter& w : waiters) {
    if (w.thread.get_id() == std::this_thread::get_id())
      w.thread.detach();
    else if (w.thread.joinable())
      w.thread.join();
  }
  std::lock_guard lock(mu_);
  idle_.clear();
}

}  // namespace delayq::client
