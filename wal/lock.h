// The store directory's lock, and who holds it.
//
// A store is open in one place at a time. Its own lock is the file `delayq.lock` in the store
// directory, locked with an open file description lock (fcntl F_OFD_SETLK) on one descriptor that
// the store keeps for as long as it is open (StoreLock, owned by the journal's Database). Such a
// lock belongs to that descriptor alone: opening and closing the same file elsewhere in the
// process does not drop it (as it would drop a classic fcntl lock), and a second open in the same
// process conflicts with it as one in another process would. A child made by fork() shares the
// descriptor, and with it the lock, until it exits or execs (the descriptor is close-on-exec).
//
// RocksDB also locks the file LOCK, with a classic fcntl lock; that lock is dropped by any close
// of a descriptor of LOCK in the holding process, which is why the store never opens LOCK while a
// store of this process may hold it, and relies on delayq.lock instead.
#pragma once

#include <memory>
#include <string>

#include "delayq/error.h"

namespace delayq::wal {

// The name of the store's own lock file in a store directory.
inline constexpr const char* kStoreLockFile = "delayq.lock";

class StoreLock {
 public:
  // Takes the lock of the store in `dir` (which must exist), creating delayq.lock if missing,
  // and writes this process's id into it so that a refused open can name the holder.
  // Errors: unavailable when it is held (by another process: "... is locked by process N
  // (program) ..."; by this process: "... this process already has it open ..."); io_error
  // when the file cannot be made or locked.
  static Result<std::unique_ptr<StoreLock>> take(const std::string& dir);
  // Releases the lock (closes its descriptor).
  ~StoreLock();
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

 private:
  explicit StoreLock(int fd) : fd_(fd) {}
  int fd_;
};

// The refusal of an open of the store in `dir` held by `holder` (as lock_holder() names it; "" or
// "this process": another open of this process). `detail`, if any, is added in parentheses.
Status store_in_use(const std::string& dir, const std::string& holder, const std::string& detail);

// Who holds the store in `dir`: "process 32238 (delayqd)" (its program name from /proc, when
// readable), "this process" when a store of this process has it open, "another process" when the
// holder cannot be named, and "" when nobody holds it. Only asks: takes nothing, so a running
// daemon is not disturbed. A store opened by an older delayq holds only RocksDB's LOCK: when
// delayq.lock is free, LOCK is asked too (F_GETLK), which is safe because then no store of this
// process has the directory open.
std::string lock_holder(const std::string& dir);

// Who holds RocksDB's LOCK in `dir` ("" when nobody else does): for an open that already holds
// delayq.lock and was refused by RocksDB, i.e. a holder that does not take delayq.lock.
std::string rocksdb_lock_holder(const std::string& dir);

}  // namespace delayq::wal
