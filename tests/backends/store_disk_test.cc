// The durable store on real disks: a file system that fills up (a tmpfs mounted for the test),
// and the logs a crash leaves behind, synced before a reopened store serves
// (docs/durability.md, "Write faults").
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <rocksdb/env.h>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "delayq/store.h"
#include "fault_fs.h"
#include "store_files.h"
#include "wal/store_testing.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using faults::Fault;
using faults::Op;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- a real file system that fills up ------------------------------------------------------

// Unmounts at the end of the test, whatever happened.
struct Mount {
  std::string path;
  ~Mount() { ::umount2(path.c_str(), MNT_DETACH); }
};

// A 16 MiB tmpfs mounted for the test, filled by pushes until the disk is full. Mounting needs
// root (CAP_SYS_ADMIN), which this machine and ./scripts/test.sh have; where it is refused the
// test is skipped, saying why.
TEST(StoreFullDisk, AFullFileSystemAnswersIoErrorAndKeepsEveryAnsweredPush) {
  testing::TempDir mnt;
  if (::mount("tmpfs", mnt.path().c_str(), "tmpfs", 0, "size=16m") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs at " << mnt.path() << " (" << std::strerror(errno)
                 << "): the full-disk test needs root with CAP_SYS_ADMIN";
  Mount mounted{mnt.path()};
  StoreOptions o;
  o.dir = mnt.sub("store");
  const std::string body(64 << 10, 'b');
  std::vector<std::string> answered;
  {
    auto q = open_store(o);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    Status refused;
    for (int i = 0; i < 1000 && refused.ok(); ++i) {
      const std::string id = "f" + std::to_string(i);
      Result<std::string> r = (*q)->push({.topic = "t", .id = id, .body = body});
      if (r.ok()) answered.push_back(id);
      refused = r.status();
    }
    ASSERT_FALSE(refused.ok()) << "16 MiB never filled up";
    EXPECT_TRUE(refused.is(Errc::io_error)) << refused.to_string();
    EXPECT_TRUE(has(refused.message(), "No space left"))
        << "the cause is named: " << refused.message();
    EXPECT_GT(answered.size(), 50u);
    EXPECT_TRUE((*q)->reserve("t", 0ms).is(Errc::io_error)) << "nothing is handed out";
  }
  // Room again (tmpfs grows on a remount): every answered push is there, whole.
  ASSERT_EQ(::mount("tmpfs", mnt.path().c_str(), "tmpfs", MS_REMOUNT, "size=64m"), 0)
      << std::strerror(errno);
  auto q = open_store(o);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  for (const std::string& id : answered) {
    Result<JobInfo> j = (*q)->get(id);
    ASSERT_TRUE(j.ok()) << id << ": " << j.status().to_string();
    EXPECT_EQ(j->body, body) << id;
  }
  const uint64_t pushed = (*q)->stats().pushed;
  EXPECT_TRUE(pushed == answered.size() || pushed == answered.size() + 1) << pushed;
}

// ---- the logs replayed at open ------------------------------------------------------------

// After a crash, the calls of the last run that were answered before the disk had them
// (Sync::none here) are replayed from the old log. That log is put on disk before the store
// serves: otherwise new calls, synced in a new log, could survive a power loss that takes the
// old log's tail, and the store would come back with calls missing from the middle. A store
// whose old log cannot be synced does not open.
TEST(StoreReopen, TheLogsReplayedAtOpenAreSyncedBeforeTheStoreServes) {
  testing::TempDir dir;
  StoreOptions o;
  o.dir = dir.sub("store");
  o.sync = Sync::none;
  {
    auto q = open_store(o);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    for (int i = 0; i < 5; ++i)
      ASSERT_TRUE((*q)->push({.topic = "t", .id = std::to_string(i)}).ok());
    // A crash: the directory as the process left it, log unsynced and not replayed.
    std::filesystem::copy(o.dir, dir.sub("crashed"), std::filesystem::copy_options::recursive);
  }
  o.dir = dir.sub("crashed");
  auto control = std::make_shared<faults::FaultControl>();
  auto env = faults::fault_env(control);
  control->fail_after(Op::sync, Fault::io_error, 0);
  auto refused = wal::open_store_on(o, env.get());
  ASSERT_TRUE(refused.is(Errc::io_error))
      << (refused.ok() ? "opened" : refused.status().to_string());
  EXPECT_TRUE(has(refused.status().message(), "replayed at open")) << refused.status().message();

  control->clear();
  auto q = wal::open_store_on(o, env.get());
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_GE(control->passed(Op::sync), 1u) << "the old log was synced";
  for (int i = 0; i < 5; ++i) EXPECT_TRUE((*q)->get(std::to_string(i)).ok()) << i;
}

}  // namespace
}  // namespace delayq
