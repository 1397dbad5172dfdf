// Keeping RocksDB's write-ahead log a prefix of the calls when it spans several files.
//
// RocksDB writes its log to one file at a time and starts a new one when a memtable is sealed
// (and at every open). It recovers each file up to its first incomplete record, then goes on
// with the next file, and it cannot tell a file cut short by a power loss at a record boundary
// from one that ended there. So when an older file holds calls that were never synced while a
// newer one holds later calls whose pages did reach the disk, a power loss brings back the later
// calls without the earlier ones: a hole, not the prefix the store promises (docs/durability.md).
// Found by the crash harness's power losses (tests/crash/log_switch_test.cc shows both cases).
//
// The cure is to sync an older file before anything is written to a newer one:
//  - LogSyncOnSwitch syncs the log when RocksDB seals a memtable, which it does after creating
//    the new file and before the write that caused the switch goes to it. Not needed with
//    Sync::always, where every write syncs every file.
//  - open_db() (open_db.h) syncs, right after an open, the files a crashed process left behind:
//    the open replayed them into memory, and every later call builds on what they hold.
#pragma once

#include <rocksdb/listener.h>

#include <atomic>
#include <string>

namespace rocksdb {
class DB;
class Env;
}  // namespace rocksdb

namespace delayq::wal {

class LogSyncOnSwitch final : public rocksdb::EventListener {
 public:
  // Sealed memtables are ignored until the database is attached (nothing of ours is written
  // before the open returns).
  void attach(rocksdb::DB* db) { db_.store(db); }
  // A sync that failed since the last call: the store must stop (every later call fails).
  bool take_failure() { return failed_.exchange(false); }

  void OnMemTableSealed(const rocksdb::MemTableInfo& info) override;
  const char* Name() const override { return "DelayqLogSyncOnSwitch"; }

 private:
  std::atomic<rocksdb::DB*> db_{nullptr};
  std::atomic<bool> failed_{false};
};

}  // namespace delayq::wal
