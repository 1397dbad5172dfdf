// The `capacity` workload of delayq-bench (../shared/workloads.md; docs/tiered-store.md): many
// far-future jobs pending in the durable store, with and without its disk tier.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "delayq/store.h"

namespace delayq::bench {

struct CapacityArgs {
  size_t jobs = 100000;  // far jobs, due uniformly over the next 30 days
  std::string dir;       // the store (empty: a fresh temp dir, removed after)
  Sync sync = Sync::batch;
  std::string sync_params;  // the params fields that describe the sync mode, for the JSON line
  uint32_t sync_batch_ops = 1000;
  Duration sync_interval = std::chrono::milliseconds(10);
  size_t batch = 100;  // push_batch of this many (0: one push() per job)
  size_t shards = 1;
  // StoreOptions::horizon in seconds; 0: none (every job in memory, the store before the tier).
  double horizon_s = 3600;
  uint64_t seed = 1;
};

// Runs the workload (each phase in a child process of its own, so that resident memory is the
// store's) and prints its JSON line. Returns 0, or 1 if a job was lost or a phase failed.
int run_capacity(const CapacityArgs& a);

}  // namespace delayq::bench
