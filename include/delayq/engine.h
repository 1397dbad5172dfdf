// The in-process engine: a Queue whose jobs live in this process's memory.
//
//   delayq::EngineOptions opt;                       // 1 ms tick, system clock
//   auto q = delayq::Engine::open(opt).value();
//   q->push({.topic = "orders", .id = "order-42", .delay = 30min, .body = "..."});
//   auto d = q->reserve("orders", 1s);               // a Delivery, or Errc::timeout
//   if (d) q->ack(d->token);
//
// How it runs: one core (jobs table, timing wheel, ready lists) per shard, each behind its own
// mutex. A thread blocked in reserve() sleeps until a job is made ready or the next deadline
// comes, then takes the job itself; one driver thread (Boost.Asio steady_timer) wakes for
// deadlines only while reserve_async() waits are pending. No periodic tick: an idle engine
// sleeps. With a ManualClock there is no timer: the work falls due inside
// ManualClock::advance().
//
// Everything is lost when the process ends; open_store() (delayq/store.h) gives the same Engine
// journaled to disk, kept across restarts and crashes.
#pragma once

#include <functional>
#include <memory>

#include "delayq/clock.h"
#include "delayq/queue.h"

namespace delayq {

class Engine;
struct EngineOptions;
namespace engine {  // internals that the durable store (wal/) uses to open an Engine
class Persistence;
struct JobRecord;
Result<std::unique_ptr<Engine>> open_engine(
    const EngineOptions&, std::unique_ptr<Persistence>,
    const std::function<Status(const std::function<Status(JobRecord&&)>&)>&, const Stats&,
    const std::function<void(const std::string&)>& skip = {});
// The store an Engine writes to (null for the in-memory Engine): how open_store()'s extras, such
// as backup_store(), reach their journal.
Persistence* persistence_of(Engine& engine) noexcept;
}  // namespace engine

struct EngineOptions {
  // How finely the timing wheel sorts due times and leases: between 1 ms and 1 s. Jobs still
  // fire on their exact instant (never early; late only by wake-up latency): a coarser tick
  // means fewer wheel steps for far-off jobs, not later jobs.
  Duration tick = std::chrono::milliseconds(1);
  // Pushes (and reschedules, nack delays, ttrs) further out than this are refused.
  Duration max_delay = std::chrono::hours(24 * 3650);
  // Larger bodies are refused.
  size_t max_body_bytes = size_t{1} << 20;
  // The lease of a job pushed with ttr = 0.
  Duration default_ttr = std::chrono::seconds(30);
  // The policy of a job pushed without one: exponential from 1 s, doubling, capped at 1 h,
  // 10 attempts.
  RetryPolicy default_retry;
  // How long after a due instant the engine may wake to deliver it, so that jobs due close
  // together are delivered by one wake-up rather than one each. Never early; adds at most this
  // much lateness. 0 wakes exactly on each instant (more CPU at high rates).
  Duration timer_slack = std::chrono::microseconds(100);
  // Independent cores, chosen by hash of the job id, to use more than one CPU. Ordering within a
  // topic holds per shard. 1 keeps a single global order.
  size_t shards = 1;
  // The clock jobs fire by; must outlive the engine. nullptr: the system clock.
  Clock* clock = nullptr;
  // Seed for retry jitter; 0 picks one at random.
  uint64_t seed = 0;
};

class Engine : public Queue {
 public:
  // Checks the options and starts the engine. Errors: invalid_argument, naming the option.
  static Result<std::unique_ptr<Engine>> open(const EngineOptions& options);
  // close(), then waits for the driver thread. Must not run inside a reserve_async callback of
  // this engine (close() may).
  ~Engine() override;

  Result<std::string> push(JobSpec spec) override;
  std::vector<Result<std::string>> push_batch(std::vector<JobSpec> specs) override;
  Result<Delivery> reserve(std::span<const std::string> topics, Duration timeout) override;
  using Queue::reserve;
  void reserve_async(std::vector<std::string> topics, Duration timeout,
                     std::function<void(Result<Delivery>)> done) override;
  Status ack(const Token& token) override;
  Status nack(const Token& token, std::optional<Duration> delay = std::nullopt) override;
  Status dead_letter(const Token& token) override;
  Result<TimePoint> touch(const Token& token) override;
  Status cancel(std::string_view id) override;
  Result<JobInfo> get(std::string_view id) override;
  Status reschedule(std::string_view id, TimePoint when) override;
  Result<std::vector<JobInfo>> list_dead(std::string_view topic, size_t limit) override;
  Status requeue_dead(std::string_view id) override;
  Result<uint64_t> requeue_dead_topic(std::string_view topic) override;
  Result<uint64_t> purge_dead(std::string_view topic) override;
  Stats stats() override;
  Status health() override;
  void close() override;

  // The clock this engine runs on.
  Clock& clock();

 protected:
  Result<Delivery> reserve_interruptible(std::span<const std::string> topics, Duration timeout,
                                         const std::atomic<bool>& stop) override;
  void wake_waiters() override;

 private:
  friend Result<std::unique_ptr<Engine>> engine::open_engine(
      const EngineOptions&, std::unique_ptr<engine::Persistence>,
      const std::function<Status(const std::function<Status(engine::JobRecord&&)>&)>&,
      const Stats&, const std::function<void(const std::string&)>&);
  friend engine::Persistence* engine::persistence_of(Engine&) noexcept;
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  void join_driver();
  std::unique_ptr<Impl> impl_;
};

}  // namespace delayq
