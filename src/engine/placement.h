// Where a queue's jobs live, chosen once when the engine opens (open_engine.cc): every job in
// memory (MemoryPlacement below: the in-memory engine, and a durable store without a disk tier,
// whose records are all in memory too), or tiered (tier/tiered_placement.h: jobs due at or
// after a horizon live only on disk, docs/tiered-store.md). The engine calls through it the same
// way whatever the placement; Shards::apply (shard.h) runs each call under its shard's lock with
// the commit protocol, which asks the placement for the lock's `now` and for the write.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "delayq/error.h"
#include "delayq/job.h"
#include "engine/core.h"
#include "engine/shard_mutex.h"
#include "engine/store_seam.h"

namespace delayq::engine {

struct Shard;
class Shards;

// Jobs per topic that the cores do not hold (a tiered placement's disk-only jobs).
using OutOfMemoryCounts = std::map<std::string, int64_t>;

class Placement {
 public:
  virtual ~Placement() = default;

  // Takes `lock` (a shard's) at a `now` by which no job kept out of memory is due, and returns
  // that `now`: what a call under the lock runs at.
  virtual TimePoint lock_at_now(std::unique_lock<ShardMutex>& lock) = 0;
  // Under the shard's lock, after a call: queues its core changes (`fx`), with whatever the call
  // staged beside them, as one batch to the durable store. The ticket to wait for (nullopt:
  // nothing to write, or no store); an error: nothing was queued.
  virtual Result<std::optional<uint64_t>> queue(Shard& s, const Effects& fx) = 0;
  // When the placement next needs a call to come (ns since 1970; INT64_MAX: never), so that a
  // waiting consumer wakes for it (Driver::next_look).
  virtual int64_t next_call_ns() const { return INT64_MAX; }

  // The calls on one job, under its shard's lock at lock_at_now()'s `now`, as the core's
  // calls of the same names.
  virtual Status push(Shard& s, JobSpec&& spec, TimePoint now) = 0;
  virtual Result<JobInfo> get(Shard& s, std::string_view id, TimePoint now) = 0;
  virtual Status cancel(Shard& s, std::string_view id, TimePoint now) = 0;
  virtual Status reschedule(Shard& s, std::string_view id, TimePoint when, TimePoint now) = 0;
  virtual Status requeue_dead(Shard& s, std::string_view id, TimePoint now) = 0;
  // A token call (ack, nack, dead_letter, release, touch) that the core answered not_found
  // (`core_said`): the answer to give.
  virtual Status token_miss(Shard& s, const Token& t, Status core_said) = 0;

  // For stats(), under the shard's lock: what its calls did to the jobs kept out of memory
  // since open (added to `out` per topic, and to the totals of `st`).
  virtual void add_shard_stats(Shard& s, Stats& st, OutOfMemoryCounts& out) {
    (void)s;
    (void)st;
    (void)out;
  }
  // For list_jobs() of delayed jobs, with every shard's lock held (Shards::apply_all): up to
  // `limit` of `topic`'s jobs kept out of memory keyed (due, seq) after `after` (nullopt: from
  // the first), in key order. `read_to`: set when the read stopped early (a page reads a bounded
  // number of records): every job keyed at or before it was considered, the ones after were not.
  struct OutOfMemoryPage {
    std::vector<Core::BrowseItem> items;
    std::optional<cursor::Key> read_to;
  };
  // Whether some jobs live out of memory (then list_jobs of delayed jobs asks for them).
  virtual bool keeps_jobs_out_of_memory() const { return false; }
  virtual Result<OutOfMemoryPage> browse_out_of_memory(std::string_view topic,
                                                       const std::optional<cursor::Key>& after,
                                                       size_t limit) {
    (void)topic;
    (void)after;
    (void)limit;
    return OutOfMemoryPage{};
  }
  // For stats(), after the shards: adds the jobs kept out of memory as stored to `out`, then
  // counts every one of `out` into `st`.
  virtual void finish_stats(Stats& st, OutOfMemoryCounts& out) {
    (void)st;
    (void)out;
  }
};

// Every job in memory: each call is the core's, and its changes go to the store as they are.
class MemoryPlacement final : public Placement {
 public:
  explicit MemoryPlacement(Shards& shards) : shards_(shards) {}

  TimePoint lock_at_now(std::unique_lock<ShardMutex>& lock) override;
  Result<std::optional<uint64_t>> queue(Shard& s, const Effects& fx) override;
  Status push(Shard& s, JobSpec&& spec, TimePoint now) override;
  Result<JobInfo> get(Shard& s, std::string_view id, TimePoint now) override;
  Status cancel(Shard& s, std::string_view id, TimePoint now) override;
  Status reschedule(Shard& s, std::string_view id, TimePoint when, TimePoint now) override;
  Status requeue_dead(Shard& s, std::string_view id, TimePoint now) override;
  Status token_miss(Shard& s, const Token& t, Status core_said) override;

 private:
  Shards& shards_;
};

}  // namespace delayq::engine
