// The journal's disk tier (docs/tiered-store.md): its families' reads while the store serves
// (far_reads.h) and its stored state, read once at open. A view over an open Journal, which it
// must not outlive; every method may be called from several threads at once, as Journal's.
// The disk tier's writes go with the rest of a batch (Journal::append's `far`).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>

#include "delayq/error.h"
#include "engine/record.h"
#include "engine/tier/far_store.h"
#include "wal/journal.h"

namespace delayq::wal {

class JournalTier {
 public:
  explicit JournalTier(Journal& journal) : journal_(journal) {}

  // Whether the store has a disk tier (opened with JournalOptions::tiered, or created so before).
  bool present() const;
  // The written disk-only job with this id, if any. Errors: io_error, corrupt (tolerant:
  // reported, and the job taken as gone).
  Result<std::optional<engine::JobRecord>> find(std::string_view id);
  // Each written disk-only job keyed in [from, below), in key order, until fn returns false.
  // Errors: io_error, corrupt (tolerant: reported, and the job skipped).
  Status scan(const engine::FarKey& from, const engine::FarKey& below,
              const std::function<bool(engine::JobRecord&&)>& fn);
  void prefetch(const engine::FarKey& from, const engine::FarKey& below, size_t n);
  // Whether the store has the per-topic index (far_index.h): every open for writing builds it;
  // a read-only open of a store whose tier predates it has none.
  bool topic_index() const;
  // Each written disk-only job of `topic` keyed in [from, below), in key order, until fn returns
  // false, read through the index. Errors: io_error, corrupt (tolerant: reported, and the job
  // skipped), invalid_state (no index).
  Status scan_topic(std::string_view topic, const engine::FarKey& from,
                    const engine::FarKey& below,
                    const std::function<bool(engine::JobRecord&&)>& fn);
  // As stored; read once at open. counts() also gives the pipeline the counts it keeps.
  Result<engine::FarKey> horizon();
  Result<engine::TopicCounts> counts();
  // StoreOptions::horizon as the store was last opened with it (nullopt: never stored), and
  // storing it (at open, before the engine writes). Errors: corrupt, io_error, invalid_state
  // (read-only).
  Result<std::optional<Duration>> span();
  Status store_span(Duration span);

 private:
  Journal& journal_;
};

}  // namespace delayq::wal
