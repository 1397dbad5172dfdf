// Opening the journal's RocksDB database (open_db.h).
//
// The write-ahead log (WAL) recovery mode, chosen for what each kind of damage means here. When
// RocksDB opens a store that was not closed cleanly, it replays its WAL, and may find:
//  - a torn tail: the last record cut short, because the process died (kill -9, a crash) or the
//    power failed while it was being written. That is an ordinary crash. The record was never
//    answered (a call is answered after its write returned), so the store must open without it.
//  - damage before the end: a record whose checksum does not match. That is the disk (or
//    something else) failing, and the records after it may be calls that were answered: the
//    store must not open without them and say nothing.
// kTolerateCorruptedTailRecords does exactly that: it forgives a record cut short at the end of
// a log (and the zeros of preallocated space), and refuses any checksum mismatch. The others:
// kPointInTimeRecovery (RocksDB's default) stops replaying at the damage and opens without
// everything after it, acknowledged calls included, without a word to the caller;
// kAbsoluteConsistency refuses a torn tail, so a store would not open after an ordinary crash;
// kSkipAnyCorruptedRecords drops the damaged batch and replays the later ones, which can give a
// queue no sequence of calls made (an ack kept while the retry it replaced is lost).
// What strict mode cannot tell apart: a torn tail that holds garbage rather than ending early
// (a torn sector of a disk that writes 4 KiB pages in parts) is refused as damage. ext4 with
// data=ordered never shows unwritten blocks, so after a crash or power loss a tail ends early.
//
// With StoreOptions::tolerant, a refused open is retried with kPointInTimeRecovery: the store as
// it was after the last change before the damage, every change after it lost, and reported.
// The recovered state is then flushed to table files, so that the damaged log is retired and
// the next open (tolerant or not) starts from what was recovered.
//
// RocksDB's Status for the damage says only "checksum mismatch"; the file and the bytes dropped
// are in a line it writes to its info LOG. A logger that passes LOG lines through keeps that
// line for the error message.
#include "wal/open_db.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <mutex>

#include <rocksdb/env.h>

namespace delayq::wal {

namespace {

bool is_lock_failure(const rocksdb::Status& s) {
  if (!s.IsIOError()) return false;
  const std::string text = s.ToString();
  // PosixEnv::LockFile: fcntl(F_SETLK) refused (another process holds LOCK), or this process
  // already holds it (another Journal / DB on the same directory).
  return text.find("While lock file") != std::string::npos ||
         text.find("lock hold by current process") != std::string::npos;
}

// RocksDB's info log, passed through to `target` (the LOG file; none for a read-only open,
// which must write nothing), keeping the first line that reports a damaged log record.
class DamageNotingLogger final : public rocksdb::Logger {
 public:
  explicit DamageNotingLogger(std::shared_ptr<rocksdb::Logger> target)
      : target_(std::move(target)) {}

  std::string damage() const {
    std::lock_guard l(mu_);
    return damage_;
  }

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    if (target_) target_->Logv(format, ap);
  }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level >= rocksdb::InfoLogLevel::WARN_LEVEL) {
      va_list copy;
      va_copy(copy, ap);
      note(format, copy);
      va_end(copy);
    }
    if (target_ && level >= target_->GetInfoLogLevel()) target_->Logv(level, format, ap);
  }
  void LogHeader(const char* format, va_list ap) override {
    if (target_) target_->LogHeader(format, ap);
  }
  size_t GetLogFileSize() const override {
    return target_ ? target_->GetLogFileSize() : kDoNotSupportGetLogFileSize;
  }
  void Flush() override {
    if (target_) target_->Flush();
  }
  // Warnings always reach this logger, whatever the LOG file keeps.
  rocksdb::InfoLogLevel GetInfoLogLevel() const override {
    const auto warn = rocksdb::InfoLogLevel::WARN_LEVEL;
    return target_ ? std::min(target_->GetInfoLogLevel(), warn) : warn;
  }

 protected:
  rocksdb::Status CloseImpl() override {
    return target_ ? target_->Close() : rocksdb::Status::OK();
  }

 private:
  // The line RocksDB's log reader writes for each damaged record (db_impl_open.cc, LogReporter):
  // "[source:line] <log file>: dropping <n> bytes; Corruption: <what>".
  void note(const char* format, va_list ap) {
    char buf[1024];
    const int n = std::vsnprintf(buf, sizeof buf, format, ap);
    if (n <= 0) return;
    std::string line(buf, std::min<size_t>(static_cast<size_t>(n), sizeof buf - 1));
    if (line.find(".log: dropping ") == std::string::npos ||
        line.find("bytes; ") == std::string::npos)
      return;
    if (line.starts_with("[")) line.erase(0, std::min(line.size(), line.find("] ") + 2));
    std::lock_guard l(mu_);
    if (damage_.empty()) damage_ = std::move(line);
  }

  std::shared_ptr<rocksdb::Logger> target_;
  mutable std::mutex mu_;
  std::string damage_;
};

