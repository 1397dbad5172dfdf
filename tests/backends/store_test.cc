// The durable store on a real RocksDB directory: what a reopen brings back, and what a SIGKILL
// of the process holding the store cannot take away.
//
// Kept whole over ~400 lines: one subject (what a reopen or a SIGKILL leaves of the store), its
// tests on the Store fixture, with the few standalone ones (crash, options, sync modes) beside
// them.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <thread>

#include "child_process.h"
#include "delayq/store.h"
#include "temp_dir.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;

using testing::single_threaded;
using testing::TempDir;

class Store : public ::testing::Test {
 protected:
  std::unique_ptr<Engine> open(size_t shards = 1) {
    StoreOptions o;
    o.dir = dir.path();
    o.engine.clock = &clock;
    o.engine.shards = shards;
    o.engine.seed = 3;
    Result<std::unique_ptr<Engine>> q = open_store(o);
    EXPECT_TRUE(q.ok()) << q.status().to_string();
    return q.ok() ? std::move(q).value() : nullptr;
  }

  TempDir dir;
  ManualClock clock;
};

TEST_F(Store, TheDirectoryIsCreatedWithItsParentsOrTheErrorNamesIt) {
  StoreOptions o;
  o.dir = dir.path() + "/a/b/c";
  o.engine.clock = &clock;
  {
    Result<std::unique_ptr<Engine>> q = open_store(o);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    ASSERT_TRUE((*q)->push({.topic = "t", .id = "x"}).ok());
  }
  Result<std::unique_ptr<Engine>> again = open_store(o);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_TRUE((*again)->get("x").ok());
  again->reset();
  // A path through a plain file cannot be created: io_error, naming the directory.
  std::fclose(std::fopen((dir.path() + "/file").c_str(), "w"));
  o.dir = dir.path() + "/file/store";
  Result<std::unique_ptr<Engine>> bad = open_store(o);
  EXPECT_TRUE(bad.is(Errc::io_error)) << bad.status().to_string();
  EXPECT_NE(bad.status().message().find(o.dir), std::string::npos) << bad.status().to_string();
}

TEST_F(Store, PushedJobsComeBackAfterAReopen) {
  const TimePoint t0 = clock.now();
  {
    auto q = open();
    ASSERT_TRUE(q->push({.topic = "orders", .id = "o1", .delay = 1h, .ttr = 7s,
                         .body = std::string("bin\0ary", 7),
                         .retry = RetryPolicy::list({1min, 5min})})
                    .ok());
    ASSERT_TRUE(q->push({.topic = "orders", .id = "o2", .delay = 2h}).ok());
  }
  auto q = open();
  JobInfo o1 = q->get("o1").value();
  EXPECT_EQ(o1.topic, "orders");
  EXPECT_EQ(o1.body, std::string("bin\0ary", 7));
  EXPECT_EQ(o1.due, t0 + 1h);
  EXPECT_EQ(o1.ttr, 7s);
  EXPECT_EQ(o1.max_attempts, 3u);
  EXPECT_EQ(q->get("o2")->due, t0 + 2h);
  clock.advance(1h);
  EXPECT_EQ(q->reserve("orders", 0ms)->id, "o1");
  EXPECT_TRUE(q->reserve("orders", 0ms).is(Errc::timeout));
}

TEST_F(Store, AReservationsAttemptIsCountedAcrossARestart) {
  {
    auto q = open();
    ASSERT_TRUE(q->push({.topic = "t", .id = "j", .ttr = 10s,
                         .retry = RetryPolicy::fixed(0ms, 3)}).ok());
    Delivery d = q->reserve("t", 0ms).value();
    EXPECT_EQ(d.attempt, 1u);
    // The consumer's process dies here: no ack.
  }
  auto q = open();
  JobInfo j = q->get("j").value();
  EXPECT_EQ(j.state, JobState::reserved);
  EXPECT_EQ(j.attempts, 1u);
  EXPECT_TRUE(q->reserve("t", 0ms).is(Errc::timeout)) << "still leased";
  clock.advance(10s);
  Delivery again = q->reserve("t", 0ms).value();
  EXPECT_EQ(again.attempt, 2u);
}

