// The worker process's shared state (worker.cc) and its load (loop.cc). Internal to the worker.
#pragma once

#include <unistd.h>

#include <rocksdb/env.h>

#include <cerrno>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "delayq/engine.h"
#include "worker.h"

namespace delayq::crash {

// What the worker's threads share: the pipe, the store and the model (behind one lock).
class WorkerProcess {
 public:
  WorkerProcess(int fd, Model& model) : fd_(fd), m_(model) {}

  [[noreturn]] void run(const std::string& dir, const WorkerSetup& setup, uint64_t seed);

  // Reports a record and applies it to this process's copy of the model, under the lock, so
  // that the driver applies the records in the order this process did. A record the rule book
  // refuses ends the worker: the driver applies the same record and fails the test.
  void emit(const Record& r) {
    std::lock_guard lock(mu_);
    emit_locked(r);
  }
  void emit_locked(const Record& r) {
    send(r);
    if (!m_.apply(r)) _exit(4);
  }
  void send(const Record& r) {
    ssize_t n;
    do {
      n = ::write(fd_, &r, sizeof r);
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof r)) _exit(5);  // the driver is gone
  }
  // Reports a delivery made to worker thread `thread` by a reserve() that began at t0 and
  // returned at t1 (with a violation for each static promise it breaks). Ends the worker when
  // the rule book refuses it.
  void report_delivery(const Delivery& d, size_t thread, int64_t t0, int64_t t1);
  // Starts consume() on kConsumeTopic (consume.cc), its handler reporting what it does.
  void start_consume();

  [[noreturn]] void fail_with(const std::string& what, int code) {
    Record r = make_record(Kind::error);
    set_text(r, what);
    {
      std::lock_guard lock(mu_);
      send(r);
    }
    _exit(code);
  }

  std::mutex mu_;
  int fd_;
  Model& m_;
  std::unique_ptr<rocksdb::Env> recording_env_;  // power-loss cycles
  std::unique_ptr<rocksdb::Env> env_;            // outlives q_
  std::unique_ptr<Engine> q_;
  bool power_loss_ = false;   // a power-loss cycle's worker (its store records its syncs)
  bool plant_early_ = false;  // WorkerFault::early_delivery, until planted (under mu_)
  Consumer consumer_;         // consume() (never stopped: the worker is killed)
};

// One thread's share of the load (loop.cc): calls on its own topics and jobs only.
[[noreturn]] void run_loop(WorkerProcess& w, size_t thread, uint64_t seed);
// A schedule call of the load (schedule_load.cc), by `thread` (0).
void schedule_call(WorkerProcess& w, size_t thread, std::mt19937_64& rng);

}  // namespace delayq::crash
