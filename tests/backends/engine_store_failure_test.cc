// When the store cannot be written, no call may report success for a change that was not
// recorded, and the queue stops with the store's error (fail-stop). Driven through a fake
// Persistence that fails on command.
#include <gtest/gtest.h>

#include <map>

#include "engine/store_seam.h"

namespace delayq::engine {
namespace {

using namespace std::chrono_literals;

struct FlakyStore final : Persistence {
  std::shared_ptr<std::atomic<bool>> broken = std::make_shared<std::atomic<bool>>(false);
  Result<uint64_t> write(const std::vector<Change>&, const Stats&) override {
    if (broken->load()) return Status(Errc::io_error, "disk full (simulated)");
    return uint64_t{1};
  }
  Status wait_durable(uint64_t) override { return Status(); }
};

struct Opened {
  std::unique_ptr<Engine> q;
  std::shared_ptr<std::atomic<bool>> broken;
};

Opened open_flaky(ManualClock& clock, const RecordSource& records = {}) {
  auto store = std::make_unique<FlakyStore>();
  Opened o{nullptr, store->broken};
  EngineOptions opt;
  opt.clock = &clock;
  auto q = open_engine(opt, std::move(store), records, Stats{});
  if (q.ok()) o.q = std::move(q).value();
  return o;
}

TEST(EngineStoreFailure, AFailedWriteFailsTheCallAndStopsTheQueue) {
  ManualClock clock;
  Opened o = open_flaky(clock);
  ASSERT_TRUE(o.q);
  ASSERT_TRUE(o.q->push({.topic = "t", .id = "kept"}).ok());
  o.broken->store(true);
  Result<std::string> r = o.q->push({.topic = "t", .id = "lost"});
  EXPECT_TRUE(r.is(Errc::io_error)) << r.status().to_string();
  EXPECT_NE(r.status().message().find("disk full"), std::string::npos) << "the cause is named";
  // Stopped: nothing can be handed out, and every call says why.
  EXPECT_TRUE(o.q->reserve("t", 0ms).is(Errc::io_error));
  EXPECT_TRUE(o.q->get("kept").is(Errc::io_error));
}

TEST(EngineStoreFailure, PushBatchReportsNoSuccessWhenItsWriteFailed) {
  ManualClock clock;
  Opened o = open_flaky(clock);
  o.broken->store(true);
  std::vector<JobSpec> specs(3);
  for (int i = 0; i < 3; ++i) specs[i] = {.topic = "t", .id = "b" + std::to_string(i)};
  for (const Result<std::string>& r : o.q->push_batch(std::move(specs)))
    EXPECT_TRUE(r.is(Errc::io_error)) << r.status().to_string();
}

TEST(EngineStoreFailure, DeadLetterBulkCallsReportTheFailure) {
  ManualClock clock;
  Opened o = open_flaky(clock);
  ASSERT_TRUE(o.q->push({.topic = "t", .id = "d", .retry = RetryPolicy::fixed(0ms, 1)}).ok());
  ASSERT_TRUE(o.q->dead_letter(o.q->reserve("t", 0ms)->token).ok());
  o.broken->store(true);
  EXPECT_TRUE(o.q->requeue_dead_topic("t").is(Errc::io_error));
}

TEST(EngineStoreFailure, AnOpenWhoseCatchUpCannotBeWrittenFails) {
  ManualClock clock;
  const JobRecord held{.seq = 1, .id = "h", .topic = "t", .state = JobState::reserved,
                       .due = clock.now(), .lease_deadline = clock.now() - 1s, .ttr = 5s,
                       .attempts = 1, .fence = 1};
  auto store = std::make_unique<FlakyStore>();
  store->broken->store(true);  // the expired lease's retry cannot be recorded
  EngineOptions opt;
  opt.clock = &clock;
  auto q = open_engine(opt, std::move(store), [&](const auto& fn) { return fn(JobRecord(held)); },
                       Stats{});
  EXPECT_TRUE(q.is(Errc::io_error)) << (q.ok() ? "opened" : q.status().to_string());
}

// Opening rebuilds the shards on restorer threads while records are still being read: every
// record lands in the shard that owns its id, in seq order, over many hand-over batches.
TEST(EngineRestore, ManyRecordsOverManyShardsAllComeBackInOrder) {
  ManualClock clock;
  constexpr int kJobs = 5000;
  auto records = [&](const auto& fn) -> Status {
    for (int i = 0; i < kJobs; ++i) {
      // Due times repeat every 10 jobs: ties must come out in seq (push) order.
      const JobRecord r{.seq = static_cast<uint64_t>(i + 1), .id = "j" + std::to_string(i),
                        .topic = "t" + std::to_string(i % 3), .body = "b" + std::to_string(i),
                        .state = JobState::delayed,
                        .due = clock.now() + std::chrono::seconds(1 + i % 10), .ttr = 5s};
      if (Status st = fn(JobRecord(r)); !st.ok()) return st;
    }
    return Status();
  };
  EngineOptions opt;
  opt.clock = &clock;
  opt.shards = 4;
  auto q = open_engine(opt, std::make_unique<FlakyStore>(), records, Stats{});
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  for (int i = 0; i < kJobs; ++i) {
    Result<JobInfo> j = (*q)->get("j" + std::to_string(i));
    ASSERT_TRUE(j.ok()) << i;
    ASSERT_EQ(j->body, "b" + std::to_string(i));
  }
  clock.advance(1s);  // the jobs with i % 10 == 0 are due; per shard, in push order
  std::map<size_t, int> last_in_shard;
  int got = 0;
  for (Result<Delivery> d = (*q)->reserve("t0", 0ms); d.ok(); d = (*q)->reserve("t0", 0ms)) {
    const int i = std::stoi(d->id.substr(1));
    EXPECT_EQ(i % 30, 0) << d->id;
    const size_t shard = std::hash<std::string_view>()(d->id) % 4;
    if (last_in_shard.count(shard)) {
      EXPECT_GT(i, last_in_shard[shard]) << d->id;
    }
    last_in_shard[shard] = i;
    ++got;
  }
  EXPECT_EQ(got, (kJobs + 29) / 30);
}

// A record the engine refuses, deep in the store, fails the open with the record's own error,
// even though it is rebuilt on another thread than the one reading.
TEST(EngineRestore, ARefusedRecordFailsTheOpenNamingIt) {
  ManualClock clock;
  auto records = [&](const auto& fn) -> Status {
    for (int i = 0; i < 3000; ++i) {
      JobRecord r{.seq = static_cast<uint64_t>(i + 1), .id = "j" + std::to_string(i),
                  .topic = "t", .state = JobState::delayed, .due = clock.now(), .ttr = 5s};
      if (i == 2500) r.id = "j7";  // restored already
      if (Status st = fn(std::move(r)); !st.ok()) return st;
    }
    return Status();
  };
  EngineOptions opt;
  opt.clock = &clock;
  opt.shards = 2;
  auto q = open_engine(opt, std::make_unique<FlakyStore>(), records, Stats{});
  ASSERT_TRUE(q.is(Errc::corrupt)) << (q.ok() ? "opened" : q.status().to_string());
  EXPECT_NE(q.status().message().find("2501"), std::string::npos) << q.status().to_string();
}

}  // namespace
}  // namespace delayq::engine