TEST_F(Store, AckedAndCancelledJobsStayGone) {
  {
    auto q = open();
    ASSERT_TRUE(q->push({.topic = "t", .id = "acked"}).ok());
    ASSERT_TRUE(q->push({.topic = "t", .id = "cancelled", .delay = 1h}).ok());
    ASSERT_TRUE(q->ack(q->reserve("t", 0ms)->token).ok());
    ASSERT_TRUE(q->cancel("cancelled").ok());
  }
  auto q = open();
  EXPECT_TRUE(q->get("acked").is(Errc::not_found));
  EXPECT_TRUE(q->get("cancelled").is(Errc::not_found));
  clock.advance(2h);
  EXPECT_TRUE(q->reserve("t", 0ms).is(Errc::timeout));
}

TEST_F(Store, JobsThatFellDueWhileClosedFireAtOnceInDueOrder) {
  {
    auto q = open(4);
    ASSERT_TRUE(q->push({.topic = "t", .id = "third", .delay = 30min}).ok());
    ASSERT_TRUE(q->push({.topic = "t", .id = "first", .delay = 10min}).ok());
    ASSERT_TRUE(q->push({.topic = "t", .id = "second", .delay = 20min}).ok());
  }
  clock.advance(1h);  // the service was down for an hour
  auto q = open(1);   // one shard now: one global order to check
  EXPECT_EQ(q->reserve("t", 0ms)->id, "first");
  EXPECT_EQ(q->reserve("t", 0ms)->id, "second");
  EXPECT_EQ(q->reserve("t", 0ms)->id, "third");
}

TEST_F(Store, DeadLettersAndIdsSurvive) {
  {
    auto q = open();
    ASSERT_TRUE(q->push({.topic = "t", .id = "poison", .retry = RetryPolicy::fixed(0ms, 1)}).ok());
    ASSERT_TRUE(q->nack(q->reserve("t", 0ms)->token).ok());
    ASSERT_EQ(q->get("poison")->state, JobState::dead);
  }
  auto q = open();
  std::vector<JobInfo> dead = q->list_dead("t", 10).value();
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].id, "poison");
  EXPECT_TRUE(q->push({.topic = "t", .id = "poison"}).is(Errc::duplicate_id));
  ASSERT_TRUE(q->requeue_dead("poison").ok());
  EXPECT_EQ(q->reserve("t", 0ms)->attempt, 1u);
}

TEST_F(Store, FencesAndGeneratedIdsDoNotRepeatAfterAReopen) {
  std::string id1;
  uint64_t fence1 = 0;
  {
    auto q = open();
    id1 = q->push({.topic = "t"}).value();
    fence1 = q->reserve("t", 0ms)->token.fence;
  }
  auto q = open();
  const std::string id2 = q->push({.topic = "t"}).value();
  EXPECT_NE(id1, id2);
  clock.advance(1h);  // the first job's lease ran out: it is retried
  std::set<uint64_t> fences{fence1};
  for (int i = 0; i < 2; ++i) {
    Result<Delivery> d = q->reserve("t", 0ms);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_TRUE(fences.insert(d->token.fence).second) << "fence " << d->token.fence << " reused";
  }
}

// Concurrent producers on a synced store share fsyncs (group commit): every push that returned
// is there after a reopen, however the fsyncs were shared.
TEST_F(Store, ConcurrentSyncedPushesAllSurviveAReopen) {
  constexpr int kThreads = 8, kEach = 150;
  {
    auto q = open(2);
    std::vector<std::thread> producers;
    for (int t = 0; t < kThreads; ++t)
      producers.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i) {
          const std::string id = "p" + std::to_string(t) + "-" + std::to_string(i);
          EXPECT_TRUE(q->push({.topic = "t", .id = id, .delay = 1h, .body = id}).ok());
        }
      });
    for (auto& p : producers) p.join();
  }
  auto q = open(2);
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kEach; ++i) {
      const std::string id = "p" + std::to_string(t) + "-" + std::to_string(i);
      Result<JobInfo> j = q->get(id);
      ASSERT_TRUE(j.ok()) << id << ": " << j.status().to_string();
      EXPECT_EQ(j->body, id);
    }
}

