// The journal's group commit: calls queue their changes in memory, in call order, and one
// leader writes everything queued as one write, synced as the store's Sync mode says.
//
// Why: a call must not return before its change is written (and, with Sync::always, on disk),
// but an fsync costs milliseconds. Tickets number the appends (ticket n is the n-th append since
// the pipeline was made). append() only queues, under the pipeline's lock, so the engine may
// call it under a shard's lock. The first sync_to() that finds no write in flight becomes the
// leader: it takes the whole queue as one Group and hands it to the sink, while later appends
// gather for the next leader. So one write, and when synced one fsync, covers everyone who
// arrived while the previous one ran. (Appending each call to RocksDB and syncing with a
// separate marker write shared little: RocksDB never puts a synced write in a group led by an
// unsynced one.)
//
// When a write is synced:
//   Sync::always    every write, and sync_to() returns once its ticket is on disk;
//   Sync::batch     a write once `batch_ops` appends wait for a sync, and a background thread
//                   syncs at most `interval` after a change;
//   Sync::periodic  the background thread, every `interval`;
//   Sync::none      never by the pipeline (the sink's own flushes and log switches only).
// In the other modes than always, sync_to() returns once its ticket is written to the sink.
//
// A failed write or sync breaks the pipeline: every call waiting on that write and every later
// append() and sync_to() returns its error (the engine stops; a reopen shows what was kept).
//
// Thread safety: every method may be called from several threads at once, but close() (and the
// destructor) only once no other call is running.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "delayq/error.h"
#include "delayq/store.h"
#include "engine/tier/far_store.h"
#include "engine/record.h"

namespace delayq::wal {

// When the pipeline syncs (StoreOptions::sync, sync_batch_ops and sync_interval, checked by
// open_store(): batch_ops >= 1 with Sync::batch, interval > 0 with batch and periodic).
struct SyncPolicy {
  Sync mode = Sync::always;
  uint32_t batch_ops = 1000;
  std::chrono::nanoseconds interval = std::chrono::milliseconds(10);
};

// One job's change, its record already encoded (wal/codec.h): put under `seq`, or, without a
// record, the job is gone.
struct EncodedChange {
  uint64_t seq = 0;
  std::optional<std::string> record;
};

// One change of the disk tier (docs/tiered-store.md), its keys and record encoded
// (wal/far_codec.h): the job now lives in "far" under `key` with this record (`id` maps to it,
// and "far-topic" lists it under `topic_key`), or, without a record, it left "far".
struct EncodedFarChange {
  std::string key;
  std::string id;
  std::string topic_key;
  std::optional<std::string> record;
};

// One call's part in the disk tier: its changes in order, how many disk-only jobs each topic
// gained or lost with them, and the horizon (encoded) when a refill raised it.
struct EncodedFar {
  std::vector<EncodedFarChange> changes;
  std::vector<std::pair<std::string, int64_t>> count_deltas;
  std::optional<std::string> horizon;
  bool empty() const { return changes.empty() && !horizon; }
};

// What a leader writes as one atomic write: every change queued since the last write, in call
// order, and the totals and counters as of the last of them when they changed since; likewise
// for the disk tier, its per-topic counts as of the last call (0: the count is deleted).
struct Group {
  std::vector<EncodedChange> changes;
  std::vector<EncodedFarChange> far;
  std::vector<std::pair<std::string, uint64_t>> counts;
  std::optional<std::string> horizon;
  std::optional<Stats> totals;
  std::optional<engine::Counters> counters;
  // Topics paused (true) or resumed (false), in call order (paused.h).
  std::vector<std::pair<std::string, bool>> paused;
  // Topics' new limits, encoded (topic_limits.h), or their removal (nullopt), in call order.
  std::vector<std::pair<std::string, std::optional<std::string>>> limits;
  // Other keys of "meta" put (a value) or deleted (nullopt) with the changes of the same
  // appends, in call order: schedules' records (schedule/record.h).
  std::vector<std::pair<std::string, std::optional<std::string>>> meta;
  size_t appends = 0;  // how many calls the group holds
  // The least store format (codec.h) the group's records need: the sink raises meta/format to it
  // in the same write when the store is below it. 0: any.
  uint32_t min_format = 0;
};

// Where the pipeline writes: the RocksDB database in the store, a fake in tests.
class CommitSink {
 public:
  virtual ~CommitSink() = default;
  // Writes the group as one atomic write: all of it or none of it is ever read back. With
  // `sync`, the write and everything before it are on disk when it returns. Called by one
  // thread at a time. Errors: io_error, naming the cause.
  virtual Status write(const Group& group, bool sync) = 0;
  // Puts everything written so far on disk. May run while write() runs, from another thread.
  // Errors: io_error, naming the cause.
  virtual Status sync() = 0;
};

class CommitPipeline {
 public:
  // Starts the background syncer with Sync::batch and Sync::periodic. The sink must outlive
  // the pipeline.
  CommitPipeline(CommitSink& sink, SyncPolicy policy);
  ~CommitPipeline();  // close()
  CommitPipeline(const CommitPipeline&) = delete;
  CommitPipeline& operator=(const CommitPipeline&) = delete;

