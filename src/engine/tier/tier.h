// The engine's side of a durable store's disk tier (docs/tiered-store.md): the horizon, the
// refill that moves the next slice of disk-only jobs into the shards before they fall due, the
// lookups of disk-only jobs by id, and the writes that carry a call's disk changes.
//
// The boundary: a job is on disk iff its (due, seq) key is at or above the horizon. The horizon
// only rises, and only in a refill step, which holds every shard's lock (Shards::apply_all);
// every call reads it under its own shard's lock (Shards::apply), after making sure no disk-only
// job is due by its `now` (TieredPlacement::lock_at_now, tiered_placement.h). So a push never
// races a refill: it runs wholly before a step (and the step loads it) or wholly after (and it
// sees the new horizon).
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "delayq/error.h"
#include "engine/core.h"
#include "engine/store_seam.h"
#include "engine/tier/far_shard.h"
#include "engine/tier/far_store.h"

namespace delayq::engine {

struct Shard;
class Shards;

class Tier {
 public:
  // Disk-only jobs loaded per refill step (one batch, every shard locked meanwhile).
  static constexpr size_t kStep = 1024;
  // With a memory budget (FarStore::memory_budget()), once memory holds that many jobs the
  // horizon is kept only this share of the span ahead of now (refilling when less is left, up to
  // twice it): never less, whatever the budget, so that no job is late for it.
  static constexpr int kMinLeadDivisor = 8;

  // Starts at the stored horizon (or now + span, if that is lower); the first call's
  // keep_ahead() refills up to now + span. `shard_count`: how many shards the engine will have
  // (each gets its FarShard). `skip` (StoreOptions::tolerant): a disk record that Core::restore
  // refuses is reported to it and dropped from the disk, instead of stopping the engine.
  Tier(FarStore& store, Shards& shards, size_t shard_count, SkipReport skip = {});
  Tier(const Tier&) = delete;
  Tier& operator=(const Tier&) = delete;
  // Before the engine serves: stores the horizon if it started below the stored one.
  Status open();

  FarStore& store() { return store_; }
  // Under the shard's lock: its part of the disk tier.
  FarShard& far(const Shard& s);
  // Under any shard's lock.
  const FarKey& horizon() const { return horizon_; }

  // Under any shard's lock: whether a job keyed `k` lives on disk.
  bool on_disk(const FarKey& k) const { return !(k < horizon_); }
  // Under any shard's lock: whether a job pushed now, due at `due`, goes to disk (its seq is
  // above every seq so far, so only the due time decides).
  bool pushed_to_disk(TimePoint due) const { return due >= horizon_.due; }

  // Without any shard lock: refills while less than half the span is left before the horizon.
  // A failure stops the engine (the waiting component is closed with it) and is returned.
  Status keep_ahead();
  // Without a lock: whether no disk-only job is due by `now` (a call at `now` may go ahead).
  bool covers(TimePoint now) const {
    // A horizon at the end of time is past every key (Tier::step loads the jobs due at the end
    // of time itself before it gets there), so it covers a clock at the end of time too.
    const int64_t h = horizon_ns_.load(std::memory_order_acquire);
    return now.time_since_epoch().count() < h || h == std::numeric_limits<int64_t>::max();
  }
  // When the next refill is due (ns since 1970; INT64_MAX: never): waiting consumers wake for it.
  int64_t refill_at_ns() const { return refill_at_ns_.load(std::memory_order_acquire); }

  // Under the shard's lock: the disk-only job `id`, if any (its unwritten state included).
  Result<std::optional<JobRecord>> find(FarShard& s, std::string_view id);
  // Under the shard's lock: queues the call's core changes (`fx`) with what it staged in `s`
  // and the shard's staged meta (a schedule's record), as one batch. Returns the ticket to wait
  // for.
  Result<uint64_t> commit(FarShard& s, const Effects& fx, const std::vector<MetaPut>& meta);

 private:
  // One refill step, under every shard's lock, after reading its records without the locks.
  Status warm_then_step();
  Status step();
  // What a step moved into the shards: their records, put into "jobs", and their removal from
  // the disk tier with the new horizon (nothing when the step moved nothing).
  struct Loaded {
    std::vector<Change> puts;
    FarBatch moved;
  };
  // The body of a step, under every shard's lock at `now`: restores the jobs it moves and
  // raises the horizon; step() writes what it returns.
  Result<Loaded> load(TimePoint now);
  // `limited`: the memory budget holds the horizon at the minimum lead.
  void set_horizon(const FarKey& k, bool limited = false);
  bool refill_due() const;
  // Under every shard's lock: the jobs the shards hold.
  uint64_t in_memory() const;

  FarStore& store_;
  Shards& shards_;
  const SkipReport skip_;
  const Duration span_;
  const uint64_t budget_;
  const Duration min_lead_;
  std::vector<FarShard> fars_;  // by Shard::index, each under its shard's lock
  std::mutex refill_mu_;        // one refiller at a time
  FarKey horizon_;        // written under every shard's lock, read under any
  std::atomic<int64_t> horizon_ns_{0};
  std::atomic<int64_t> refill_at_ns_{0};
};

}  // namespace delayq::engine
