// Opening the RocksDB database under the journal: which damage to RocksDB's write-ahead log is
// forgiven, how a refusal names the damaged file, and what the tolerant option recovers.
// docs/durability.md ("Damage on disk") is the user's side of this; tests/backends/store_corruption_test.cc
// checks it on real RocksDB files.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include "delayq/error.h"

namespace delayq::wal {

// A RocksDB status as the journal reports it: unavailable (the directory is locked by another
// process or another open journal), corrupt (RocksDB found damaged data), io_error (anything
// else). `what` says what the journal was doing ("opening", "scanning family 'jobs'").
Status from_rocksdb(const rocksdb::Status& s, const std::string& dir, const std::string& what);

struct OpenDbRequest {
  std::string dir;
  rocksdb::DBOptions options;  // everything but wal_recovery_mode and info_log, set here
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  bool read_only = false;
  // Damage in the middle of the write-ahead log: open at the last change before it (reported
  // to on_skip) instead of refusing.
  bool tolerant = false;
  std::function<void(const std::string&)> on_skip;
};

// Opens the database; on success fills `handles` (one per family, in order) and `db`.
// Errors: as from_rocksdb(); a damaged write-ahead log is `corrupt`, naming the log file, the
// damage RocksDB found and how many bytes it could not read.
Status open_db(const OpenDbRequest& request, std::vector<rocksdb::ColumnFamilyHandle*>* handles,
               rocksdb::DB** db);

}  // namespace delayq::wal