TEST_F(Store, TheTotalsOfStatsSurviveAReopen) {
  {
    auto q = open(2);
    for (int i = 0; i < 5; ++i)
      ASSERT_TRUE(q->push({.topic = "t", .id = "j" + std::to_string(i),
                           .retry = RetryPolicy::fixed(1s, 1)}).ok());
    ASSERT_TRUE(q->ack(q->reserve("t", 0ms)->token).ok());
    ASSERT_TRUE(q->nack(q->reserve("t", 0ms)->token).ok());  // its only attempt: dead
    ASSERT_TRUE(q->cancel("j4").ok());
  }
  Stats s = open(2)->stats();
  EXPECT_EQ(s.pushed, 5u);
  EXPECT_EQ(s.delivered, 2u);
  EXPECT_EQ(s.acked, 1u);
  EXPECT_EQ(s.dead_lettered, 1u);
  EXPECT_EQ(s.cancelled, 1u);
  EXPECT_EQ(s.topics["t"].ready, 2u);
  EXPECT_EQ(s.topics["t"].dead, 1u);
}

TEST_F(Store, ASecondOpenOfTheSameDirectoryIsRefused) {
  auto q = open();
  StoreOptions o;
  o.dir = dir.path();
  Result<std::unique_ptr<Engine>> again = open_store(o);
  EXPECT_TRUE(again.is(Errc::unavailable)) << again.status().to_string();
}

// A refused second open must not drop the holder's lock (closing any descriptor of a file drops
// every classic fcntl lock the process has on it): a process that shares nothing with the store
// (forked before it opened, so no inherited descriptor) is still refused afterwards, and the
// refusals name the holder. Seen to fail before the store took its own lock: the child opened
// the store as a second writer.

TEST_F(Store, ARefusedSecondOpenLeavesTheStoreLockedForOtherProcesses) {
  if (!single_threaded()) GTEST_SKIP() << "needs a process of its own (run it alone, as ctest does)";
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const std::string path = dir.path();
  testing::ChildProcess child([&](int report) {
    ::close(go[1]);
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(2);
    StoreOptions o;
    o.dir = path;
    Result<std::unique_ptr<Engine>> q = open_store(o);
    const std::string said = q.ok() ? "opened" : q.status().to_string();
    (void)!::write(report, said.data(), said.size());
    ::_exit(0);
  });
  ::close(go[0]);
  ASSERT_TRUE(child.started());
  auto q = open();
  ASSERT_TRUE(q);
  ASSERT_TRUE(q->push({.topic = "t", .id = "kept", .delay = 1h}).ok());
  StoreOptions o;
  o.dir = path;
  Result<std::unique_ptr<Engine>> again = open_store(o);
  ASSERT_TRUE(again.is(Errc::unavailable)) << again.status().to_string();
  EXPECT_NE(again.status().message().find("this process already has it open"), std::string::npos)
      << again.status().message();
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ::close(go[1]);
  std::string said;
  char buf[512];
  for (ssize_t n; (n = ::read(child.reports(), buf, sizeof buf)) > 0;) said.append(buf, n);
  EXPECT_NE(said.find("is locked by process " + std::to_string(::getpid())), std::string::npos)
      << said;
  // The holder goes on: its job is there, and it writes.
  EXPECT_TRUE(q->get("kept").ok());
  EXPECT_TRUE(q->push({.topic = "t", .id = "after", .delay = 1h}).ok());
  q.reset();
  EXPECT_TRUE(open()->get("after").ok());
}

TEST_F(Store, ReadOnlyOpenShowsTheQueueAndWritesNothing) {
  {
    auto q = open();
    ASSERT_TRUE(q->push({.topic = "t", .id = "kept", .delay = 1h}).ok());
  }
  {
    StoreOptions o;
    o.dir = dir.path();
    o.read_only = true;
    o.engine.clock = &clock;
    auto ro = open_store(o).value();
    EXPECT_EQ(ro->get("kept")->state, JobState::delayed);
    ASSERT_TRUE(ro->cancel("kept").ok());  // changes only this view
  }
  EXPECT_TRUE(open()->get("kept").ok());
}

