// The sync-recording RocksDB file system and the power-loss cut of a directory (power_loss_fs.h).
#include "power_loss_fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "writable_file_fs.h"

namespace delayq::power_loss {
namespace {

using rocksdb::FileOptions;
using rocksdb::FSWritableFile;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

// The side log. Line kinds (the path at the end is for people reading a log, not parsed):
//   N <inode> <path>          a file was created, or re-created empty under an existing name
//   S <inode> <bytes> <path>  a Sync/Fsync of the file returned success: <bytes> are durable
//   T <inode> <bytes> <path>  the file is about to be truncated to <bytes>
//   G <inode> <path>          the file is about to be unlinked (deleted, or replaced by a rename)
// Each line is one write(2) to a file opened with O_APPEND, so lines of concurrent threads never
// interleave, and a line is in the kernel before the call it records returns: a SIGKILL cannot
// take it back.
class SideLog {
 public:
  explicit SideLog(int fd) : fd_(fd) {}
  ~SideLog() { ::close(fd_); }
  SideLog(const SideLog&) = delete;
  SideLog& operator=(const SideLog&) = delete;

  __attribute__((format(printf, 2, 3))) bool line(const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof buf) return false;
    ssize_t w;
    do {
      w = ::write(fd_, buf, static_cast<size_t>(n));
    } while (w < 0 && errno == EINTR);
    return w == n;
  }

 private:
  int fd_;
};

std::optional<struct stat> stat_of(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

IOStatus not_recorded(const std::string& path) {
  return IOStatus::IOError("power-loss test: could not write the side log about", path);
}

// A writable file that counts the bytes handed to it and records every successful sync of them.
class RecordingFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  RecordingFile(std::unique_ptr<FSWritableFile> target, std::shared_ptr<SideLog> log,
                std::string path, uint64_t inode, uint64_t size)
      : FSWritableFileOwnerWrapper(std::move(target)),
        log_(std::move(log)),
        path_(std::move(path)),
        inode_(inode),
        size_(size) {}

  IOStatus Append(const Slice& data, const IOOptions& o, IODebugContext* dbg) override {
    IOStatus s = target()->Append(data, o, dbg);
    if (s.ok()) size_.fetch_add(data.size());
    return s;
  }
  IOStatus Append(const Slice& data, const IOOptions& o, const rocksdb::DataVerificationInfo& info,
                  IODebugContext* dbg) override {
    IOStatus s = target()->Append(data, o, info, dbg);
    if (s.ok()) size_.fetch_add(data.size());
    return s;
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& o,
                            IODebugContext* dbg) override {
    IOStatus s = target()->PositionedAppend(data, offset, o, dbg);
    if (s.ok()) grow_to(offset + data.size());
    return s;
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& o,
                            const rocksdb::DataVerificationInfo& info,
                            IODebugContext* dbg) override {
    IOStatus s = target()->PositionedAppend(data, offset, o, info, dbg);
    if (s.ok()) grow_to(offset + data.size());
    return s;
  }
  IOStatus Truncate(uint64_t size, const IOOptions& o, IODebugContext* dbg) override {
    // Recorded first: should the worker die before the truncation, the log under-states what is
    // durable (a more pessimistic simulation), never over-states it.
    if (!log_->line("T %" PRIu64 " %" PRIu64 " %s\n", inode_, size, path_.c_str()))
      return not_recorded(path_);
    IOStatus s = target()->Truncate(size, o, dbg);
    if (s.ok()) size_.store(size);
    return s;
  }
  IOStatus Sync(const IOOptions& o, IODebugContext* dbg) override {
    const uint64_t covered = size_.load();
    return recorded(target()->Sync(o, dbg), covered);
  }
  IOStatus Fsync(const IOOptions& o, IODebugContext* dbg) override {
    const uint64_t covered = size_.load();
    return recorded(target()->Fsync(o, dbg), covered);
  }
  // Deliberately not recorded: RangeSync (sync_file_range starts writeback of a range, but
  // waits neither for the disk's cache nor for the file's size to be written) and Close
  // (closing a file syncs nothing). Flush only hands data to the OS.

 private:
  // A sync covers what was handed over before it began (`covered`); bytes that another thread
  // appends while it runs may or may not reach the disk, so they do not count. The line is
  // written before the sync's success reaches RocksDB, so before any caller waiting for it is
  // answered. A kill between the fsync and the line only makes the simulation drop more.
  IOStatus recorded(IOStatus s, uint64_t covered) {
    if (!s.ok()) return s;
    if (!log_->line("S %" PRIu64 " %" PRIu64 " %s\n", inode_, covered, path_.c_str()))
      return not_recorded(path_);
    return s;
  }

  void grow_to(uint64_t end) {
    uint64_t cur = size_.load();
    while (cur < end && !size_.compare_exchange_weak(cur, end)) {
    }
  }

  std::shared_ptr<SideLog> log_;
  const std::string path_;
  const uint64_t inode_;
  std::atomic<uint64_t> size_;  // bytes handed to the file so far (its logical size)
};

// The default file system, with writable files that record their syncs, and deletions,
// truncations and renames recorded by inode (so that an inode the file system reuses for a new
// file never inherits an old file's synced size).
class RecordingFileSystem final : public testing::WritableFileWrappingFs {
 public:
  explicit RecordingFileSystem(std::shared_ptr<SideLog> log) : log_(std::move(log)) {}

