// A power loss must leave a prefix of the calls even when RocksDB's write-ahead log spans
// several files: a newer log file whose pages reached the disk must not bring back calls made
// after calls of an older log file that did not (found by the power-loss harness: Sync::none
// and Sync::periodic stores came back with a hole in the middle of the calls).
//
// Each test pushes jobs one by one into a Sync::none store from a forked process that is then
// killed, and cuts the store's files the way a power loss may: every file back to what was
// synced, except the newest log file, which keeps everything (its pages were written back).
// The jobs present afterwards must be the first n pushed, for some n.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>

#include <filesystem>
#include <string>
#include <vector>

#include "child_process.h"
#include "driver.h"
#include "fork_safe_env.h"
#include "power_loss_fs.h"
#include "wal/store_testing.h"

namespace delayq::crash {
namespace {

constexpr int kBody = 1000;

// In a child: opens the store (small write buffers; flushes never run, so every memtable
// switch leaves an older log file holding unflushed jobs), pushes jobs first..last, reports
// on `fd` and waits to be killed.
[[noreturn]] void push_jobs(const std::string& dir, const std::string& side_log, int first,
                            int last, int fd) {
  std::string error;
  std::unique_ptr<rocksdb::Env> recording = power_loss::sync_recording_env(side_log, &error);
  if (!recording) _exit(3);
  std::unique_ptr<rocksdb::Env> env = fork_safe_env(recording.get(), /*run_jobs=*/false);
  StoreOptions o;
  o.dir = dir;
  o.sync = Sync::none;
  auto tune = [](rocksdb::DBOptions&, std::vector<rocksdb::ColumnFamilyDescriptor>& families) {
    for (rocksdb::ColumnFamilyDescriptor& f : families) {
      f.options.write_buffer_size = 64 << 10;
      f.options.max_write_buffer_number = 16;  // switches never wait for a flush
    }
  };
  Result<std::unique_ptr<Engine>> q = wal::open_store_on(o, env.get(), tune);
  if (!q) _exit(4);
  for (int k = first; k <= last; ++k) {
    Result<std::string> id = (*q)->push(
        {.topic = "hole", .id = job_id(k), .delay = 1h, .body = std::string(kBody, 'x')});
    if (!id) _exit(5);
  }
  const char done = 'd';
  if (::write(fd, &done, 1) != 1) _exit(6);
  for (;;) pause();
}

// Runs push_jobs() in a child until it reports, then kills it.
void run_child(const std::string& dir, const std::string& side_log, int first, int last) {
  ASSERT_EQ(stray_threads(), 0u) << "the test would fork with threads of its own running";
  testing::ChildProcess child([&](int fd) {
    alarm(60);
    push_jobs(dir, side_log, first, last, fd);
  });
  ASSERT_TRUE(child.started()) << "pipe or fork failed";
  char c = 0;
  const ssize_t n = read(child.reports(), &c, 1);
  const int status = child.kill_and_wait();
  ASSERT_EQ(n, 1) << "the child did not push its jobs (status " << status << ")";
}

uint64_t log_number(const std::string& name) {
  if (name.size() <= 4 || name.substr(name.size() - 4) != ".log") return 0;
  return std::strtoull(name.c_str(), nullptr, 10);
}

// Every file back to what was synced (never synced: empty), but the newest log keeps all.
// Returns how many log files there were.
int cut_all_but_the_newest_log(const std::string& dir, const power_loss::Ledger& ledger) {
  uint64_t newest = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    newest = std::max(newest, log_number(e.path().filename().string()));
  int logs = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const uint64_t number = log_number(e.path().filename().string());
    logs += number != 0;
    if (number != 0 && number == newest) continue;
    struct stat st;
    if (::stat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const uint64_t keep = ledger.durable(st.st_ino).value_or(0);
    if (keep < static_cast<uint64_t>(st.st_size)) {
      EXPECT_EQ(::truncate(e.path().c_str(), keep), 0);
    }
  }
  return logs;
}

// The jobs present must be 1..n for some n: nothing lost from the middle.
void expect_a_prefix(const std::string& dir, int last) {
  Result<DriverStore> q = open_in_driver({.dir = dir});  // no thread left for the next fork
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  int present = 0;
  int first_missing = 0;
  for (int k = 1; k <= last; ++k) {
    const bool here = (*q)->get(job_id(k)).ok();
    if (!here && first_missing == 0) first_missing = k;
    if (here && first_missing != 0)
      FAIL() << job_id(k) << " came back after the power loss, but " << job_id(first_missing)
             << ", pushed before it, did not: calls lost from the middle";
    present += here;
  }
  std::printf("[ harness  ] %d of %d jobs kept, the first %d\n", present, last, present);
}

TEST(PowerLoss, AnOlderLogFileIsSyncedBeforeANewerOneIsWritten) {
  TempDir root;
  ASSERT_FALSE(root.path().empty());
  const std::string dir = root.path() + "/store", side_log = root.path() + "/synced.log";
  constexpr int kJobs = 200;  // about 200 KiB: three or four log files of 64 KiB memtables
  run_child(dir, side_log, 1, kJobs);
  power_loss::Ledger ledger;  // an empty directory before the child: nothing was durable
  ASSERT_TRUE(ledger.apply_log(side_log).ok());
  ASSERT_GE(cut_all_but_the_newest_log(dir, ledger), 2) << "RocksDB never switched log files";
  expect_a_prefix(dir, kJobs);
}

TEST(PowerLoss, LogFilesReplayedAtOpenAreSyncedBeforeNewWrites) {
  TempDir root;
  ASSERT_FALSE(root.path().empty());
  const std::string dir = root.path() + "/store", side_log = root.path() + "/synced.log";
  // The first process's jobs fit in one memtable: its log file is replayed by the second,
  // which writes its own jobs to a new log file.
  run_child(dir, side_log, 1, 20);
  run_child(dir, side_log, 21, 40);
  power_loss::Ledger ledger;
  ASSERT_TRUE(ledger.apply_log(side_log).ok());
  ASSERT_GE(cut_all_but_the_newest_log(dir, ledger), 2) << "one log file only";
  expect_a_prefix(dir, 40);
}

}  // namespace
}  // namespace delayq::crash
