// HttpQueue: the Queue of delayq/http.h, over delayqd's HTTP API. Each call takes a connection
// (a wire::HttpClient) from a small pool, makes its request and gives it back:
//
//   http_queue.cc     the pool, the request and its answer (errors as Errc), close(), health()
//   http_schedules.cc the six schedule calls, one route each
//   http_calls.cc     the calls that are one route each (push ... pause, limits, list_jobs,
//                     stats)
//   http_reserve.cc   reserve() (/pop), reserve_async() on a thread per wait, the consume() hooks
//   open_http.cc      open_http(): the URL, the options, the token file
//
// close() writes to an eventfd that every connection watches (HttpClient::set_wake_fds), so that
// a waiting /pop ends at once (its connection closed: the daemon withdraws it).
#pragma once

#include <atomic>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/fork_guard.h"
#include "delayq/http.h"
#include "delayq/queue.h"
#include "wire/http_client.h"
#include "wire/json.h"

namespace delayq::client {

class HttpQueue final : public Queue {
 public:
  HttpQueue(wire::HttpEndpoint at, HttpOptions options);
  ~HttpQueue() override;

  Result<std::string> push(JobSpec spec) override;
  std::vector<Result<std::string>> push_batch(std::vector<JobSpec> specs) override;
  Result<Delivery> reserve(std::span<const std::string> topics, Duration timeout) override;
  void reserve_async(std::vector<std::string> topics, Duration timeout,
                     std::function<void(Result<Delivery>)> done, std::stop_token stop) override;
  using Queue::reserve;
  using Queue::reserve_async;
  Status ack(const Token& token) override;
  std::vector<Status> ack_batch(std::span<const Token> tokens) override;
  Status nack(const Token& token, std::optional<Duration> delay) override;
  Status dead_letter(const Token& token) override;
  Status release(const Token& token) override;
  Result<TimePoint> touch(const Token& token) override;
  Status cancel(std::string_view id) override;
  Result<JobInfo> get(std::string_view id) override;
  Status reschedule(std::string_view id, TimePoint when) override;
  Result<std::vector<JobInfo>> list_dead(std::string_view topic, size_t limit) override;
  Status requeue_dead(std::string_view id) override;
  Result<uint64_t> requeue_dead_topic(std::string_view topic) override;
  Result<uint64_t> purge_dead(std::string_view topic) override;
  Status pause(std::string_view topic) override;
  Status resume(std::string_view topic) override;
  Status set_topic_limits(std::string_view topic, const TopicLimits& limits) override;
  Status clear_topic_limits(std::string_view topic) override;
  Result<JobPage> list_jobs(std::string_view topic, JobState state, size_t limit,
                            std::string_view cursor) override;
  // Schedules, through /schedules/* (http_schedules.cc).
  Status schedule(const ScheduleSpec& spec) override;
  Status unschedule(std::string_view id) override;
  Result<ScheduleInfo> get_schedule(std::string_view id) override;
  Result<SchedulePage> list_schedules(size_t limit, std::string_view cursor) override;
  Status pause_schedule(std::string_view id) override;
  Status resume_schedule(std::string_view id) override;
  Stats stats() override;
  Status health() override;
  void close() override;

  // POST /backup {"name": name} (delayqd's --backup-dir): the directory written. Not a Queue
  // call; the CLI's backup command uses it.
  Result<std::string> backup(const std::string& name);
  // stats() with its failure: the CLI reports why the daemon did not answer.
  Result<Stats> checked_stats() { return fetch_stats(); }

 protected:
  Result<Delivery> reserve_interruptible(std::span<const std::string> topics, Duration timeout,
                                         const std::atomic<bool>& stop) override;
  void wake_waiters() override;

 private:
  // One request on a pooled connection; `wake` (-1: none) withdraws it when readable (besides
  // close()). The "data" member of a success, or the failure as a Status.
  // `after_close`: made after close() too (stats()), on a connection of its own.
  Result<wire::json::Value> call(std::string_view method, std::string_view path,
                                 const std::string& body, Duration extra_wait = Duration::zero(),
                                 int wake = -1, bool after_close = false);
  // POST `path` {"id": id} (http_schedules.cc).
  Status schedule_call(std::string_view path, std::string_view id);
  Status call_status(std::string_view path, const std::string& body) {
    return call("POST", path, body).status();
  }
  // requeue_dead_topic() and purge_dead(): POST {"topic"} to `path`, the count in data.<count_key>.
  Result<uint64_t> dead_topic_call(std::string_view path, std::string_view topic,
                                   std::string_view count_key);
  // Ok, or why no call may be made now (closed; a forked child).
  Status usable() const;
  // What push() checks before sending `spec` (see delayq/http.h).
  Status check(JobSpec& spec, TimePoint now) const;
  Result<Stats> fetch_stats(bool after_close = false);
  // /pop of `topics` waiting up to `timeout`, withdrawn when `wake` is readable.
  Result<Delivery> pop(std::span<const std::string> topics, Duration timeout, int wake);
  Status settle(std::string_view path, const Token& token, std::optional<Duration> delay = {});

  std::unique_ptr<wire::HttpClient> take_client();
  void give_back(std::unique_ptr<wire::HttpClient> c);

  const wire::HttpEndpoint at_;
  const HttpOptions options_;
  const ForkGuard fork_;
  int close_fd_ = -1;  // eventfd, readable once close() began
  std::atomic<bool> closed_{false};
  bool closing_ = false;  // close() began (under mu_)

  std::mutex mu_;
  std::vector<std::unique_ptr<wire::HttpClient>> idle_;

  // reserve_async()'s threads: each ends once its callback ran; close() joins them.
  struct Waiter {
    std::thread thread;
    std::atomic<bool> finished{false};
  };
  std::mutex waiters_mu_;
  std::list<Waiter> waiters_;
  // consume()'s waits, each with an eventfd that wake_waiters() writes to (a consumer is
  // stopping: each looks at its stop flag, and waits on when it is not its own).
  std::set<int> consumer_fds_;
};

// Refuses text that JSON would carry changed (bytes that are not UTF-8 arrive as U+FFFD), naming
// it as `what`; and {"key": value} after that check (http_calls.cc).
Status text_only(std::string_view what, std::string_view text);
Result<std::string> one_member(std::string_view key, std::string_view value);

}  // namespace delayq::client
