// "A backup is on disk when backup_store() answers, whatever the sync mode" (include/delayq/
// store.h, docs/production.md): every file of the copy, the copy's directory and the directory
// that holds it are fsynced before it returns. This executable defines fsync() and fdatasync()
// (an executable's symbols come before the C library's, for RocksDB's calls too), records which
// files (by inode) were synced, and then syncs them for real.
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "delayq/store.h"
#include "temp_dir.h"

namespace {

std::mutex g_mu;
std::set<std::pair<dev_t, ino_t>> g_synced;

void record(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return;
  std::lock_guard l(g_mu);
  g_synced.emplace(st.st_dev, st.st_ino);
}

bool synced(const std::filesystem::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return false;
  std::lock_guard l(g_mu);
  return g_synced.contains({st.st_dev, st.st_ino});
}

}  // namespace

extern "C" int fsync(int fd) {
  record(fd);
  return static_cast<int>(::syscall(SYS_fsync, fd));
}

extern "C" int fdatasync(int fd) {
  record(fd);
  return static_cast<int>(::syscall(SYS_fdatasync, fd));
}

namespace {

TEST(StoreBackupSync, EveryFileOfTheCopyAndItsDirectoriesAreSyncedBeforeItReturns) {
  delayq::testing::TempDir tmp("delayq-backup-sync");
  // Sync::none: the store itself syncs nothing, so what is synced below is the backup's doing.
  auto q = delayq::open_store({.dir = tmp.path() + "/store", .sync = delayq::Sync::none}).value();
  for (int i = 0; i < 200; ++i)
    ASSERT_TRUE(q->push({.topic = "t", .id = std::to_string(i), .delay = std::chrono::hours(1)})
                    .ok());
  {
    std::lock_guard l(g_mu);
    ASSERT_FALSE(g_synced.empty()) << "this test's fsync() is not the one the store calls";
    g_synced.clear();
  }
  const std::filesystem::path copy = tmp.path() + "/backups/b1";
  ASSERT_TRUE(delayq::backup_store(*q, copy.string()).ok());
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(copy)) {
    if (!e.is_regular_file()) continue;
    ++files;
    EXPECT_TRUE(synced(e.path())) << e.path() << " was not synced by the backup";
  }
  EXPECT_GT(files, 3u);
  EXPECT_TRUE(synced(copy)) << "the copy's directory was not synced";
  EXPECT_TRUE(synced(copy.parent_path())) << "the directory holding the copy was not synced";
}

}  // namespace
