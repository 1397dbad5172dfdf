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
// comes, then takes the job itself; one thread of the engine's does the same for reserve_async()
// waits (started by the first) and runs their callbacks. No periodic tick: an idle engine
// sleeps. With a ManualClock there is no timer: the work falls due inside
// ManualClock::advance().
//
// Everything is lost when the process ends; open_store() (delayq/store.h) gives the same Engine
// journaled to disk, kept across restarts and crashes.
#pragma once

#include <memory>

#include "delayq/clock.h"
#include "delayq/limits.h"
#include "delayq/queue.h"

namespace delayq {

struct EngineOptions {
  // How finely the timing wheel sorts due times and leases: between 1 ms and 1 s. Jobs still
  // fire on their exact instant (never early; late only by wake-up latency): a coarser tick
  // means fewer wheel steps for far-off jobs, not later jobs.
  Duration tick = std::chrono::milliseconds(1);
  // What the queue accepts (max_delay, max_body_bytes) and the defaults of a job pushed without
  // a ttr or a retry policy: delayq/limits.h.
  Limits limits{};
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
  // How many jobs you expect the queue to hold at once, if you know. open() then allocates and
  // touches the memory of that many jobs' tables up front (about 200 bytes a job, counted in the
  // process's resident memory from then on), so that pushes up to that many neither grow a
  // table nor take a page fault. More jobs still fit: the tables grow past it as they would
  // have. 0 (the default): tables grow as jobs come. At most kMaxExpectedJobs.
  size_t expected_jobs = 0;
  static constexpr size_t kMaxExpectedJobs = 100'000'000;
};

// The Queue interface (delayq/queue.h has every call's contract), in this process's memory.
// Destroying it closes it, then waits for its thread; that must not happen inside one of its own
// reserve_async callbacks (close() may).
class Engine : public Queue {
 public:
  // Checks the options and starts the engine. Errors: invalid_argument, naming the option.
  static Result<std::unique_ptr<Engine>> open(const EngineOptions& options);

  // The clock this engine runs on.
  virtual Clock& clock() = 0;

 protected:
  Engine() = default;
};

}  // namespace delayq
