// A consistent copy of an open store's RocksDB database (delayq::backup_store(), store.h).
#pragma once

#include <string>

#include "delayq/error.h"

namespace rocksdb {
class DB;
}

namespace delayq::wal {

// Copies the database of the store in `store_dir` to `dest` with RocksDB's checkpoint, while it
// serves: the memtable is flushed, table files are hard-linked (copied across file systems), the
// MANIFEST and the live log are copied up to a consistent point. RocksDB stages the copy in
// `dest` + ".tmp" and renames it; this adds an fsync of every file of the copy and of the
// directory that holds it, so that the copy is on disk when this returns, whatever the store's
// sync mode. Writes that returned before the call are in the copy.
// Errors: invalid_argument (`dest` empty, existing, inside the store, or `dest`.tmp in the way),
// io_error (RocksDB or the file system failed; nothing is left at `dest`).
Status checkpoint(rocksdb::DB& db, const std::string& store_dir, const std::string& dest);

}  // namespace delayq::wal
