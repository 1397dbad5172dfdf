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
// queue no sequence of calls made (one call's changes lost, the later calls' kept).
// What strict mode cannot tell apart: a torn tail that holds garbage rather than ending early
// (a torn sector of a disk that writes 4 KiB pages in parts) is refused as damage. ext4 with
// data=ordered never shows unwritten blocks, so after a crash or power loss a tail ends early.
//
// After a crash RocksDB replays the logs into memory and keeps them as they are, unsynced tail
// included (Sync::batch, periodic and none answer calls before the disk has them). New calls go
// to a new log, which a later sync puts on disk, while a power loss could still take the old
// log's tail: the store would come back without calls from the middle of its history. So the
// logs found at open are synced once, before the store serves any call.
//
// With StoreOptions::tolerant, a refused open is retried with kPointInTimeRecovery: the store as
// it was after the last change before the damage, every change after it lost, and reported.
// The recovered state is then flushed to table files, so that the damaged log is retired and
// the next open (tolerant or not) starts from what was recovered.
//
// RocksDB's Status for the damage says only "checksum mismatch"; the file and the bytes dropped
// are in a line it writes to its info LOG. A logger that passes LOG lines through keeps that
// line for the error message.
//
// The LOG file itself is written through a file system that drops what it cannot write. On a
// full disk RocksDB's LOG writer keeps its first failed write as an error and asserts on the
// next line (Debian's RocksDB is built with assertions): that aborted the whole process, where
// the store promises io_error to the calls and a queue that stops. Lost LOG lines are nothing.
#include "wal/open_db.h"

#include "wal/lock.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

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

// A LOG file whose failed writes and syncs are dropped (see the top of this file).
class LossyFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  using FSWritableFileOwnerWrapper::FSWritableFileOwnerWrapper;
  using IOOptions = rocksdb::IOOptions;
  using IODebugContext = rocksdb::IODebugContext;
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const IOOptions& o,
                           IODebugContext* dbg) override {
    (void)target()->Append(data, o, dbg);
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const IOOptions& o,
                           const rocksdb::DataVerificationInfo& info,
                           IODebugContext* dbg) override {
    (void)target()->Append(data, o, info, dbg);
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Flush(const IOOptions& o, IODebugContext* dbg) override {
    (void)target()->Flush(o, dbg);
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Sync(const IOOptions& o, IODebugContext* dbg) override {
    (void)target()->Sync(o, dbg);
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Fsync(const IOOptions& o, IODebugContext* dbg) override {
    (void)target()->Fsync(o, dbg);
    return rocksdb::IOStatus::OK();
  }
};

// The file system the LOG is written on: the store's, with every file it opens for writing (the
// LOG, and the new LOG after a roll) lossy. RocksDB makes each LOG with NewLogger(), which the
// real file system answers with a logger on a file of its own: here it is RocksDB's logger on
// this file system instead (NewEnvLogger, through `env`: the Env made on this file system).
class LogFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;
  const char* Name() const override { return "DelayqLogFileSystem"; }
  void set_env(rocksdb::Env* env) { env_ = env; }

  rocksdb::IOStatus NewWritableFile(const std::string& path, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* out,
                                    rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->NewWritableFile(path, o, out, dbg);
    if (s.ok()) *out = std::make_unique<LossyFile>(std::move(*out));
    return s;
  }
  rocksdb::IOStatus NewLogger(const std::string& path, const rocksdb::IOOptions&,
                              std::shared_ptr<rocksdb::Logger>* out,
                              rocksdb::IODebugContext*) override {
    return rocksdb::status_to_io_status(rocksdb::NewEnvLogger(path, env_, out));
  }

 private:
  rocksdb::Env* env_ = nullptr;
};

// RocksDB's info log, passed through to `target` (the LOG file; none for a read-only open,
// which must write nothing), keeping the first line that reports a damaged log record.
class DamageNotingLogger final : public rocksdb::Logger {
 public:
  // The LOG file of the store in `dir` (none for a read-only open, which must write nothing).
  DamageNotingLogger(const std::string& dir, const rocksdb::DBOptions& o, bool read_only) {
    if (read_only) return;
    std::shared_ptr<rocksdb::FileSystem> fs =
        o.env != nullptr ? o.env->GetFileSystem() : rocksdb::FileSystem::Default();
    auto log_fs = std::make_shared<LogFileSystem>(fs);
    log_env_ = rocksdb::NewCompositeEnv(log_fs);
    log_fs->set_env(log_env_.get());
    rocksdb::DBOptions on_log_env = o;
    on_log_env.env = log_env_.get();
    // Made as RocksDB would make it; if it cannot be, as RocksDB does: no LOG, the store opens.
    if (!rocksdb::CreateLoggerFromOptions(dir, on_log_env, &target_).ok()) target_ = nullptr;
  }
  ~DamageNotingLogger() override { target_.reset(); }  // before log_env_

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
  // vsnprintf, not fmt: RocksDB's Logger hands over a printf format and its va_list, which only
  // the printf family can render.
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

  std::unique_ptr<rocksdb::Env> log_env_;
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

void close_db(std::vector<rocksdb::ColumnFamilyHandle*>* handles, rocksdb::DB** db) {
  for (rocksdb::ColumnFamilyHandle* h : *handles) (void)(*db)->DestroyColumnFamilyHandle(h);
  handles->clear();
  (void)(*db)->Close();
  delete *db;
  *db = nullptr;
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
  close_db(handles, db);
  return from_rocksdb(s, r.dir, "writing what was recovered before the damaged log");
}

// Opens strictly; refused for damage in the log, opens before it when tolerant.
Status open_checked(const OpenDbRequest& r, std::vector<rocksdb::ColumnFamilyHandle*>* handles,
                    rocksdb::DB** db) {
  rocksdb::DBOptions o = r.options;
  o.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  auto logger = std::make_shared<DamageNotingLogger>(r.dir, o, r.read_only);
  o.info_log = logger;

  const rocksdb::Status s = raw_open(r, o, handles, db);
  if (s.ok()) return Status();
  const std::string damage = logger->damage();
  const std::string what = r.read_only ? "opening read-only" : "opening";
  if (!s.IsCorruption() || damage.empty()) return from_rocksdb(s, r.dir, what);
  const std::string found =
      "store " + r.dir + ": the write-ahead log holds a damaged record (" + damage + ")";
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

// RocksDB's write-ahead logs in `dir` (NNNNNN.log), before it opens: the ones it replays.
std::vector<std::string> log_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.ends_with(".log") && !name.empty() && name[0] >= '0' && name[0] <= '9')
      out.push_back(it->path().string());
  }
  return out;
}

