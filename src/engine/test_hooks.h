// Hooks for tests only, not used by the engine's callers: where an engine's jobs are
// (tier_view, defined with the disk tier in tier.cc) and an observer of the disk tier's refill
// writes for the crash harness. Nothing here is installed.
#pragma once

#include <cstddef>
#include <optional>

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

}  // namespace delayq::engine
