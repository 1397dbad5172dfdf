// Reads of the disk tier (docs/tiered-store.md) in the journal's database: a disk-only job by
// id, the disk-only jobs in key order, and what open needs (the horizon and the counts). They see
// what was written to RocksDB; what is still queued in the commit pipeline is the engine's to
// account for (src/engine/tier/far_shard.h).
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include "delayq/error.h"
#include "engine/tier/far_store.h"
#include "wal/database.h"

namespace delayq::wal {

// The disk-only job with this id: "ids" gives its key, "far" its record. An "ids" entry whose
// record is missing or holds another id is damage. Errors: corrupt, io_error.
Result<std::optional<engine::JobRecord>> find_far(Database& d, std::string_view id);

// fn for each record of "far" keyed in [from, below), in key order, until fn returns false. The
// iterator's lower bound is `from`: the tombstones refills leave below the horizon are never
// walked. A key or record that does not decode is given to `on_damage` (if set): the scan goes
// on past it if that returns ok. Errors: corrupt (the damage, or on_damage's), io_error.
Status scan_far(Database& d, const engine::FarKey& from, const engine::FarKey& below,
                const std::function<bool(engine::JobRecord&&)>& fn,
                const std::function<Status(const Status&)>& on_damage = {});

// Reads the first n records of "far" keyed in [from, below) without decoding them (into RocksDB's
// block cache, for a scan that follows).
void prefetch_far(Database& d, const engine::FarKey& from, const engine::FarKey& below, size_t n);

// meta/horizon ({} when absent), meta/horizon-span (nullopt when absent) and meta/far-count/*
// as stored. Errors: corrupt, io_error.
Result<engine::FarKey> read_horizon(Database& d);
Result<std::optional<Duration>> read_horizon_span(Database& d);
Result<engine::TopicCounts> read_far_counts(Database& d);
// Stores meta/horizon-span, synced. Errors: io_error.
Status write_horizon_span(Database& d, Duration span);

}  // namespace delayq::wal