TEST(StoreOptionsCheck, SyncModesParseAndBadOptionsAreRefusedByName) {
  for (Sync m : {Sync::always, Sync::batch, Sync::periodic, Sync::none})
    EXPECT_EQ(parse_sync(to_string(m)).value(), m);
  Result<Sync> bad = parse_sync("sometimes");
  ASSERT_TRUE(bad.is(Errc::invalid_argument));
  EXPECT_NE(bad.status().message().find("sometimes"), std::string::npos);
  EXPECT_NE(bad.status().message().find("periodic"), std::string::npos);

  TempDir dir;
  StoreOptions o;
  o.dir = dir.path();
  o.sync = Sync::batch;
  o.sync_batch_ops = 0;
  Result<std::unique_ptr<Engine>> q = open_store(o);
  ASSERT_TRUE(q.is(Errc::invalid_argument));
  EXPECT_NE(q.status().message().find("sync_batch_ops"), std::string::npos);
  o.sync_batch_ops = 10;
  o.sync = Sync::periodic;
  o.sync_interval = Duration::zero();
  q = open_store(o);
  ASSERT_TRUE(q.is(Errc::invalid_argument));
  EXPECT_NE(q.status().message().find("sync_interval"), std::string::npos);
  o.sync = static_cast<Sync>(42);
  EXPECT_TRUE(open_store(o).is(Errc::invalid_argument));
  // Nothing was created by the refused opens that a good open would trip over.
  o.sync = Sync::batch;
  o.sync_interval = 1ms;
  EXPECT_TRUE(open_store(o).ok());
}

// StoreOptions::memtable_bytes reaches RocksDB (its OPTIONS file records what the store was
// opened with: the budget over all families, and each family's own buffer), and a size outside
// 1 MiB .. 1 GiB is refused by name before anything is opened.
TEST(StoreOptionsCheck, TheMemtableBudgetReachesRocksDbAndIsRangeChecked) {
  auto options_text = [](const std::string& dir) {
    std::string newest;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().filename().string().rfind("OPTIONS-", 0) == 0 &&
          e.path().string() > newest)
        newest = e.path().string();
    std::ifstream in(newest);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  TempDir dir;
  StoreOptions o;
  o.dir = dir.path();
  {
    auto q = open_store(o);
    ASSERT_TRUE(q.ok()) << q.status().message();
  }
  std::string text = options_text(dir.path());
  EXPECT_NE(text.find("db_write_buffer_size=16777216"), std::string::npos) << text;
  EXPECT_NE(text.find("write_buffer_size=16777216"), std::string::npos);
  o.memtable_bytes = uint64_t{3} << 20;
  {
    auto q = open_store(o);
    ASSERT_TRUE(q.ok()) << q.status().message();
  }
  text = options_text(dir.path());
  EXPECT_NE(text.find("db_write_buffer_size=3145728"), std::string::npos) << text;
  EXPECT_EQ(text.find("write_buffer_size=16777216"), std::string::npos);
  for (uint64_t bad : {uint64_t{0}, (uint64_t{1} << 20) - 1, (uint64_t{1} << 30) + 1,
                       std::numeric_limits<uint64_t>::max()}) {
    o.memtable_bytes = bad;
    Result<std::unique_ptr<Engine>> q = open_store(o);
    ASSERT_TRUE(q.is(Errc::invalid_argument)) << bad;
    EXPECT_NE(q.status().message().find("memtable_bytes must be between 1 MiB and 1 GiB, got " +
                                        std::to_string(bad)),
              std::string::npos)
        << q.status().message();
  }
}

// Every sync mode: concurrent calls from many threads (pushes, reservations, acks, each
// answered after its write), then a clean close; a reopen shows exactly the calls answered.
class StoreModes : public ::testing::TestWithParam<Sync> {};

