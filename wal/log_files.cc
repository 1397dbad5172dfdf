// Syncing older log files before newer ones are written (log_files.h).
#include "wal/log_files.h"

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/transaction_log.h>

#include <memory>

namespace delayq::wal {

void LogSyncOnSwitch::OnMemTableSealed(const rocksdb::MemTableInfo&) {
  // RocksDB calls this without its mutex, before the write that sealed the memtable goes to
  // the new file; SyncWAL() syncs every file up to and including the new (empty) one.
  rocksdb::DB* db = db_.load();
  if (db != nullptr && !db->SyncWAL().ok()) failed_.store(true);
}

}  // namespace delayq::wal
