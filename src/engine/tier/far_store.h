// The seam between the engine and a durable store's disk tier (docs/tiered-store.md): what the
// engine tells the store about jobs that live only on disk, and what it reads back.
//
// A job due at or after the horizon lives only on disk, keyed by (due, seq) (FarKey). The engine
// decides which jobs go there and when they come back (tier.h); the store keeps them (wal/) and
// answers lookups by id and scans in key order. Nothing here is used by the in-memory engine.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "delayq/error.h"
#include "engine/record.h"

namespace delayq::engine {

// Where a disk-only job sits in the due-ordered family: its due time, then its seq. Also the
// horizon: a job is on disk iff its key is at or above it.
struct FarKey {
  TimePoint due{};
  uint64_t seq = 0;
  auto operator<=>(const FarKey&) const = default;
};
inline FarKey far_key(const JobRecord& r) {
  return FarKey{r.due, r.seq};
}
// Records in their disk order.
inline bool by_far_key(const JobRecord& a, const JobRecord& b) { return far_key(a) < far_key(b); }

// One change to the disk tier: the job now lives on disk as `record` (put), or it left the disk
// tier (`record` as it was stored there: its key, id and topic say what to delete).
struct FarChange {
  bool put = false;
  JobRecord record;
};

// The disk-tier part of one write: the changes in call order, and the horizon when a refill
// raised it (stored as a lower bound of every disk-only key, for the next open's reads).
struct FarBatch {
  std::vector<FarChange> changes;
  std::optional<FarKey> horizon;
  bool empty() const { return changes.empty() && !horizon; }
};

// Disk-only jobs per topic, as stored.
using TopicCounts = std::vector<std::pair<std::string, uint64_t>>;

// What a durable store with a disk tier offers the engine. Reads see what was written, not what
// is queued in the commit pipeline: the engine covers the difference (far_shard.h's overlay).
class FarStore {
 public:
  virtual ~FarStore() = default;

  // How far ahead of now the engine keeps the horizon (StoreOptions::horizon; Duration::max():
  // every job in memory).
  virtual Duration horizon_span() const = 0;
  // StoreOptions::memory_jobs: the refill stops adding to memory once it holds this many jobs
  // (0: no cap), down to a minimum lead (tier.h).
  virtual uint64_t memory_budget() const { return 0; }
  // As stored at open: a lower bound of every disk-only key, and the disk-only jobs per topic.
  virtual FarKey stored_horizon() const = 0;
  virtual const TopicCounts& stored_counts() const = 0;

  // Queues one call's changes as one atomic batch, like Persistence::write, with the disk tier's
  // part of it and `meta` (Persistence::write_with_meta: a schedule's record with the job of its
  // occurrence, wherever that job went). Returns the ticket to wait for
  // (Persistence::wait_durable).
  virtual Result<uint64_t> write(const std::vector<Change>& changes, const FarBatch& far,
                                 const Stats& totals, const std::vector<MetaPut>& meta) = 0;
  // Whether the batch with this ticket is written (its changes visible to the reads below).
  virtual bool written(uint64_t ticket) const = 0;

  // The written disk-only job with this id, if any. Errors: io_error, corrupt.
  virtual Result<std::optional<JobRecord>> find(std::string_view id) = 0;
  // Calls fn for each written disk-only job keyed in [from, below), in key order, until fn
  // returns false. Errors: io_error, corrupt (a record that does not decode, naming it).
  virtual Status scan(const FarKey& from, const FarKey& below,
                      const std::function<bool(JobRecord&&)>& fn) = 0;
  // Whether scan_topic() reads one topic's jobs alone (the store keeps a per-topic index of its
  // disk tier). Without it a topic's jobs are found by scan() and a filter (tier_browse.cc).
  virtual bool indexes_topics() const { return false; }
  // Like scan(), for the disk-only jobs of `topic` alone: the cost is the records it hands to fn
  // (and the ones it skips as damage), whatever the other topics hold. Errors: io_error,
  // corrupt, invalid_state (!indexes_topics()).
  virtual Status scan_topic(std::string_view topic, const FarKey& from, const FarKey& below,
                            const std::function<bool(JobRecord&&)>& fn) {
    (void)topic;
    (void)from;
    (void)below;
    (void)fn;
    return Status(Errc::invalid_state, "this store keeps no index of its disk tier by topic");
  }
  // Reads (without decoding) the first `n` records keyed in [from, below), so that a scan of
  // them soon after finds them in memory. Errors are left to that scan.
  virtual void prefetch(const FarKey& from, const FarKey& below, size_t n) {
    (void)from;
    (void)below;
    (void)n;
  }
};

}  // namespace delayq::engine
