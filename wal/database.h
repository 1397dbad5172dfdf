// The journal's RocksDB database: its column families and options, the open, the format
// check, and the close. What the families hold is codec.h's; how damage to RocksDB's own
// write-ahead log is met at open is open_db.h's; keeping that log a prefix of the calls across
// its files is log_files.h's.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <rocksdb/db.h>

#include "delayq/error.h"
#include "wal/journal.h"
#include "wal/lock.h"
#include "wal/log_files.h"

namespace delayq::wal {

class Database {
 public:
  // Opens (creating if missing, with its parent directories) the database in `dir`: the
  // families "jobs" and "meta" (codec.h); "far", "ids" and "far-topic" (far_codec.h) when they
  // exist or JournalOptions::tiered asks for them; and any family a newer format added, left
  // alone. Writes meta/format on a new store (4 with the disk tier, else 1), raises a store that
  // has or gets the disk tier to 4 once it built the tier's per-topic index (far_index.h), and
  // refuses a newer format (kFormatVersion). Format 3 is never written here: the journal raises
  // a store without the tier to it with its first version 2 record (format()).
  // Errors: as Journal::open().
  static Result<std::unique_ptr<Database>> open(const std::string& dir, const JournalOptions& o);
  // Closes: the family handles, then the database. Without flush(), the next open replays the
  // log.
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Moves the memtables into table files, so that the next open reads tables instead of
  // replaying the log (RocksDB does not flush on close while a log is kept). For a clean close.
  void flush();

  rocksdb::DB& db() { return *db_; }
  rocksdb::ColumnFamilyHandle* jobs() const { return handles_[1]; }
  rocksdb::ColumnFamilyHandle* meta() const { return handles_[2]; }
  // The disk tier's families (docs/tiered-store.md), or null when the store has none.
  rocksdb::ColumnFamilyHandle* far() const { return far_; }
  rocksdb::ColumnFamilyHandle* ids() const { return ids_; }
  // The per-topic index of "far" (far_index.h); null without the disk tier, and in a read-only
  // open of a store whose tier predates it.
  rocksdb::ColumnFamilyHandle* far_topic() const { return far_topic_; }
  // Whether far_topic() holds every key of "far": format 4 (or built by this open).
  bool topic_index() const { return topic_index_; }
  const std::string& dir() const { return dir_; }
  // The format in meta/format (after open: at least what the store needs). Used by the journal's
  // one writer at a time (the commit pipeline's leader): a write that holds a record needing a
  // higher format puts meta/format in its own batch, then calls raised_to() once written.
  uint32_t format() const { return format_; }
  void raised_to(uint32_t format) { format_ = format; }
  // True once after a sync of the log before RocksDB switched log files failed (log_files.h):
  // the write in flight must fail, and the store stop.
  bool take_switch_failure() { return switch_sync_ && switch_sync_->take_failure(); }

 private:
  Database() = default;
  Status check_format(bool read_only);

  // The store's own lock (lock.h), held from before RocksDB opens until after it closed (declared
  // first: destroyed last); none for a read-only open, which RocksDB does not lock either.
  std::unique_ptr<StoreLock> lock_;
  std::string dir_;
  rocksdb::DB* db_ = nullptr;
  // As opened: [0] default, [1] jobs, [2] meta, then any families of a newer format. Destroyed
  // before the DB (Debian's RocksDB is built with assertions, and closing a DB with live
  // handles trips them).
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  rocksdb::ColumnFamilyHandle* far_ = nullptr;  // among handles_
  rocksdb::ColumnFamilyHandle* ids_ = nullptr;
  rocksdb::ColumnFamilyHandle* far_topic_ = nullptr;
  bool topic_index_ = false;  // topic_index()
  uint32_t format_ = 0;  // format()
  // Syncs the log before RocksDB writes to a new log file; not with Sync::always.
  std::shared_ptr<LogSyncOnSwitch> switch_sync_;
};

// fn(key, value) for each key of `family` in [lower, upper), until fn returns false or an
// error (returned). Errors: fn's, or what RocksDB reports (`what` names the read).
Status for_each_in(Database& d, rocksdb::ColumnFamilyHandle* family, const std::string& lower,
                   const std::string& upper, const char* what,
                   const std::function<Result<bool>(std::string_view, std::string_view)>& fn);

// A decoder's refusal (always corrupt), naming the store.
Status store_damage(const Database& d, const Status& s);

}  // namespace delayq::wal