rocksdb::Status raw_open(const OpenDbRequest& r, const rocksdb::DBOptions& o,
                         std::vector<rocksdb::ColumnFamilyHandle*>* handles, rocksdb::DB** db) {
  rocksdb::Status s = r.read_only ? rocksdb::DB::OpenForReadOnly(o, r.dir, r.families, handles, db)
                                  : rocksdb::DB::Open(o, r.dir, r.families, handles, db);
  if (!s.ok()) {
    // On failure RocksDB leaves no handles or DB behind.
    handles->clear();
    *db = nullptr;
  }
  return s;
}

// Tolerant: opens the store as it was before the damage, and retires the damaged log.
Status open_before_damage(const OpenDbRequest& r, rocksdb::DBOptions o,
                          std::vector<rocksdb::ColumnFamilyHandle*>* handles, rocksdb::DB** db) {
  o.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  rocksdb::Status s = raw_open(r, o, handles, db);
  if (!s.ok()) return from_rocksdb(s, r.dir, "opening at the last change before the damage");
  if (r.read_only) return Status();
  s = (*db)->Flush(rocksdb::FlushOptions(), *handles);
  if (s.ok()) return Status();
  for (rocksdb::ColumnFamilyHandle* h : *handles) (void)(*db)->DestroyColumnFamilyHandle(h);
  handles->clear();
  (void)(*db)->Close();
  delete *db;
  *db = nullptr;
  return from_rocksdb(s, r.dir, "writing what was recovered before the damaged log");
}

}  // namespace

Status from_rocksdb(const rocksdb::Status& s, const std::string& dir, const std::string& what) {
  if (is_lock_failure(s))
    return Status(Errc::unavailable, "store directory " + dir +
                                         " is in use by another process or another open "
                                         "journal (RocksDB: " +
                                         s.ToString() + ")");
  if (s.IsCorruption())
    return Status(Errc::corrupt, "store " + dir + ": " + what +
                                     " found corrupt data (RocksDB: " + s.ToString() + ")");
  return Status(Errc::io_error,
                "store " + dir + ": " + what + " failed (RocksDB: " + s.ToString() + ")");
}

Status open_db(const OpenDbRequest& r, std::vector<rocksdb::ColumnFamilyHandle*>* handles,
               rocksdb::DB** db) {
  rocksdb::DBOptions o = r.options;
  o.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  // The LOG file, made as RocksDB would make it; a read-only open writes none.
  std::shared_ptr<rocksdb::Logger> log_file;
  if (!r.read_only && !rocksdb::CreateLoggerFromOptions(r.dir, o, &log_file).ok())
    log_file = nullptr;  // as RocksDB does: no LOG, but the store opens
  auto logger = std::make_shared<DamageNotingLogger>(std::move(log_file));
  o.info_log = logger;

  const rocksdb::Status s = raw_open(r, o, handles, db);
  if (s.ok()) return Status();
  const std::string damage = logger->damage();
  const std::string what = r.read_only ? "opening read-only" : "opening";
  if (!s.IsCorruption() || damage.empty()) return from_rocksdb(s, r.dir, what);
  const std::string found =
      "store " + r.dir + ": the write-ahead log is damaged before its end (" + damage + ")";
  if (!r.tolerant)
    return Status(Errc::corrupt,
                  found +
                      "; nothing was opened. The changes after the damage may include "
                      "answered calls. StoreOptions::tolerant opens the store as it was "
                      "before the damage, losing every change after it");
  if (r.on_skip)
    r.on_skip(found +
              ": opened as it was after the last change before the damage; every "
              "change after it is lost");
  return open_before_damage(r, o, handles, db);
}

}  // namespace delayq::wal
