// The journal's group commit (wal/commit_pipeline.h) on a fake sink that records every write and
// sync, can hold a write in flight, and can fail one: call order, grouping, the sync rules of
// each mode, the background syncer, the writes at close, and what a failed write does.
#include "wal/commit_pipeline.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace delayq::wal {
namespace {

using namespace std::chrono_literals;

// Long enough that no machine, however busy, takes it to run the syncer once: a test that waits
// for an event waits this long before it fails.
constexpr auto kPatience = 60s;
// A syncer that never wakes during a test.
constexpr auto kNever = std::chrono::hours(1);

class FakeSink final : public CommitSink {
 public:
  struct Write {
    std::vector<uint64_t> seqs;
    std::vector<std::optional<std::string>> records;
    std::optional<Stats> totals;
    std::optional<engine::Counters> counters;
    size_t appends = 0;
    bool sync = false;
    uint32_t min_format = 0;
    std::vector<std::pair<std::string, std::optional<std::string>>> meta;
  };

  Status write(const Group& group, bool sync) override {
    std::unique_lock l(mu_);
    const size_t n = ++started_;
    cv_.notify_all();
    cv_.wait(l, [&] { return !held_; });
    if (n == fail_write_)
      return Status(Errc::io_error, "the fake disk failed write " + std::to_string(n));
    Write w{.totals = group.totals,
            .counters = group.counters,
            .appends = group.appends,
            .sync = sync,
            .min_format = group.min_format,
            .meta = group.meta};
    for (const EncodedChange& c : group.changes) {
      w.seqs.push_back(c.seq);
      w.records.push_back(c.record);
    }
    writes_.push_back(std::move(w));
    cv_.notify_all();
    return Status();
  }

  Status sync() override {
    std::lock_guard l(mu_);
    ++syncs_;
    cv_.notify_all();
    return Status();
  }

  // Writes from now on wait in the sink until release().
  void hold() { set_held(true); }
  void release() { set_held(false); }
  // The n-th write (counting from 1) fails.
  void fail_write(size_t n) {
    std::lock_guard l(mu_);
    fail_write_ = n;
  }
  // Returns once n writes have reached the sink (held or not).
  bool wait_started(size_t n) {
    return wait_for([&] { return started_ >= n; });
  }
  bool wait_syncs(size_t n) {
    return wait_for([&] { return syncs_ >= n; });
  }

  std::vector<Write> writes() {
    std::lock_guard l(mu_);
    return writes_;
  }
  size_t syncs() {
    std::lock_guard l(mu_);
    return syncs_;
  }

 private:
  void set_held(bool held) {
    std::lock_guard l(mu_);
    held_ = held;
    cv_.notify_all();
  }
  template <class Pred>
  bool wait_for(Pred pred) {
    std::unique_lock l(mu_);
    return cv_.wait_for(l, kPatience, pred);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  size_t started_ = 0;
  size_t fail_write_ = 0;
  size_t syncs_ = 0;
  std::vector<Write> writes_;
};

SyncPolicy policy(Sync mode, uint32_t batch_ops = 1000,
                  std::chrono::nanoseconds interval = kNever) {
  return {.mode = mode, .batch_ops = batch_ops, .interval = interval};
}

std::vector<EncodedChange> put(uint64_t seq) {
  return {{seq, "record " + std::to_string(seq)}};
}

// Appends one put of `seq` and waits for it.
Status commit(CommitPipeline& p, uint64_t seq) {
  Result<uint64_t> t = p.append(put(seq), {}, {});
  return t ? p.sync_to(*t) : t.status();
}

std::vector<bool> sync_flags(FakeSink& sink) {
  std::vector<bool> out;
  for (const FakeSink::Write& w : sink.writes()) out.push_back(w.sync);
  return out;
}

TEST(CommitPipeline, AppendsAreWrittenInCallOrderWithRisingTickets) {
  FakeSink sink;
  CommitPipeline p(sink, policy(Sync::none));
  EXPECT_EQ(*p.append({{1, "one"}, {2, std::nullopt}}, {}, {}), 1u);
  EXPECT_EQ(*p.append({}, {}, {}), 0u);  // nothing to queue: no ticket
  EXPECT_EQ(*p.append({{3, "three"}}, {}, {}), 2u);
  EXPECT_EQ(*p.append({{2, "two again"}}, {}, {}), 3u);
  ASSERT_TRUE(p.sync_to(3).ok());
  ASSERT_TRUE(p.sync_to(1).ok());  // written already: no write of its own
  ASSERT_TRUE(p.sync_to(0).ok());
  const std::vector<FakeSink::Write> w = sink.writes();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].seqs, (std::vector<uint64_t>{1, 2, 3, 2}));
  EXPECT_EQ(w[0].records,
            (std::vector<std::optional<std::string>>{"one", std::nullopt, "three", "two again"}));
  EXPECT_EQ(w[0].appends, 3u);
}

