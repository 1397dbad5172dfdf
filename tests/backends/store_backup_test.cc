// Backups of a live store (delayq::backup_store, include/delayq/store.h): copies taken while
// producers and consumers run on the store, each opened and checked against what every caller
// was answered, and the refusals of a backup that cannot be taken. docs/production.md
// ("Backups") promises what these check. Nothing here asserts on durations: the machine may be
// slow and shared.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "delayq/store.h"
#include "temp_dir.h"

namespace {

using namespace std::chrono_literals;
using delayq::Errc;
using delayq::JobState;
using delayq::Sync;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// What the callers were told about one job, with the instants around each call: a call
// "started" before it was made and was "answered" after it returned.
struct JobLog {
  Clock::time_point push_started, push_answered;
  std::optional<Clock::time_point> gone_started;   // the ack or cancel that removed it
  std::optional<Clock::time_point> gone_answered;  // ... and when it was answered (success)
  bool delivered = false;                          // some reserve handed it out
};

class Log {
 public:
  void pushed(const std::string& id, Clock::time_point started) {
    std::lock_guard l(mu_);
    jobs_[id].push_started = started;
    jobs_[id].push_answered = Clock::now();
  }
  void delivered(const std::string& id) {
    std::lock_guard l(mu_);
    jobs_[id].delivered = true;
  }
  void gone(const std::string& id, Clock::time_point started) {
    std::lock_guard l(mu_);
    jobs_[id].gone_started = started;
    jobs_[id].gone_answered = Clock::now();
  }
  std::map<std::string, JobLog> snapshot() {
    std::lock_guard l(mu_);
    return jobs_;
  }
  // Calls answered in [from, to]: the load ran while a backup was being taken.
  size_t answered_between(Clock::time_point from, Clock::time_point to) {
    std::lock_guard l(mu_);
    size_t n = 0;
    for (const auto& [id, j] : jobs_) {
      n += j.push_answered >= from && j.push_answered <= to;
      n += j.gone_answered && *j.gone_answered >= from && *j.gone_answered <= to;
    }
    return n;
  }

 private:
  std::mutex mu_;
  std::map<std::string, JobLog> jobs_;
};

// Two producers (pushes due now and in an hour, every fifth one cancelled again) and two
// consumers (reserve and ack) on `q` until `stop`.
class Load {
 public:
  Load(delayq::Queue& q, Log& log) : q_(q), log_(log) {}
  void start() {
    for (int p = 0; p < 2; ++p) threads_.emplace_back([this, p] { produce(p); });
    for (int c = 0; c < 2; ++c) threads_.emplace_back([this] { consume(); });
  }
  void stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  ~Load() {
    if (!threads_.empty()) stop();
  }

 private:
  void produce(int p) {
    for (int n = 0; !stop_; ++n) {
      const std::string id = "p" + std::to_string(p) + "-" + std::to_string(n);
      const auto started = Clock::now();
      auto r = q_.push({.topic = "t", .id = id, .delay = n % 3 == 0 ? 1h : 0s, .body = id});
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      log_.pushed(id, started);
      if (n % 5 == 4) {
        const auto cancel_started = Clock::now();
        if (q_.cancel(id).ok()) log_.gone(id, cancel_started);
      }
    }
  }
  void consume() {
    while (!stop_) {
      auto d = q_.reserve("t", 20ms);
      if (!d) continue;
      log_.delivered(d->id);
      const auto started = Clock::now();
      if (q_.ack(d->token).ok()) log_.gone(d->id, started);
    }
  }

