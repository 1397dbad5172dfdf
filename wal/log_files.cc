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

rocksdb::Status sync_replayed_logs(rocksdb::DB* db, rocksdb::Env* env, const std::string& dir) {
  std::unique_ptr<rocksdb::LogFile> current;
  rocksdb::Status s = db->GetCurrentWalFile(&current);
  if (!s.ok()) return s;
  rocksdb::VectorLogPtr files;
  s = db->GetSortedWalFiles(files);
  if (!s.ok()) return s;
  const std::shared_ptr<rocksdb::FileSystem>& fs = env->GetFileSystem();
  for (const std::unique_ptr<rocksdb::LogFile>& f : files) {
    if (f->Type() != rocksdb::kAliveLogFile || f->LogNumber() >= current->LogNumber()) continue;
    // Reopened for appending (nothing is appended): the way to sync a file through the
    // environment, which tests replace with one that records every sync.
    std::unique_ptr<rocksdb::FSWritableFile> file;
    rocksdb::IOStatus io =
        fs->ReopenWritableFile(dir + f->PathName(), rocksdb::FileOptions(), &file, nullptr);
    if (io.ok()) io = file->Sync(rocksdb::IOOptions(), nullptr);
    if (io.ok()) io = file->Close(rocksdb::IOOptions(), nullptr);
    if (!io.ok()) return io;
  }
  return s;
}

}  // namespace delayq::wal
