// The durable store: the Engine, with every change journaled to RocksDB in a directory before
// any caller is answered, and rebuilt from that directory when it is opened again.
//
//   delayq::StoreOptions opt;
//   opt.dir = "/var/lib/myservice/delayq";
//   auto q = delayq::open_store(opt).value();   // a delayq::Engine: the whole Queue interface
//
// What survives a crash of the process (kill -9): every call that returned success, in every
// sync mode. What survives a power loss depends on the mode (below; docs/durability.md has the
// measured costs). Link delayq::wal for this header.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "delayq/engine.h"

namespace delayq {

// In every mode, a call that changes the queue returns after its change was written to the
// operating system, so a crash of the process loses nothing that was answered. The modes differ
// in when the change reaches the disk (fsync), which is what a power loss needs.
enum class Sync : uint8_t {
  // The call returns after its change is on disk: a power loss loses nothing that was answered.
  // Concurrent calls share one fsync (group commit).
  always,
  // A synced write at least every `sync_batch_ops` changed calls (the call that completes a
  // batch waits for it) and at most `sync_interval` after a change. A power loss loses at most
  // the last sync_batch_ops - 1 answered calls, and only the latest ones: what comes back is the
  // queue as it was after some earlier call.
  batch,
  // A synced write every `sync_interval`, by a background thread; no call waits for the disk.
  // A power loss loses the calls of about the last interval (more if the machine was too busy
  // to run the sync on time), again only the latest ones.
  periodic,
  // Synced only when RocksDB flushes or starts a new log file: a power loss can lose any number
  // of the latest calls.
  none,
};
const char* to_string(Sync s) noexcept;
// "always", "batch", "periodic", "none". Errors: invalid_argument, naming the accepted values.
Result<Sync> parse_sync(std::string_view text);

struct StoreOptions {
  // The store's directory, created if missing (with its parents). One process at a time.
  std::string dir{};
  Sync sync = Sync::always;
  // Sync::batch: at most this many answered calls between synced writes (>= 1).
  uint32_t sync_batch_ops = 1000;
  // Sync::batch and Sync::periodic: how long a change may wait for its synced write (> 0).
  Duration sync_interval = std::chrono::milliseconds(10);
  // Inspect a store: nothing is written and no lock is taken; calls that change the queue change
  // only this process's view of it.
  bool read_only = false;
  // Open even if some records cannot be read or restored: each is skipped and reported (to
  // on_skip). Without it, such a record makes open fail with Errc::corrupt, naming it.
  // docs/durability.md ("Damage on disk") says what else it recovers from, and what it loses.
  bool tolerant = false;
  // With tolerant: told what was skipped and why, one message per record (or per damaged log,
  // or for unreadable totals), one call at a time, during open_store() (possibly on a thread it
  // started). Empty: printed on stderr.
  std::function<void(const std::string&)> on_skip{};
  // The disk tier (docs/tiered-store.md): jobs due further ahead than this live only on disk,
  // and are loaded into memory before they fall due (the horizon is kept between half this and
  // this far ahead of now), so that memory and the work of an open grow with the jobs due within
  // it, not with all of them. At least 1 ms; Duration::max(): every job in memory. The store
  // keeps what it was opened with: unset, it is as the store was last opened (a store never
  // opened with a horizon keeps every job in memory), so that a tool opening it (the CLI,
  // delayqd) does not load every job by leaving it out.
  std::optional<Duration> horizon{};
  // With a horizon: a memory budget, in jobs (0: none). Once memory holds this many, the horizon
  // is kept only an eighth of `horizon` ahead of now (refilled up to a quarter), so that most new
  // jobs go to disk; never less, whatever it holds: jobs due that soon are in memory, so that
  // none is late for the budget. Reserved, dead and retried jobs count, and stay in memory.
  uint64_t memory_jobs = 0;
  // RocksDB's write buffers (memtables): every change is written there before it is flushed to
  // a table file, and this is their total size over the store's families, in bytes (at least
  // 1 MiB, at most 1 GiB). The store's resident memory swings by about this much as a buffer
  // fills and is flushed; a larger one flushes less often under a heavy write load.
  uint64_t memtable_bytes = uint64_t{16} << 20;
  EngineOptions engine{};
};

// Opens (or creates) the store and rebuilds the queue from it: jobs whose due time passed while
// the store was closed are ready at once, in due order; jobs that were reserved come back when
// their lease runs out, the attempt counted; dead letters, ids and the totals of stats() are
// kept (the totals count since the store was created).
// If a write to the store fails later (disk full, I/O error), the call returns io_error and the
// queue stops serving (every later call fails with that error): nothing a caller was told had
// failed can be handed out, and reopening continues from what was stored.
// Errors: invalid_argument (no dir, bad engine or sync options), unavailable (the directory is in use by
// another process), corrupt (unreadable store, or written by a newer delayq), io_error.
Result<std::unique_ptr<Engine>> open_store(const StoreOptions& options);

// A backup: a consistent copy of a store opened by open_store(), taken while it serves, into a
// new directory `dir` (its parents are created; it must not exist, nor be inside the store).
// The copy is the queue as it was after one call: every call answered before backup_store() was
// called is in it (so a job acked or cancelled before then is not), calls answered meanwhile may
// be, and no call is there in part; the totals of stats() match its jobs. It is on disk when
// backup_store() returns, whatever the sync mode. Restoring is opening it: open_store() on the
// copy (or on the copy moved into the store's place) gives that queue, jobs reserved at the
// moment of the copy coming back when their lease runs out, as after a crash.
// How: RocksDB's checkpoint. Table files are hard links when `dir` is on the store's file
// system (a backup on another disk is a full copy), the rest is copied; it takes about one flush
// of the memtable plus the copy, and the store serves meanwhile.
// Errors: invalid_argument (`store` is not a store opened by open_store() for writing; `dir`
// exists or is inside the store), io_error (the copy failed; nothing is left at `dir`).
Status backup_store(Engine& store, const std::string& dir);

}  // namespace delayq
