// The durable store: the Engine, with every change journaled to RocksDB in a directory before
// any caller is answered, and rebuilt from that directory when it is opened again.
//
//   delayq::StoreOptions opt;
//   opt.dir = "/var/lib/myservice/delayq";
//   auto q = delayq::open_store(opt).value();   // a delayq::Engine: the whole Queue interface
//
// What survives a crash of the process (kill -9): every call that returned success, in either
// sync mode; with Sync::always also a power loss. Link delayq::wal for this header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "delayq/engine.h"

namespace delayq {

enum class Sync : uint8_t {
  // A call that changes the queue returns after its change reached the disk (fsync): survives
  // a power loss. Calls on one shard wait for each other's fsync.
  always,
  // Written to the operating system before returning: survives a crash of the process, not of
  // the machine.
  none,
};

struct StoreOptions {
  // The store's directory, created if missing. One process at a time.
  std::string dir;
  Sync sync = Sync::always;
  // Inspect a store: nothing is written and no lock is taken; calls that change the queue change
  // only this process's view of it.
  bool read_only = false;
  // Open even if some records cannot be read: each is skipped and reported on stderr. Without
  // it, an unreadable record makes open fail with Errc::corrupt, naming it.
  bool tolerant = false;
  EngineOptions engine;
};

// Opens (or creates) the store and rebuilds the queue from it: jobs whose due time passed while
// the store was closed are ready at once, in due order; jobs that were reserved come back when
// their lease runs out, the attempt counted; dead letters and ids are kept. Not kept yet: the
// totals of stats() (they restart at zero).
// If a write to the store fails later (disk full, I/O error), the call returns io_error and the
// queue stops serving (every later call fails with that error): nothing a caller was told had
// failed can be handed out, and reopening continues from what was stored.
// Errors: invalid_argument (no dir, bad engine options), unavailable (the directory is in use by
// another process), corrupt (unreadable store, or written by a newer delayq), io_error.
Result<std::unique_ptr<Engine>> open_store(const StoreOptions& options);

}  // namespace delayq