  delayq::Queue& q_;
  Log& log_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// Checks the copy in `dir`, taken between `t0` (before backup_store was called) and `t1` (after
// it returned), against what the callers were told (`log`, read after the load stopped).
void check_copy(const std::string& dir, Clock::time_point t0, Clock::time_point t1,
                const std::map<std::string, JobLog>& log) {
  auto copy = delayq::open_store({.dir = dir});
  ASSERT_TRUE(copy.ok()) << copy.status().to_string();
  delayq::Engine& q = **copy;
  size_t present = 0, must = 0;
  for (const auto& [id, j] : log) {
    auto info = q.get(id);
    ASSERT_TRUE(info.ok() || info.is(Errc::not_found)) << id << ": " << info.status().to_string();
    const bool there = info.ok();
    present += there;
    // Pushed before the backup started, and nothing removed it before the backup ended: there.
    if (j.push_answered < t0 && (!j.gone_started || *j.gone_started > t1)) {
      ++must;
      EXPECT_TRUE(there) << id << " was pushed before the backup and not removed until after it";
    }
    // Acked or cancelled before the backup started: not there.
    if (j.gone_answered && *j.gone_answered < t0) {
      EXPECT_FALSE(there) << id << " was acked or cancelled before the backup started";
    }
    // Pushed after the backup ended: not there.
    if (j.push_started > t1) {
      EXPECT_FALSE(there) << id << " was pushed after the backup";
    }
    if (!there) continue;
    EXPECT_EQ(info->body, id);
    EXPECT_EQ(info->topic, "t");
    // A job nobody reserved is delayed or ready with no attempt counted.
    if (!j.delivered) {
      EXPECT_TRUE(info->state == JobState::delayed || info->state == JobState::ready) << id;
      EXPECT_EQ(info->attempts, 0u) << id;
    }
    EXPECT_LE(info->attempts, 1u) << id;  // each job is delivered once at most, then acked
  }
  EXPECT_GT(must, 0u) << "the backup was taken before anything was pushed";
  // The copy is the queue after one call: its totals count exactly the jobs it holds.
  const delayq::Stats st = q.stats();
  uint64_t live = 0;
  for (const auto& [topic, t] : st.topics) live += t.delayed + t.ready + t.reserved + t.dead;
  EXPECT_EQ(live, present) << "the copy holds a job nobody pushed";
  EXPECT_EQ(st.pushed, live + st.acked + st.cancelled + st.purged)
      << "pushed " << st.pushed << ", live " << live << ", acked " << st.acked << ", cancelled "
      << st.cancelled;
  // And it serves: a push, a reserve of every ready job, acks.
  ASSERT_TRUE(q.push({.topic = "after", .id = "restored", .body = "x"}).ok());
  auto d = q.reserve("after", 10s);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_TRUE(q.ack(d->token).ok());
}

class StoreBackup : public ::testing::TestWithParam<Sync> {};

// Five backups while two producers and two consumers run; each copy holds every answered push
// that was not removed, none of the jobs removed before it, and opens and serves.
TEST_P(StoreBackup, CopiesTakenUnderLoadHoldEveryAnsweredCall) {
  delayq::testing::TempDir tmp("delayq-backup");
  auto store = delayq::open_store({.dir = tmp.path() + "/store", .sync = GetParam()});
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  Log log;
  Load load(**store, log);
  load.start();
  struct Taken {
    std::string dir;
    Clock::time_point t0, t1;
  };
  std::vector<Taken> taken;
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(50ms);
    Taken t{tmp.path() + "/backups/b" + std::to_string(i), Clock::now(), {}};
    const delayq::Status s = delayq::backup_store(**store, t.dir);
    t.t1 = Clock::now();
    ASSERT_TRUE(s.ok()) << s.to_string();
    taken.push_back(t);
  }
  std::this_thread::sleep_for(50ms);
  load.stop();
  size_t overlapped = 0;
  for (const Taken& t : taken) overlapped += log.answered_between(t.t0, t.t1) > 0;
  EXPECT_GT(overlapped, 0u) << "no call was answered while any of the backups ran";
  const auto answers = log.snapshot();
  for (const Taken& t : taken) {
    SCOPED_TRACE(t.dir);
    check_copy(t.dir, t.t0, t.t1, answers);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, StoreBackup, ::testing::Values(Sync::always, Sync::none),
                         [](const auto& info) {
                           return std::string(delayq::to_string(info.param));
                         });

// Restoring: the copy moved into the place of the store (the daemon stopped) opens as the queue
// it holds, reserved jobs included, which come back when their lease runs out.
TEST(StoreBackupRestore, TheCopyMovedIntoPlaceIsTheQueue) {
  delayq::testing::TempDir tmp("delayq-backup");
  const std::string dir = tmp.path() + "/store", copy = tmp.path() + "/copy";
  {
    auto q = delayq::open_store({.dir = dir, .sync = Sync::none}).value();
    ASSERT_TRUE(q->push({.topic = "t", .id = "later", .delay = 1h, .body = "a"}).ok());
    ASSERT_TRUE(q->push({.topic = "t", .id = "held", .ttr = 1s, .body = "b"}).ok());
    auto d = q->reserve("t", 10s);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(q->push({.topic = "t", .id = "acked", .body = "c"}).ok());
    auto e = q->reserve("t", 10s);
    ASSERT_TRUE(e.ok());
    ASSERT_TRUE(q->ack(e->token).ok());
    ASSERT_TRUE(delayq::backup_store(*q, copy).ok());
    ASSERT_TRUE(q->push({.topic = "t", .id = "after", .body = "d"}).ok());
  }
  fs::remove_all(dir);
  fs::rename(copy, dir);
  auto q = delayq::open_store({.dir = dir}).value();
  EXPECT_EQ(q->get("later")->state, JobState::delayed);
  EXPECT_EQ(q->get("held")->state, JobState::reserved);
  EXPECT_TRUE(q->get("acked").is(Errc::not_found));
  EXPECT_TRUE(q->get("after").is(Errc::not_found));
  EXPECT_EQ(q->stats().pushed, 3u);
  EXPECT_EQ(q->stats().acked, 1u);
  auto again = q->reserve("t", 30s);  // "held" once its 1 s lease has run out
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->id, "held");
  EXPECT_EQ(again->attempt, 2u);
}

// On another file system the table files cannot be hard links: the copy is whole, and opens
// after the store is gone.
TEST(StoreBackupRestore, ABackupOnAnotherFileSystemIsAFullCopy) {
  delayq::testing::TempDir tmp("delayq-backup");
  const std::string shm = "/dev/shm";
  struct stat a {
  }, b{};
  if (::stat(tmp.path().c_str(), &a) != 0 || ::stat(shm.c_str(), &b) != 0 || a.st_dev == b.st_dev)
    GTEST_SKIP() << "no second file system at " << shm;
  const std::string copy = shm + "/delayq-backup-test-" + std::to_string(::getpid());
  fs::remove_all(copy);
  {
    auto q = delayq::open_store({.dir = tmp.path() + "/store"}).value();
    for (int i = 0; i < 100; ++i)
      ASSERT_TRUE(q->push({.topic = "t", .id = std::to_string(i), .delay = 1h}).ok());
    ASSERT_TRUE(delayq::backup_store(*q, copy).ok());
  }
  fs::remove_all(tmp.path() + "/store");
  auto q = delayq::open_store({.dir = copy});
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ((*q)->stats().topics["t"].delayed, 100u);
  q->reset();
  fs::remove_all(copy);
}

// What cannot be backed up, and where a backup cannot go, is refused saying why; nothing is
// written there.
TEST(StoreBackupRefusals, BadTargetsAndQueuesWithoutAStore) {
  delayq::testing::TempDir tmp("delayq-backup");
  const std::string dir = tmp.path() + "/store";
  auto q = delayq::open_store({.dir = dir}).value();
  ASSERT_TRUE(q->push({.topic = "t", .id = "x"}).ok());

  fs::create_directories(tmp.path() + "/exists");
  delayq::Status s = delayq::backup_store(*q, tmp.path() + "/exists");
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
  EXPECT_NE(s.message().find("already exists"), std::string::npos) << s.message();

  s = delayq::backup_store(*q, dir + "/inside");
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
  EXPECT_NE(s.message().find("inside the store"), std::string::npos) << s.message();
  EXPECT_FALSE(fs::exists(dir + "/inside"));

  fs::create_directories(tmp.path() + "/staged.tmp");
  s = delayq::backup_store(*q, tmp.path() + "/staged");
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
  EXPECT_NE(s.message().find("staged.tmp exists"), std::string::npos) << s.message();

  s = delayq::backup_store(*q, "");
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();

  auto memory = delayq::Engine::open({}).value();
  s = delayq::backup_store(*memory, tmp.path() + "/m");
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
  EXPECT_NE(s.message().find("in-memory"), std::string::npos) << s.message();

  // The parents of a new backup directory are created, and a trailing slash is fine.
  s = delayq::backup_store(*q, tmp.path() + "/a/b/c/");
  ASSERT_TRUE(s.ok()) << s.to_string();
  q.reset();
  EXPECT_TRUE(delayq::open_store({.dir = tmp.path() + "/a/b/c"}).value()->get("x").ok());
  // A read-only store takes no lock, so a copy of it could be torn: refused.
  auto ro = delayq::open_store({.dir = dir, .read_only = true}).value();
  s = delayq::backup_store(*ro, tmp.path() + "/ro");
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
}

}  // namespace