  const char* Name() const override { return "DelayqSyncRecordingFileSystem"; }

  IOStatus NewRandomRWFile(const std::string& path, const FileOptions&,
                           std::unique_ptr<rocksdb::FSRandomRWFile>*, IODebugContext*) override {
    // Its writes would bypass the record; delayq's store never asks for one. Refused loudly
    // rather than simulated wrongly.
    return IOStatus::NotSupported("power-loss test file system: no random read-write files", path);
  }
  IOStatus DeleteFile(const std::string& path, const IOOptions& o, IODebugContext* dbg) override {
    if (!note_gone(path)) return not_recorded(path);
    return target()->DeleteFile(path, o, dbg);
  }
  IOStatus RenameFile(const std::string& from, const std::string& to, const IOOptions& o,
                      IODebugContext* dbg) override {
    // The file keeps its inode, and so its synced size; the one it replaces is unlinked.
    const std::optional<struct stat> a = stat_of(from), b = stat_of(to);
    if (a && b && a->st_ino != b->st_ino && !note_gone(to)) return not_recorded(to);
    return target()->RenameFile(from, to, o, dbg);
  }
  IOStatus Truncate(const std::string& path, size_t size, const IOOptions& o,
                    IODebugContext* dbg) override {
    if (const std::optional<struct stat> st = stat_of(path))
      if (!log_->line("T %" PRIu64 " %zu %s\n", static_cast<uint64_t>(st->st_ino), size,
                      path.c_str()))
        return not_recorded(path);
    return target()->Truncate(path, size, o, dbg);
  }

 private:
  // A reopened file appends to what is there, synced or not; a reused one (WAL recycling) is a
  // new file whose old bytes count as unsynced, which can only drop more.
  IOStatus wrap(const std::string& path, std::unique_ptr<FSWritableFile>* out,
                bool fresh) override {
    const std::optional<struct stat> st = stat_of(path);
    if (!st) return IOStatus::IOError("power-loss test: cannot stat the file just opened", path);
    const auto inode = static_cast<uint64_t>(st->st_ino);
    // Written before RocksDB can append anything. A kill before this line leaves the file empty
    // (a new inode, or an existing file truncated by the open), so whatever the ledger says of
    // its inode, nothing in it is kept that should not be.
    if (fresh && !log_->line("N %" PRIu64 " %s\n", inode, path.c_str())) return not_recorded(path);
    *out = std::make_unique<RecordingFile>(std::move(*out), log_, path, inode,
                                           fresh ? 0 : static_cast<uint64_t>(st->st_size));
    return IOStatus::OK();
  }

  // Before the unlink: the inode may be reused for a new file as soon as it is gone.
  bool note_gone(const std::string& path) {
    const std::optional<struct stat> st = stat_of(path);
    if (!st) return true;  // nothing there: the call will fail on its own
    return log_->line("G %" PRIu64 " %s\n", static_cast<uint64_t>(st->st_ino), path.c_str());
  }

  std::shared_ptr<SideLog> log_;
};

}  // namespace

std::unique_ptr<rocksdb::Env> sync_recording_env(const std::string& log_path, std::string* error) {
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = "cannot open the side log " + log_path + ": " + std::strerror(errno);
    return nullptr;
  }
  auto fs = std::make_shared<RecordingFileSystem>(std::make_shared<SideLog>(fd));
  // The composite env runs threads and clocks as the default env does, and files on `fs`.
  return rocksdb::NewCompositeEnv(fs);
}

Status Ledger::reset_to(const std::string& dir) {
  durable_.clear();
  counts_ = Counts{};
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return Status();  // nothing written yet
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const std::optional<struct stat> st = stat_of(it->path().string());
    if (st && S_ISREG(st->st_mode))
      durable_[static_cast<uint64_t>(st->st_ino)] = static_cast<uint64_t>(st->st_size);
  }
  if (ec) return Status(Errc::io_error, "listing " + dir + ": " + ec.message());
  return Status();
}