TEST(CommitPipeline, CallsArrivingDuringAWriteShareTheNextOne) {
  FakeSink sink;
  CommitPipeline p(sink, policy(Sync::always));
  sink.hold();
  const uint64_t first = *p.append(put(1), {}, {});
  std::thread leader([&] { EXPECT_TRUE(p.sync_to(first).ok()); });
  ASSERT_TRUE(sink.wait_started(1));
  // While the first write is in flight, four more calls queue and wait.
  std::vector<std::thread> waiters;
  for (uint64_t seq = 2; seq <= 5; ++seq) {
    const uint64_t t = *p.append(put(seq), {}, {});
    waiters.emplace_back([&p, t] { EXPECT_TRUE(p.sync_to(t).ok()); });
  }
  sink.release();
  leader.join();
  for (std::thread& t : waiters) t.join();
  const std::vector<FakeSink::Write> w = sink.writes();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].seqs, std::vector<uint64_t>{1});
  EXPECT_EQ(w[1].seqs, (std::vector<uint64_t>{2, 3, 4, 5}));
  EXPECT_EQ(w[1].appends, 4u);
}

TEST(CommitPipeline, AlwaysSyncsEveryWrite) {
  FakeSink sink;
  {
    CommitPipeline p(sink, policy(Sync::always));
    for (uint64_t seq = 1; seq <= 3; ++seq) ASSERT_TRUE(commit(p, seq).ok());
  }
  EXPECT_EQ(sync_flags(sink), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(sink.syncs(), 0u);  // no background syncer
}

TEST(CommitPipeline, BatchSyncsTheWriteThatCompletesBatchOps) {
  FakeSink sink;
  {
    CommitPipeline p(sink, policy(Sync::batch, 3));
    for (uint64_t seq = 1; seq <= 7; ++seq) ASSERT_TRUE(commit(p, seq).ok());
    EXPECT_EQ(sync_flags(sink), (std::vector<bool>{false, false, true, false, false, true, false}));
    EXPECT_EQ(sink.syncs(), 0u);
  }
  // Closing syncs the last write, which was not.
  EXPECT_EQ(sink.syncs(), 1u);
}

TEST(CommitPipeline, BatchAndPeriodicSyncInTheBackground) {
  for (Sync mode : {Sync::batch, Sync::periodic}) {
    SCOPED_TRACE(to_string(mode));
    FakeSink sink;
    CommitPipeline p(sink, policy(mode, 1000, 1ms));
    ASSERT_TRUE(commit(p, 1).ok());
    EXPECT_TRUE(sink.wait_syncs(1));
    EXPECT_EQ(sync_flags(sink), std::vector<bool>{false});
  }
}

TEST(CommitPipeline, PeriodicAndNoneNeverSyncAWrite) {
  for (Sync mode : {Sync::periodic, Sync::none}) {
    SCOPED_TRACE(to_string(mode));
    FakeSink sink;
    CommitPipeline p(sink, policy(mode, 1));
    for (uint64_t seq = 1; seq <= 3; ++seq) ASSERT_TRUE(commit(p, seq).ok());
    EXPECT_EQ(sync_flags(sink), (std::vector<bool>{false, false, false}));
  }
}

TEST(CommitPipeline, AppendsNeverWaitedForAreWrittenAtClose) {
  for (Sync mode : {Sync::always, Sync::batch, Sync::periodic, Sync::none}) {
    SCOPED_TRACE(to_string(mode));
    FakeSink sink;
    {
      CommitPipeline p(sink, policy(mode));
      ASSERT_TRUE(p.append(put(1), {}, {}).ok());
      ASSERT_TRUE(p.append(put(2), {}, {}).ok());
      EXPECT_TRUE(sink.writes().empty());
    }
    const std::vector<FakeSink::Write> w = sink.writes();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].seqs, (std::vector<uint64_t>{1, 2}));
    EXPECT_EQ(w[0].sync, mode != Sync::none);
  }
}

TEST(CommitPipeline, TotalsAddUpAndTheHighestCountersTravelWithTheirGroup) {
  FakeSink sink;
  CommitPipeline p(sink, policy(Sync::none));
  p.set_totals(Stats{.pushed = 10, .acked = 4});
  p.set_counters({.fences = 5, .next_id = 5});
  ASSERT_TRUE(p.append(put(1), Stats{.pushed = 1}, {.fences = 7, .next_id = 3}).ok());
  ASSERT_TRUE(p.sync_to(*p.append(put(2), Stats{.pushed = 1}, {.fences = 6, .next_id = 9})).ok());
  // Counters that do not rise are not written again; totals are, with every group.
  ASSERT_TRUE(p.sync_to(*p.append(put(3), Stats{.acked = 1}, {.fences = 1, .next_id = 1})).ok());
  const std::vector<FakeSink::Write> w = sink.writes();
  ASSERT_EQ(w.size(), 2u);
  ASSERT_TRUE(w[0].totals && w[0].counters);
  EXPECT_EQ(w[0].totals->pushed, 12u);
  EXPECT_EQ(w[0].totals->acked, 4u);
  EXPECT_EQ(*w[0].counters, (engine::Counters{.fences = 7, .next_id = 9}));
  ASSERT_TRUE(w[1].totals);
  EXPECT_EQ(w[1].totals->pushed, 12u);
  EXPECT_EQ(w[1].totals->acked, 5u);
  EXPECT_FALSE(w[1].counters);
}

