// Rebuilding the shards of an opening engine from a durable store's records.
#pragma once

#include "engine/store_seam.h"
#include "engine/shard.h"

namespace delayq::engine {

// Puts every record of `records` back into the shard its id belongs to (Core::restore), before
// the engine serves anyone. The calling thread reads and decodes records while restorer threads
// put them into their shards, so that reading and rebuilding overlap; each shard still receives
// its records in seq order. A record a core refuses is skipped and reported when `skip` is set
// (tolerant), and otherwise ends the restore with the core's error (Errc::corrupt).
Status restore(Shards& shards, const RecordSource& records, TimePoint now, const SkipReport& skip);

}  // namespace delayq::engine
