// Power-loss simulation for the crash harness: a RocksDB file system that records how much of
// each file has been synced, and the driver's side that cuts a store directory back to what a
// power loss could leave of it.
//
// The worker process (the one that gets killed) runs its store on sync_recording_env(log): every
// file RocksDB writes goes to the real file system as usual, and each successful Sync/Fsync
// appends a line "this file is durable up to N bytes" to the side log `log` (outside the store
// directory) before the Sync returns, so no caller is ever answered on a sync the log does not
// show. Files are named by inode, not by path: RocksDB renames synced files into place (CURRENT,
// OPTIONS, IDENTITY), and an inode keeps its synced size across a rename without any tracking.
//
// The driver kills the worker with SIGKILL (so the kernel still holds everything written), then
// calls Ledger::apply_log() and simulate_power_loss(), which truncates every file to what was
// durable. See simulate_power_loss() for the model and what it leaves out.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>

#include "delayq/error.h"

namespace rocksdb {
class Env;
}

namespace delayq::power_loss {

// A RocksDB environment on the default one whose writable files record their syncs in the side
// log at `log_path` (created if missing; appended to). Null, with `error` set, if the side log
// cannot be opened. A write to the side log that fails makes the Sync fail with an IOError, so
// an unrecorded sync never reaches a caller.
std::unique_ptr<rocksdb::Env> sync_recording_env(const std::string& log_path, std::string* error);

// What is durable of each file, by inode: bytes that survive a power loss.
class Ledger {
 public:
  // Declares every file now in `dir` durable at its current size: the state after a clean
  // shutdown that synced everything (how the driver leaves the store between cycles).
  Status reset_to(const std::string& dir);
  // Applies the side log a recording environment wrote, in order. A last line without its
  // newline (a worker killed mid-write) is ignored: the sync it records was never answered.
  Status apply_log(const std::string& log_path);

  // The durable size of a file; nullopt if it was created since the last reset and never
  // synced (its very existence is not durable then).
  std::optional<uint64_t> durable(uint64_t inode) const;

  // How many lines of each kind the last apply_log() read, for the harness's summary.
  struct Counts {
    uint64_t created = 0, synced = 0, truncated = 0, removed = 0;
  };
  const Counts& counts() const { return counts_; }

 private:
  std::unordered_map<uint64_t, uint64_t> durable_;  // inode -> bytes
  Counts counts_;
};

struct PowerLossStats {
  uint64_t files = 0;                // regular files in the directory at the power loss
  uint64_t cut = 0;                  // files that lost bytes
  uint64_t bytes_dropped = 0;        // bytes written but not synced, and dropped
  uint64_t unsynced_tails_kept = 0;  // files that kept part of their unsynced bytes (writeback)
  uint64_t never_synced_deleted = 0;
  uint64_t never_synced_emptied = 0;
};

// Cuts `dir` (the store of a worker killed a moment ago) back to what a power loss could leave
// of it, choosing among the possible outcomes with `rng`. Adds what it did to `stats`, and if
// `report` is not null, a line per file (its size, what was durable, what was kept).
Status simulate_power_loss(const std::string& dir, const Ledger& ledger, std::mt19937_64& rng,
                           PowerLossStats& stats, std::string* report = nullptr);

}  // namespace delayq::power_loss