// The store format a group's records need (a record of version 2: format 3) travels with the
// group that holds them, as the highest of its appends', so that the sink raises meta/format in
// that very write; the next group starts again from none.
TEST(CommitPipeline, TheFormatTheRecordsNeedTravelsWithTheirGroup) {
  FakeSink sink;
  CommitPipeline p(sink, policy(Sync::none));
  ASSERT_TRUE(p.append(put(1), {}, {}).ok());
  ASSERT_TRUE(p.append(put(2), {}, {}, {}, 3).ok());
  ASSERT_TRUE(p.sync_to(*p.append(put(3), {}, {})).ok());
  // Two more groups: the pipeline reuses the first group's storage for the third.
  ASSERT_TRUE(p.sync_to(*p.append(put(4), {}, {})).ok());
  ASSERT_TRUE(p.sync_to(*p.append(put(5), {}, {})).ok());
  const std::vector<FakeSink::Write> w = sink.writes();
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].seqs, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(w[0].min_format, 3u);
  EXPECT_EQ(w[1].min_format, 0u);
  EXPECT_EQ(w[2].min_format, 0u);
}

// A schedule's record (meta) is queued under the same lock as the job changes of its append, so
// it is in the group, and so the RocksDB write, that holds them: a crash keeps both or neither.
// An append of meta alone is a call of its own; a later group does not repeat earlier meta.
TEST(CommitPipeline, MetaTravelsWithTheChangesOfItsAppend) {
  FakeSink sink;
  CommitPipeline p(sink, policy(Sync::none));
  ASSERT_TRUE(p.append(put(1), {}, {}, {}, 0, {{"schedule/a", "A1"}}).ok());
  ASSERT_TRUE(p.sync_to(*p.append(put(2), {}, {}, {}, 0, {{"schedule/b", "B1"}})).ok());
  Result<uint64_t> alone = p.append({}, {}, {}, {}, 0, {{"schedule/a", std::nullopt}});
  ASSERT_TRUE(alone.ok());
  EXPECT_NE(*alone, 0u);
  ASSERT_TRUE(p.sync_to(*alone).ok());
  ASSERT_TRUE(p.sync_to(*p.append(put(3), {}, {})).ok());
  const std::vector<FakeSink::Write> w = sink.writes();
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].seqs, (std::vector<uint64_t>{1, 2}));
  using Meta = std::vector<std::pair<std::string, std::optional<std::string>>>;
  EXPECT_EQ(w[0].meta, (Meta{{"schedule/a", "A1"}, {"schedule/b", "B1"}}));
  EXPECT_TRUE(w[1].seqs.empty());
  EXPECT_EQ(w[1].meta, (Meta{{"schedule/a", std::nullopt}}));
  EXPECT_EQ(w[2].seqs, (std::vector<uint64_t>{3}));
  EXPECT_TRUE(w[2].meta.empty());
}

TEST(CommitPipeline, AFailedWriteFailsEveryWaiterOfItsGroupAndEveryLaterCall) {
  FakeSink sink;
  sink.fail_write(2);
  CommitPipeline p(sink, policy(Sync::always));
  // The first write is held while two calls queue behind it: they are the second write's group.
  sink.hold();
  const uint64_t first = *p.append(put(1), {}, {});
  std::thread leader([&] { EXPECT_TRUE(p.sync_to(first).ok()); });
  ASSERT_TRUE(sink.wait_started(1));
  std::vector<Status> failed(2);
  std::vector<std::thread> waiters;
  for (uint64_t seq = 2; seq <= 3; ++seq) {
    const uint64_t t = *p.append(put(seq), {}, {});
    waiters.emplace_back([&p, &failed, t] { failed[t - 2] = p.sync_to(t); });
  }
  sink.release();
  leader.join();
  for (std::thread& t : waiters) t.join();
  for (const Status& s : failed) {
    EXPECT_TRUE(s.is(Errc::io_error)) << s.to_string();
    EXPECT_EQ(s.message(), "the fake disk failed write 2");
  }
  // Every later call fails with the same error; what was written before stays written.
  Result<uint64_t> later = p.append(put(4), {}, {});
  EXPECT_TRUE(later.is(Errc::io_error)) << later.status().to_string();
  EXPECT_EQ(later.status().message(), "the fake disk failed write 2");
  EXPECT_TRUE(p.sync_to(first).ok());
  EXPECT_TRUE(p.status().is(Errc::io_error));
  p.close();
  EXPECT_EQ(sink.writes().size(), 1u);  // nothing written at close after the failure
}

}  // namespace
}  // namespace delayq::wal
