// The calls on one job of a store with a disk tier (docs/tiered-store.md, "Calls on disk-only
// jobs"). Each runs under the job's shard lock, inside Shards::apply, at a `now` by which no
// disk-only job is due. The core is asked first; the disk only when the core does not hold the
// job (or, for a push, when its due time is beyond the horizon). Disk changes are staged in the
// shard (FarShard) and written with the call's core changes as one batch.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "delayq/error.h"
#include "delayq/job.h"
#include "engine/shard.h"
#include "engine/tier.h"

namespace delayq::engine::far_calls {

// A push due at or after the horizon goes to disk; one due before it to the core. Either way the
// id must be free in memory and on disk. `seqs`: the queue's job sequence numbers.
Status push(Tier& tier, Shard& s, JobSpec&& spec, TimePoint now, std::atomic<uint64_t>& seqs);
Result<JobInfo> get(Tier& tier, Shard& s, std::string_view id, TimePoint now);
Status cancel(Tier& tier, Shard& s, std::string_view id, TimePoint now);
// Across the horizon both ways: a memory job moved beyond it goes to disk, a disk-only job moved
// before it comes into memory (ready at once if the time has passed).
Status reschedule(Tier& tier, Shard& s, std::string_view id, TimePoint when, TimePoint now);
Status requeue_dead(Tier& tier, Shard& s, std::string_view id, TimePoint now);
// A token call (ack, nack, dead_letter, release, touch) that the core answered with
// `core_said`: a not_found for a job that lives on disk becomes stale_token.
Status token_miss(Tier& tier, Shard& s, const Token& t, Status core_said);

}  // namespace delayq::engine::far_calls
