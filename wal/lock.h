// Who holds a store directory's lock. RocksDB locks the file LOCK in the directory with fcntl()
// while a process has the store open; both the store's own refusal (open_store) and the CLI's
// check before it opens anything name the holder with this, so that an operator knows which
// process to stop or to ask.
#pragma once

#include <string>

namespace delayq::wal {

// "process 32238 (delayqd)" when another process holds the lock of the store in `dir` (its
// program name from /proc, when readable), "another process" when the holder cannot be named,
// and "" when no other process holds it (no store, no LOCK file, or this process holds it:
// fcntl locks never conflict within one process). Only asks (F_GETLK): takes nothing, so a
// running daemon is not disturbed.
std::string lock_holder(const std::string& dir);

}  // namespace delayq::wal
