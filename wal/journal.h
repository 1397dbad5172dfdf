// Journal: the durable store's write-ahead record of the queue, in one RocksDB database.
//
// The engine core reports, after each call or wake-up, the job records that changed
// (engine::Change: a JobRecord to put, or an erase). write() turns one such list into one atomic
// WriteBatch, synced as the Sync mode says, before the engine answers anyone. On open, scan()
// hands back every live record in push order, and the engine rebuilds itself with
// Core::restore(). Recovery is a bounded scan of live records, not a replay of history.
//
// What is stored, byte by byte: codec.h, and docs/journal-format.md.
// Acked jobs leave tombstones at the old end of "jobs"; a CompactOnDeletionCollector lets
// compaction clear them, and the WAL is capped so that reopening after a crash stays quick.
//
// Thread safety: every method may be called from several threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "delayq/error.h"
#include "delayq/job.h"
#include "engine/tier/far_store.h"
#include "engine/record.h"
#include "wal/commit_pipeline.h"
#include "wal/rocksdb_tuning.h"

namespace delayq::wal {

struct JournalOptions {
  // When writes are synced (commit_pipeline.h; delayq::Sync says what each mode survives).
  SyncPolicy sync;
  // RocksDB's environment; null means the default (the real file system). Tests pass one that
  // records what was synced, to simulate a power loss.
  rocksdb::Env* env = nullptr;
  // Open for inspection: no writes, no lock taken on the directory.
  bool read_only = false;
  // Skip records that cannot be decoded (reporting each to `on_skip`) instead of failing open.
  bool tolerant = false;
  // Give the store the disk tier's families (far_codec.h) if it has none yet.
  bool tiered = false;
  std::function<void(const std::string&)> on_skip;
  // Cap on RocksDB's write-ahead log, which is what a reopen after a crash replays.
  uint64_t max_total_wal_bytes = uint64_t{64} << 20;
  // RocksDB's write buffers over every family together (StoreOptions::memtable_bytes), and the
  // size of each family's own buffer.
  uint64_t memtable_bytes = uint64_t{16} << 20;
  // Tests only: changes RocksDB's options just before the open (the crash harness shrinks the
  // write buffers so that flushes and compactions run while its worker is killed, and listens
  // to them). Null: delayq's options as they are.
  RocksDbTuning tune;
};

class Journal {
 public:
  // Opens (creating if missing) the store in `dir`.
  // Errors: unavailable (the directory is held by another process or another Journal; the
  // message says so), corrupt (unreadable data, or a format version newer than kFormatVersion
  // of codec.h: the message names the version and the file), io_error (anything else RocksDB
  // reports, with its text).
  static Result<std::unique_ptr<Journal>> open(const std::string& dir, const JournalOptions& o);
  ~Journal();

  // Writes every change as one atomic batch. A Change without a record deletes its seq.
  // Errors: io_error (disk full, I/O error: nothing of the batch was applied), invalid_state
  // (read-only).
  Status write(const std::vector<engine::Change>& changes);

  // Group commit (commit_pipeline.h), in two steps. append() queues the batch in memory, in call
  // order, and returns a ticket; sync_to(ticket) returns once that batch is written to RocksDB
  // (the OS) and, with Sync::always, on disk. Whoever calls sync_to() while no write is in
  // flight writes every batch queued so far as one RocksDB write (synced with always, and with
  // batch when batch_ops appends wait for a sync), so concurrent callers share writes and
  // fsyncs. A batch appended but never waited for is written when the journal closes.
  // Errors: io_error (the write or sync failed; every later call fails too), invalid_state
  // (read-only), invalid_argument (a change whose record has another seq: nothing queued).
  // `totals`: how much the totals of stats() grew with these changes; the journal adds it up and
  // stores the sum with the batch that carries the changes. `counters`: the engine's counters as
  // of these changes; the journal keeps the highest and stores them with the batch too.
  // `far`: the disk tier's part of the batch (docs/tiered-store.md): puts and deletes of "far"
  // and "ids", the per-topic counts they change, the horizon; refused (invalid_argument) unless
  // the store has a disk tier (JournalTier::present()).
  // `meta`: keys of family "meta" put or deleted in the same atomic batch (a schedule's record
  // with the job of its occurrence, schedule/record.h); an append of meta alone is queued too.
  Result<uint64_t> append(const std::vector<engine::Change>& changes, const Stats& totals = {},
                          const engine::Counters& counters = {},
                          const engine::FarBatch& far = {},
                          const std::vector<engine::MetaPut>& meta = {});
  Status sync_to(uint64_t ticket);

  // The paused topics (wal/paused.h): append_paused() queues a pause (or resume) in order with
  // the appends, a ticket for sync_to(); paused_topics() reads them as stored, once at open.
  // Errors: as append(); corrupt (a damaged value; with tolerant, reported and the topic taken
  // as running), io_error.
  Result<uint64_t> append_paused(std::string_view topic, bool paused);
  Result<std::vector<std::string>> paused_topics();
  // The same for the limited topics (wal/topic_limits.h): nullopt clears a topic's limits.
  Result<uint64_t> append_limits(std::string_view topic, const std::optional<TopicLimits>& limits);
  Result<std::vector<std::pair<std::string, TopicLimits>>> topic_limits();

  // The stored values of the keys "schedule/<id>" of family "meta" (schedule/record.h), in key
  // order, undecoded: the engine decodes them when it opens. Errors: io_error.
  Result<std::vector<std::string>> schedules();

  // The totals of stats() as stored (zero for a store written before they were kept). Read
  // once, after open and before the first append: the appends' totals add up from it.
  // Errors: corrupt (unreadable; with tolerant, reported and taken as zero).
  Result<Stats> totals();

  // The highest counters stored (zero for a store written before they were kept). Read once,
  // after open and before the first append: the appends' counters are kept above it.
  // Errors: corrupt (unreadable; with tolerant, reported and taken as zero).
  Result<engine::Counters> counters();

  // A consistent copy of the store in `dir`, taken while the journal serves (wal/backup.h):
  // every write that returned before the call is in it; on disk when this returns.
  // Errors: invalid_argument (a bad `dir`, or a read-only journal), io_error.
  Status checkpoint(const std::string& dir);

  // Calls fn for every live record, in seq order. Stops at the first error fn returns.
  // Errors: corrupt (a record that does not decode, naming its seq; skipped when tolerant).
  Status scan(const std::function<Status(engine::JobRecord&&)>& fn);

  // The last append whose batch is written, so that the disk tier's reads (journal_tier.h) see
  // it (UINT64_MAX when read-only: nothing is ever pending).
  uint64_t written() const;

 private:
  friend class JournalTier;  // the disk tier's reads and stored state (journal_tier.h)
  struct Impl;
  explicit Journal(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace delayq::wal