  // Queues one call's changes and returns its ticket (0, queuing nothing, for no changes).
  // `totals`: how much the totals of stats() grew with these changes; the pipeline adds them
  // up. `counters`: the engine's counters as of these changes; the pipeline keeps the highest.
  // Both are written with the group that carries the changes, and so are the disk tier's
  // counts, which the pipeline keeps from `far`'s deltas. `min_format`: the least store format
  // the encoded records need (Group::min_format; 0: any). `meta`: keys of "meta" written in
  // the same group as these changes (Group::meta); an append of meta alone is a call too.
  // Errors: the error that broke the pipeline.
  Result<uint64_t> append(std::vector<EncodedChange> changes, const Stats& totals,
                          const engine::Counters& counters, EncodedFar far = {},
                          uint32_t min_format = 0, std::vector<engine::MetaPut> meta = {});
  // Returns once the append with this ticket is written (with Sync::always: on disk), leading
  // a write if none is in flight. Errors: the error that broke the pipeline, when the ticket
  // was not written before it.
  Status sync_to(uint64_t ticket);
  // Queues a pause (or resume) of `topic` as one call, in order with the other appends, and
  // returns its ticket. Errors: the error that broke the pipeline.
  Result<uint64_t> append_paused(std::string topic, bool paused);
  // The same for a topic's limits: `value` encoded (topic_limits.h), nullopt to delete them.
  Result<uint64_t> append_limits(std::string topic, std::optional<std::string> value);

  // The stored totals, counters and disk-tier counts the appends add to (before the first
  // append).
  void set_totals(const Stats& totals);
  void set_counters(const engine::Counters& counters);
  void set_counts(const engine::TopicCounts& counts);
  // The last ticket written: its changes, and every earlier one's, are in the sink.
  uint64_t written() const { return written_.load(); }

  // Stops the syncer (syncing what it had not yet), then writes what was appended and never
  // waited for (synced unless Sync::none). Errors are kept, not returned. Idempotent.
  void close();
  // The error that broke the pipeline, or ok.
  Status status();

 private:
  void lead(std::unique_lock<std::mutex>& l);
  Status sync_now();
  void run_syncer();
  // Under mu_: the meta values into the pending group, and it swapped for the spare one.
  Group take_pending();

  CommitSink& sink_;
  const SyncPolicy policy_;

  std::mutex mu_;
  std::condition_variable written_cv_;  // waiters for a leader's write
  // The background syncer's sleep (its own: a wake-up per write would cost a context switch per
  // call).
  std::condition_variable syncer_cv_;
  Group pending_;                     // appended, not yet handed to the sink; mu_
  Group spare_;                       // the last written group, cleared, kept for its capacity; mu_
  uint64_t appended_ = 0;             // the last ticket issued; mu_
  Stats totals_;                      // the stored totals plus every append's; mu_
  bool totals_dirty_ = false;         // totals_ changed since a leader last took them; mu_
  engine::Counters counters_;         // the highest counters stored or appended; mu_
  bool counters_dirty_ = false;       // counters_ rose since a leader last took them; mu_
  std::map<std::string, uint64_t> counts_;  // disk-only jobs per topic, as of the last append; mu_
  std::vector<std::string> counts_dirty_;   // topics whose count changed since a leader took them
  std::optional<std::string> horizon_;      // the last horizon appended, not yet taken; mu_
  bool writing_ = false;              // a leader's write is in flight; mu_
  Status broken_;                     // mu_
  bool stopping_ = false;             // mu_
  bool closed_ = false;               // mu_
  std::atomic<uint64_t> written_{0};  // tickets up to this one were written
  std::atomic<uint64_t> synced_{0};   // tickets up to this one are on disk
  std::thread syncer_;
};

}  // namespace delayq::wal
