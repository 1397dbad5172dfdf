// Hooks for tests only, not used by the engine's callers: where an engine's jobs are
// (tier_view, defined with the disk tier in tier.cc), an observer of the disk tier's refill
// writes for the crash harness, and a check of the schedules' index. Nothing here is installed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "delayq/engine.h"
#include "engine/tier/far_store.h"

namespace delayq::engine {

// Where an engine's jobs are, for tests of the disk tier (docs/tiered-store.md): how many the
// shards hold in memory, and the horizon (none without a disk tier).
struct TierView {
  size_t in_memory = 0;
  std::optional<FarKey> horizon;
};
TierView tier_view(Engine& engine);

// For the crash harness (tests/crash/), which must know whether a kill landed in a refill:
// called on the refilling thread as a refill step that moves jobs begins its write (true, with
// every shard locked) and once that write is durable or has failed (false). One observer per
// process, none by default.
using RefillObserver = void (*)(bool begin);
void set_refill_observer(RefillObserver observer) noexcept;

// What is wrong with the engine's index of schedules by next occurrence (schedules.h): a
// running schedule with a next occurrence missing from it or there at another instant, an entry
// of no such schedule, or a published deadline other than its earliest. Empty when nothing is,
// or when `queue` is not an engine. Defined with the firing (schedule_firing.cc).
std::string schedule_index_damage(Queue& queue);

}  // namespace delayq::engine
