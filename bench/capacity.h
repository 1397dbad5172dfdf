// The `capacity` workload of delayq-bench (docs/benchmarks.md, "Capacity"; docs/tiered-store.md): many
// far-future jobs pending in the durable store, with and without its disk tier.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
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

// The `disk-churn` workload (disk_churn.cc): the disk tier's bytes per pending job while its
// jobs turn over, `rounds` rounds of half a day (a twentieth of their 10-day window) each. Prints its JSON line; 0, or 1 if
// a job was lost, came early or a call failed.
int run_disk_churn(const CapacityArgs& a, size_t rounds);

// What the capacity workloads share (capacity.cc, disk_churn.cc):
// The store's options as the arguments say (no dir).
StoreOptions store_options(const CapacityArgs& a);
// Pushes n jobs to topic "far" with 64-byte bodies, each due `from` plus a uniform draw below
// `span` from now, in push_batch() calls of `batch` (0: one push() each); false (said on stderr)
// if a push failed. The specs are made a chunk at a time, never all at once: N of them in memory
// (about 200 bytes each) would count in rss_bytes as if the store held them. Making a chunk
// costs far less than pushing it (tens of ns a job against µs).
bool push_far(Engine& q, size_t n, std::mt19937_64& rng, Duration from, Duration span,
              size_t batch);
// The bytes of every file under `dir`.
uint64_t disk_bytes(const std::string& dir);

}  // namespace delayq::bench