TEST_P(StoreModes, EveryAnsweredCallIsThereAfterACleanClose) {
  TempDir dir;
  ManualClock clock;
  auto open = [&] {
    StoreOptions o;
    o.dir = dir.path();
    o.sync = GetParam();
    o.sync_batch_ops = 7;
    o.sync_interval = 1ms;
    o.engine.clock = &clock;
    o.engine.shards = 2;
    return open_store(o).value();
  };
  constexpr int kThreads = 6, kEach = 120;
  {
    auto q = open();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i) {
          const std::string id = "p" + std::to_string(t) + "-" + std::to_string(i);
          // Every third job is due now, reserved and acked by this thread: gone after reopen.
          const bool now = i % 3 == 0;
          ASSERT_TRUE(q->push({.topic = id, .id = id, .delay = now ? 0s : 1h, .body = id}).ok());
          if (now) {
            Result<Delivery> d = q->reserve(id, 0ms);
            ASSERT_TRUE(d.ok()) << d.status().to_string();
            ASSERT_TRUE(q->ack(d->token).ok());
          }
        }
      });
    for (auto& t : threads) t.join();
  }
  auto q = open();
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kEach; ++i) {
      const std::string id = "p" + std::to_string(t) + "-" + std::to_string(i);
      Result<JobInfo> j = q->get(id);
      if (i % 3 == 0) {
        EXPECT_TRUE(j.is(Errc::not_found)) << id;
      } else {
        ASSERT_TRUE(j.ok()) << id << ": " << j.status().to_string();
        EXPECT_EQ(j->body, id);
      }
    }
}

INSTANTIATE_TEST_SUITE_P(AllSyncModes, StoreModes,
                         ::testing::Values(Sync::always, Sync::batch, Sync::periodic, Sync::none),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST_F(Store, AnEmptyDirectoryOptionIsRefused) {
  Result<std::unique_ptr<Engine>> q = open_store(StoreOptions{});
  EXPECT_TRUE(q.is(Errc::invalid_argument));
  EXPECT_NE(q.status().message().find("dir"), std::string::npos);
}

// Runs `calls(q, i)` for i = first, first + 1, ... in a child process, on the store in `dir`
// opened with `sync`, reporting each i whose call returned success through a pipe; reads the
// reports for `run`, then kills the child with SIGKILL. Returns every i reported (those already
// in the pipe when it died included).
std::vector<uint64_t> run_until_killed(const std::string& dir, Sync sync, uint64_t first,
                                       std::chrono::milliseconds run,
                                       const std::function<Status(Engine&, uint64_t)>& calls) {
  std::vector<uint64_t> reported;
  testing::ChildProcess child([&](int fd) {
    auto q = open_store({.dir = dir, .sync = sync});
    if (!q) _exit(3);
    for (uint64_t i = first;; ++i) {
      if (!calls(**q, i).ok()) _exit(4);
      if (write(fd, &i, sizeof i) != sizeof i) _exit(5);
    }
  });
  EXPECT_TRUE(child.started()) << "pipe or fork failed";
  const auto until = std::chrono::steady_clock::now() + run;
  uint64_t i;
  while (std::chrono::steady_clock::now() < until &&
         read(child.reports(), &i, sizeof i) == sizeof i)
    reported.push_back(i);
  const int status = child.kill_and_wait();
  while (read(child.reports(), &i, sizeof i) == sizeof i) reported.push_back(i);
  EXPECT_TRUE(WIFSIGNALED(status)) << "the child exited by itself: " << WEXITSTATUS(status);
  return reported;
}

// Every mode writes a call to the OS before answering it: a SIGKILL loses none of them.
Sync mode_of(int cycle) {
  return std::array{Sync::always, Sync::batch, Sync::periodic, Sync::none}[cycle % 4];
}

// A child process pushes jobs and reports each push that returned success through a pipe; the
// parent kills it with SIGKILL at a random moment. Every job reported must be in the store
// afterwards, with its body. (The first cycles of the crash harness: push only.)
TEST(StoreCrash, NoPushThatReturnedSuccessIsLostToSigkill) {
  if (!single_threaded()) GTEST_SKIP() << "needs a process of its own (run it alone, as ctest does)";
  TempDir dir;
  std::mt19937_64 rng(12345);
  std::set<uint64_t> reported;
  uint64_t next = 0;
  constexpr int kCycles = 12;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle) + ", seed 12345");
    const auto run = std::chrono::milliseconds(20 + rng() % 150);
    for (uint64_t i :
         run_until_killed(dir.path(), mode_of(cycle), next, run, [](Engine&q, uint64_t i) {
           const std::string id = "k" + std::to_string(i);
           return q.push({.topic = "t", .id = id, .delay = 1h, .body = "body-" + id}).status();
         })) {
      reported.insert(i);
      next = std::max(next, i + 1);
    }
    next += 1000;  // ids of unreported pushes may or may not be stored: never reuse them
  }
  StoreOptions o;
  o.dir = dir.path();
  auto q = open_store(o).value();
  size_t missing = 0;
  for (uint64_t i : reported) {
    Result<JobInfo> j = q->get("k" + std::to_string(i));
    if (!j.ok() || j->body != "body-k" + std::to_string(i)) ++missing;
  }
  EXPECT_EQ(missing, 0u) << "of " << reported.size() << " reported pushes";
  // The totals are written in the same atomic batch as the records they count: however the
  // kills fell, the pushes counted are exactly the jobs stored.
  Stats st = q->stats();
  EXPECT_EQ(st.pushed, st.topics["t"].delayed);
  EXPECT_GT(reported.size(), static_cast<size_t>(kCycles)) << "the children pushed too little";
}

