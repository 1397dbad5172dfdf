// The disk tier's per-topic index (docs/tiered-store.md, "Browsing"; docs/journal-format.md):
// family "far-topic" holds one key per record of "far", far_topic_key(topic, key), so that one
// topic's disk-only jobs are read in key order without reading any other topic's. Its keys are
// put and deleted in the same write batch as the records of "far" they list (journal.cc), so no
// crash leaves the two out of step; a store whose tier predates the index gets it built once,
// when it is first opened for writing (Database::check_format, which then writes format 4).
#pragma once

#include <functional>
#include <string_view>

#include "delayq/error.h"
#include "engine/tier/far_store.h"
#include "wal/database.h"

namespace delayq::wal {

// Rebuilds "far-topic" from "far": clears it (what an interrupted build left), then one key per
// record, in write batches of a few thousand, none synced (the format written after it is). A
// record that does not decode gets no key: no topic lists it, and a lookup or a refill still
// meets it and reports it as before. Errors: io_error.
Status build_far_index(Database& d);

// fn for each record of "far" that "far-topic" lists under `topic` keyed in [from, below), in key
// order, until fn returns false: one seek, then per record one step of the index and one lookup
// in "far". A listed key whose record is missing, does not decode or belongs to another topic is
// damage, given to `on_damage` (if set): the scan goes on past it if that returns ok. Errors:
// corrupt (the damage, or on_damage's), io_error, invalid_state (no index: d.topic_index()).
Status scan_far_topic(Database& d, std::string_view topic, const engine::FarKey& from,
                      const engine::FarKey& below,
                      const std::function<bool(engine::JobRecord&&)>& fn,
                      const std::function<Status(const Status&)>& on_damage = {});

}  // namespace delayq::wal