// Puts the replayed logs on disk (see the top of this file), through the store's file system.
// RocksDB deletes no file meanwhile, so that none is re-created empty by the reopen.
Status sync_logs(const OpenDbRequest& r, const std::vector<std::string>& logs, rocksdb::DB& db) {
  const std::shared_ptr<rocksdb::FileSystem> fs =
      r.options.env != nullptr ? r.options.env->GetFileSystem() : rocksdb::FileSystem::Default();
  if (rocksdb::Status s = db.DisableFileDeletions(); !s.ok())
    return from_rocksdb(s, r.dir, "syncing the logs replayed at open");
  rocksdb::IOStatus s;
  std::string failed;
  for (const std::string& path : logs) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) continue;  // retired by the open
    std::unique_ptr<rocksdb::FSWritableFile> file;
    s = fs->ReopenWritableFile(path, rocksdb::FileOptions(), &file, nullptr);
    if (s.ok()) s = file->Fsync(rocksdb::IOOptions(), nullptr);
    if (file) (void)file->Close(rocksdb::IOOptions(), nullptr);
    if (!s.ok()) {
      failed = path;
      break;
    }
  }
  (void)db.EnableFileDeletions(/*force=*/false);
  if (s.ok()) return Status();
  return Status(Errc::io_error, "store " + r.dir + ": putting the log " + failed +
                                    ", replayed at open, on disk failed (RocksDB: " + s.ToString() +
                                    ")");
}

}  // namespace

Status from_rocksdb(const rocksdb::Status& s, const std::string& dir, const std::string& what) {
  if (is_lock_failure(s)) {
    // This open holds delayq.lock (database.cc takes it first), so RocksDB's LOCK is held by a
    // process that does not take delayq.lock (an older delayq), or by RocksDB opened otherwise in
    // this process. Named, so that the operator knows which process to stop or to ask.
    return store_in_use(dir, rocksdb_lock_holder(dir), "RocksDB: " + s.ToString());
  }
  if (s.IsCorruption())
    return Status(Errc::corrupt, "store " + dir + ": " + what +
                                     " found corrupt data (RocksDB: " + s.ToString() + ")");
  return Status(Errc::io_error,
                "store " + dir + ": " + what + " failed (RocksDB: " + s.ToString() + ")");
}

Status open_db(const OpenDbRequest& r, std::vector<rocksdb::ColumnFamilyHandle*>* handles,
               rocksdb::DB** db) {
  const std::vector<std::string> replayed = log_files(r.dir);
  if (Status st = open_checked(r, handles, db); !st.ok() || r.read_only) return st;
  if (Status st = sync_logs(r, replayed, **db); !st.ok()) {
    close_db(handles, db);
    return st;
  }
  return Status();
}

}  // namespace delayq::wal
