// The worker: a forked process that opens the store and runs the load on it from Model::threads
// threads, the consumer thread and a consume() loop (load.h), reporting every call over a pipe,
// until the driver kills it.
#pragma once

#include <cstdint>
#include <string>

#include "delayq/store.h"
#include "model.h"

namespace delayq::crash {

// A fault a worker plants in what it reports, for delayq-crashtest's own tests (its hidden
// --plant-fault, src/crashtest/); nothing else sets one.
enum class WorkerFault : uint8_t {
  none,
  // Its first delivery is reported due an hour later than the store said: what a store that
  // hands out a job an hour before its due time would show.
  early_delivery,
  // It aborts (SIGABRT, no core file) 2 ms after its store opened, as a worker that crashes.
  dies,
};

// How a worker runs its store.
struct WorkerSetup {
  Sync sync = Sync::always;
  size_t shards = 1;
  uint32_t sync_batch_ops = 1000;
  Duration sync_interval = 10ms;
  // Power-loss cycles: the store runs on a file system that records its syncs in this side log
  // (power_loss_fs.h). Empty: the real file system, as is.
  std::string sync_log;
  // Look at every job of the model right after the open (WAL replay, when the last worker was
  // killed) and report it before the load starts (Kind::seen, Kind::observed).
  bool observe = false;
  // RocksDB with small write buffers, so that flushes and compactions run (and are killed)
  // while the load runs; each reported as bg_begin / bg_end.
  bool small_buffers = true;
  // StoreOptions::horizon: Duration::max() (every job in memory), or kTinyHorizon, under which
  // most of the load's jobs live on disk only and refills run all the time (and are killed).
  Duration horizon = Duration::max();
  WorkerFault fault = WorkerFault::none;
};

// The disk tier's horizon in the cycles that have one (docs/tiered-store.md): below the load's
// push delays (up to 300 ms) and reschedules, so that most jobs go to disk and come back.
constexpr Duration kTinyHorizon = std::chrono::milliseconds(30);

// The worker's body, in the child of fork(): never returns (the driver's SIGKILL ends it; any
// other end is an _exit() with a record saying why).
[[noreturn]] void worker_main(int fd, Model& model, uint64_t seed, const std::string& dir,
                              const WorkerSetup& setup);

}  // namespace delayq::crash
