// The tiered placement (placement.h; docs/tiered-store.md): jobs due at or after the horizon live
// only on disk, the rest in the shards' cores. It owns the disk tier (tier.h: the horizon, the
// refill, the shards' FarShards) and answers the calls on one job ("Calls on disk-only jobs"):
// each runs under the job's shard lock, at a `now` by which no disk-only job is due
// (lock_at_now). The core is asked first; the disk only when the core does not hold the job (or,
// for a push, when its due time is beyond the horizon). Disk changes are staged in the shard's
// FarShard and written with the call's core changes as one batch (queue).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>

#include "delayq/error.h"
#include "delayq/job.h"
#include "engine/placement.h"
#include "engine/tier/tier.h"

namespace delayq::engine {

// What get() and list_jobs() show of a disk-only job.
JobInfo info_of(const JobRecord& r);

class TieredPlacement final : public Placement {
 public:
  // `seqs`: the queue's job sequence numbers, from which a push to disk draws its seq. The other
  // arguments are the Tier's.
  TieredPlacement(FarStore& store, Shards& shards, size_t shard_count, std::atomic<uint64_t>& seqs,
                  SkipReport skip)
      : tier_(store, shards, shard_count, std::move(skip)), shards_(shards), seqs_(seqs) {}
  // Before the engine serves (Tier::open).
  Status open() { return tier_.open(); }

  // Refills first if need be (Tier::keep_ahead), then takes the lock once the horizon covers
  // the clock's `now`.
  TimePoint lock_at_now(std::unique_lock<ShardMutex>& lock) override;
  Result<std::optional<uint64_t>> queue(Shard& s, const Effects& fx) override;
  int64_t next_call_ns() const override { return tier_.refill_at_ns(); }

  // A push due at or after the horizon goes to disk; one due before it to the core. Either way
  // the id must be free in memory and on disk.
  Status push(Shard& s, JobSpec&& spec, TimePoint now) override;
  Result<JobInfo> get(Shard& s, std::string_view id, TimePoint now) override;
  Status cancel(Shard& s, std::string_view id, TimePoint now) override;
  // Across the horizon both ways: a memory job moved beyond it goes to disk, a disk-only job
  // moved before it comes into memory (ready at once if the time has passed).
  Status reschedule(Shard& s, std::string_view id, TimePoint when, TimePoint now) override;
  Status requeue_dead(Shard& s, std::string_view id, TimePoint now) override;
  // A not_found for a job that lives on disk becomes stale_token.
  Status token_miss(Shard& s, const Token& t, Status core_said) override;

  // Disk-only jobs count as delayed, and as due beyond a week: they are due at or after the
  // horizon, and where exactly is on disk only (docs/tiered-store.md, "What fires when").
  void add_shard_stats(Shard& s, Stats& st, OutOfMemoryCounts& out) override;
  void finish_stats(Stats& st, OutOfMemoryCounts& out) override;
  // tier_browse.cc: the disk-only jobs of a topic, from the store's reads and the shards'
  // overlays (whose entries speak for their ids): through the store's per-topic index, the page
  // alone; without one, at most kBrowseRead records of every topic a page.
  bool keeps_jobs_out_of_memory() const override { return true; }
  Result<OutOfMemoryPage> browse_out_of_memory(std::string_view topic,
                                               const std::optional<cursor::Key>& after,
                                               size_t limit) override;
  static constexpr size_t kBrowseRead = 4096;
  // Under any shard's lock (Tier::horizon), for tests (tier_view, test_hooks.h).
  const FarKey& horizon() const { return tier_.horizon(); }

 private:
  // The disk-only job `id`, or why there is none: not_found, or the store's read error.
  Result<JobRecord> on_disk(Shard& s, std::string_view id);
  // Moves a disk-only job into memory at `due` (<= now: ready at once, as Core::reschedule does).
  Status move_in(Shard& s, JobRecord stored, TimePoint due, TimePoint now);

  Tier tier_;
  Shards& shards_;
  std::atomic<uint64_t>& seqs_;
};

}  // namespace delayq::engine