Status Ledger::apply_log(const std::string& log_path) {
  counts_ = Counts{};
  std::ifstream in(log_path, std::ios::binary);
  if (!in) return Status();  // the worker died before its store wrote a file
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = 0;
  for (;;) {
    const size_t end = text.find('\n', pos);
    if (end == std::string::npos) break;  // no line, or a last one cut short
    const std::string raw = text.substr(pos, end - pos);
    std::istringstream line(raw);
    pos = end + 1;
    char kind = 0;
    uint64_t inode = 0, bytes = 0;
    line >> kind >> inode;
    if (kind == 'S' || kind == 'T') line >> bytes;
    if (!line) return Status(Errc::corrupt, "side log " + log_path + ": bad line '" + raw + "'");
    auto it = durable_.find(inode);
    switch (kind) {
      case 'N':
        // A new inode's existence is not durable until something syncs it; an existing file
        // re-created empty (O_TRUNC) keeps its name, with nothing durable in it.
        if (it != durable_.end()) it->second = 0;
        ++counts_.created;
        break;
      case 'S':
        // Two syncs of one file may finish out of order; the later-started one covers more.
        if (it == durable_.end())
          durable_[inode] = bytes;
        else
          it->second = std::max(it->second, bytes);
        ++counts_.synced;
        break;
      case 'T':
        if (it != durable_.end()) it->second = std::min(it->second, bytes);
        ++counts_.truncated;
        break;
      case 'G':
        if (it != durable_.end()) durable_.erase(it);
        ++counts_.removed;
        break;
      default:
        return Status(Errc::corrupt, "side log " + log_path + ": unknown line '" + raw + "'");
    }
  }
  return Status();
}

std::optional<uint64_t> Ledger::durable(uint64_t inode) const {
  auto it = durable_.find(inode);
  if (it == durable_.end()) return std::nullopt;
  return it->second;
}

// What a power loss leaves, modelled on ext4 with its defaults (data=ordered, delayed
// allocation), the file system most Linux servers run delayq on:
//
//  - What a successful fsync/fdatasync covered survives.
//  - Bytes written but not synced may be lost. Writeback (every few seconds, or under memory
//    pressure) may already have put some of them on disk, whole pages at a time; data=ordered
//    never lets the file's size cover blocks whose data was not written, so what survives of the
//    unsynced tail is a page-aligned prefix of it, never garbage. Usually (3 in 4) the cut is at
//    the synced size exactly: that is the worst case, and the one the checks lean on. Otherwise
//    a random page-aligned part of the tail is kept, which also makes RocksDB recover from a log
//    record cut in the middle.
//  - A file created and never synced is gone if the journal had not yet committed its creation,
//    empty if it had (delayed allocation leaves the data unwritten), or holds a page-aligned
//    prefix if writeback had started. All three happen on ext4 within its 5 s commit interval;
//    the cycle picks one per file (3/8 gone, 3/8 empty, 1/4 a prefix).
//  - Not modelled: undoing metadata operations (creating, renaming, deleting or truncating a
//    file counts as durable once done). ext4 journals them in order, so a power loss could undo
//    the latest few; RocksDB fsyncs the directory after those it relies on, and simulating that
//    would need directory syncs recorded too. Neither are torn sectors, holes left by pages
//    written back out of order, or disks that acknowledge a flush they did not do.
Status simulate_power_loss(const std::string& dir, const Ledger& ledger, std::mt19937_64& rng,
                           PowerLossStats& stats, std::string* report) {
  constexpr uint64_t kPage = 4096;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return Status();
  std::vector<std::string> files;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    files.push_back(it->path().string());
  if (ec) return Status(Errc::io_error, "listing " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());                // the rng's choices follow a fixed order
  auto page_prefix = [&](uint64_t from, uint64_t to) {  // a page boundary in [from, to], or from
    const uint64_t pick = from + rng() % (to - from + 1);
    return std::max(from, pick / kPage * kPage);
  };
  for (const std::string& path : files) {
    const std::optional<struct stat> st = stat_of(path);
    if (!st || !S_ISREG(st->st_mode)) continue;
    ++stats.files;
    const auto size = static_cast<uint64_t>(st->st_size);
    const std::optional<uint64_t> durable = ledger.durable(static_cast<uint64_t>(st->st_ino));
    auto note = [&](const char* what, uint64_t kept) {
      if (report == nullptr) return;
      *report += "\n    " + std::filesystem::path(path).filename().string() + ": " +
                 std::to_string(size) + " bytes, durable " +
                 (durable ? std::to_string(*durable) : std::string("never synced")) + ", " + what +
                 " " + std::to_string(kept);
    };
    uint64_t keep;
    if (durable) {
      keep = std::min(size, *durable);
      if (keep < size && rng() % 4 == 0) {
        keep = page_prefix(keep, size);
        ++stats.unsynced_tails_kept;
      }
    } else {
      const uint64_t roll = rng() % 8;
      if (roll < 3) {
        if (::unlink(path.c_str()) != 0)
          return Status(Errc::io_error, "unlink " + path + ": " + std::strerror(errno));
        ++stats.never_synced_deleted;
        stats.bytes_dropped += size;
        ++stats.cut;
        note("deleted, kept", 0);
        continue;
      }
      keep = 0;
      if (roll < 6) {
        ++stats.never_synced_emptied;
      } else if (size > 0) {
        keep = page_prefix(0, size);
        ++stats.unsynced_tails_kept;
      }
    }
    note("kept", keep);
    if (keep < size) {
      if (::truncate(path.c_str(), static_cast<off_t>(keep)) != 0)
        return Status(Errc::io_error, "truncate " + path + ": " + std::strerror(errno));
      stats.bytes_dropped += size - keep;
      ++stats.cut;
    }
  }
  return Status();
}

}  // namespace delayq::power_loss