// A child pauses and resumes topics, reporting each call that returned; the parent kills it at a
// random moment and reopens the store: every topic is paused or running as its last reported
// call left it (the one call in flight, on the next topic in turn, may or may not have taken
// effect), and a job of a paused topic is held after the reopen.
// Runs `fn` in a child process; returns its exit status (0: `fn` returned true). A test that
// forks children on a store opens it only in children too: a process that has opened one keeps
// RocksDB's background threads, and a child forked from a threaded process must not start
// threads of its own (unsafe, and ThreadSanitizer stops it). `fn` says what failed on stderr.
int in_child(const std::function<bool()>& fn) {
  const pid_t pid = fork();
  if (pid == 0) _exit(fn() ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(StoreCrash, APauseOrResumeThatReturnedSurvivesSigkill) {
  if (!single_threaded()) GTEST_SKIP() << "needs a process of its own (run it alone, as ctest does)";
  TempDir dir;
  std::mt19937_64 rng(777);
  constexpr uint64_t kTopics = 5;
  // Call i sets topic i % kTopics paused when (i / kTopics) is even, running when odd.
  const auto topic = [](uint64_t i) { return "p" + std::to_string(i % kTopics); };
  const auto pausing = [](uint64_t i) { return (i / kTopics) % 2 == 0; };
  ASSERT_EQ(in_child([&] {
              auto q = open_store({.dir = dir.path()});
              for (uint64_t t = 0; q.ok() && t < kTopics; ++t)
                if (!(*q)->push({.topic = topic(t)}).ok()) return false;
              return q.ok();
            }),
            0);
  uint64_t next = 0;
  for (int cycle = 0; cycle < 8; ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle) + ", seed 777");
    const uint64_t first = next;
    const auto run = std::chrono::milliseconds(20 + rng() % 100);
    const std::vector<uint64_t> reported = run_until_killed(
        dir.path(), mode_of(cycle), first, run,
        [&](Engine& q, uint64_t i) { return pausing(i) ? q.pause(topic(i)) : q.resume(topic(i)); });
    ASSERT_FALSE(reported.empty()) << "the child made no call in time";
    const uint64_t last = reported.back();
    // The last reported call on each topic holds, unless the call in flight was on it.
    EXPECT_EQ(in_child([&] {
                auto q = open_store({.dir = dir.path()});
                if (!q) return false;
                const Stats st = (*q)->stats();
                bool held = true;
                for (uint64_t k = last; k + kTopics > last && k >= first; --k) {
                  const auto t = st.topics.find(topic(k));
                  if (topic(k) != topic(last + 1) &&
                      (t == st.topics.end() || t->second.paused != pausing(k) ||
                       (pausing(k) && !(*q)->reserve(topic(k), 0ms).is(Errc::timeout)))) {
                    std::cerr << topic(k) << " after call " << k << ": not "
                              << (pausing(k) ? "paused" : "running") << "\n";
                    held = false;
                  }
                  if (k == 0) break;
                }
                return held;
              }),
              0);
    next = last + 2;  // the call in flight, done or not, is never repeated with its old meaning
  }
}

}  // namespace
}  // namespace delayq
