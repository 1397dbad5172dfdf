// checkpoint() (backup.h).
#include "wal/backup.h"
#include "common/bad_input.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include <rocksdb/db.h>
#include <rocksdb/utilities/checkpoint.h>

namespace delayq::wal {

namespace {

namespace fs = std::filesystem;

// fsync() of one file or directory.
Status sync_path(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(Errc::io_error, "opening " + p.string() + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status(Errc::io_error, "syncing " + p.string() + ": " + std::strerror(err));
  return Status();
}

// The copy's files, the copy's directory, and the directory its name is in.
Status sync_copy(const fs::path& dest) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dest, ec)) {
    if (!e.is_regular_file()) continue;
    if (Status s = sync_path(e.path()); !s.ok()) return s;
  }
  if (ec) return Status(Errc::io_error, "listing " + dest.string() + ": " + ec.message());
  if (Status s = sync_path(dest); !s.ok()) return s;
  return sync_path(dest.parent_path());
}

// Why `dest` cannot take a copy of the store in `store_dir`, or "" when it can.
std::string dest_problem(const fs::path& dest, const fs::path& store_dir) {
  std::error_code ec;
  if (fs::exists(dest, ec))
    return dest.string() + " already exists: a backup goes to a new directory, never over one";
  fs::path tmp = dest;
  tmp += ".tmp";
  if (fs::exists(tmp, ec))
    return tmp.string() + " exists: RocksDB stages the copy there (and would empty it); " +
           "remove it or choose another name";
  const fs::path store = fs::weakly_canonical(store_dir, ec);
  const fs::path target = fs::weakly_canonical(dest, ec);
  const auto [s, t] = std::mismatch(store.begin(), store.end(), target.begin(), target.end());
  if (s == store.end())
    return dest.string() + " is inside the store's directory " + store_dir.string() +
           ": put backups somewhere else";
  return {};
}

}  // namespace

Status checkpoint(rocksdb::DB& db, const std::string& store_dir, const std::string& dest_text) {
  if (dest_text.empty()) return bad("backup: no directory given for the copy");
  std::error_code ec;
  // RocksDB wants an absolute path; a trailing slash would put its staging directory inside.
  fs::path dest = fs::absolute(dest_text, ec).lexically_normal();
  if (ec) return bad("backup: bad directory " + dest_text + ": " + ec.message());
  if (!dest.has_filename()) dest = dest.parent_path();
  if (std::string why = dest_problem(dest, store_dir); !why.empty()) return bad("backup: " + why);
  fs::create_directories(dest.parent_path(), ec);
  if (ec)
    return Status(Errc::io_error,
                  "backup: cannot create " + dest.parent_path().string() + ": " + ec.message());

  rocksdb::Checkpoint* raw = nullptr;
  rocksdb::Status s = rocksdb::Checkpoint::Create(&db, &raw);
  std::unique_ptr<rocksdb::Checkpoint> cp(raw);
  // log_size_for_flush 0: the memtable is flushed first, so the copy opens from table files
  // instead of replaying a log.
  if (s.ok()) s = cp->CreateCheckpoint(dest.string(), 0);
  if (!s.ok())
    return Status(Errc::io_error, "backup of store " + store_dir + " to " + dest.string() +
                                      " failed (RocksDB: " + s.ToString() + ")");
  if (Status synced = sync_copy(dest); !synced.ok()) {
    fs::remove_all(dest, ec);
    return Status(Errc::io_error, "backup of store " + store_dir + " to " + dest.string() +
                                      " could not be put on disk: " + synced.message());
  }
  return Status();
}

}  // namespace delayq::wal
