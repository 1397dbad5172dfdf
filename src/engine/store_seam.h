// The store's seam: what the Engine needs from a durable store (Persistence), and the internal
// way to open an Engine on one (open_engine.cc). The store itself (RocksDB, wal/) lives in its
// own library, which depends on this one and implements this header; its disk tier's half of
// the seam is tier/far_store.h. Nothing here is installed. What tests reach besides:
// test_hooks.h.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "delayq/engine.h"
#include "engine/record.h"

namespace delayq::engine {

class FarStore;  // the disk tier's half of the seam (tier/far_store.h)

// Receives the changes of each call (or wake-up) before the engine answers anyone, in two steps
// so that concurrent callers can share an fsync (group commit).
class Persistence {
 public:
  virtual ~Persistence() = default;
  // Queues the changes as one atomic batch, in the order of calls (the engine calls it under
  // the shard's lock, so it must be cheap: no disk, no waiting). Returns a ticket for
  // wait_durable(). On failure nothing of the batch may be applied.
  // `totals` is how much the totals of stats() grew with these changes.
  virtual Result<uint64_t> write(const std::vector<Change>& changes, const Stats& totals) = 0;
  // Returns once the batch with this ticket is as durable as the store promises (written to the
  // OS at least; on disk for a synced store). The engine calls it after releasing the shard's
  // lock, before it answers the call.
  virtual Status wait_durable(uint64_t ticket) = 0;
  // The counters (record.h) as the store last recorded them: a reopened engine starts above.
  virtual Counters recorded_counters() { return {}; }
  // The engine's live counters, read with every write() from now on and recorded with its
  // changes, so that what a write's changes handed out is never issued again after a restart.
  virtual void track(const std::atomic<uint64_t>* fences, const std::atomic<uint64_t>* next_id,
                     const std::atomic<uint64_t>* seqs) {
    (void)fences;
    (void)next_id;
    (void)seqs;
  }
  // write() with `meta` in the same atomic batch (written even when `changes` is empty). A
  // store that keeps no meta keys refuses any (invalid_argument).
  virtual Result<uint64_t> write_with_meta(const std::vector<Change>& changes, const Stats& totals,
                                           const std::vector<MetaPut>& meta) {
    if (meta.empty()) return write(changes, totals);
    return Status(Errc::invalid_argument, "this store keeps no schedules");
  }
  // The store's disk tier (tier/far_store.h), or null: every job lives in memory.
  virtual FarStore* far() { return nullptr; }
  // Queues that `topic` is now paused (or no longer), in call order with write()'s batches, and
  // returns a ticket for wait_durable() (0: nothing to wait for). Cheap, as write() is.
  virtual Result<uint64_t> write_paused(std::string_view topic, bool paused) {
    (void)topic;
    (void)paused;
    return uint64_t{0};
  }
  // Queues a topic's new limits (Queue::set_topic_limits), or their removal (nullopt), as
  // write_paused() does.
  virtual Result<uint64_t> write_limits(std::string_view topic,
                                        const std::optional<TopicLimits>& limits) {
    (void)topic;
    (void)limits;
    return uint64_t{0};
  }
};

// Calls its argument for every stored record, in seq order.
using RecordSource = std::function<Status(const std::function<Status(JobRecord&&)>&)>;

// Told about each record skipped when opening (what it is and why), on any thread, one call at
// a time.
using SkipReport = std::function<void(const std::string&)>;

// Opens an Engine that writes its changes to `store` and first rebuilds itself from `records`
// and the stored `totals` of stats(). With a null store it is the in-memory Engine::open().
// A record that Core::restore() refuses (Errc::corrupt) fails the open with that error, unless
// `skip` is set (StoreOptions::tolerant): then the record is left out and reported to `skip`.
// `paused`: the topics the store recorded as paused (Queue::pause), paused again before the
// engine serves; `limits`: likewise the topics' limits (Queue::set_topic_limits); `schedules`:
// the stored records of the schedules (schedule/record.h), restored, then fired by their
// catch-up policy for what fell while the store was closed, before the engine serves.
Result<std::unique_ptr<Engine>> open_engine(
    const EngineOptions& options, std::unique_ptr<Persistence> store, const RecordSource& records,
    const Stats& totals, const SkipReport& skip = {}, const std::vector<std::string>& paused = {},
    const std::vector<std::pair<std::string, TopicLimits>>& limits = {},
    const std::vector<std::string>& schedules = {});

// The store an engine opened by open_engine() writes to (null for the in-memory Engine): how
// open_store()'s extras, such as backup_store(), reach their journal.
Persistence* persistence_of(Engine& engine) noexcept;

}  // namespace delayq::engine
