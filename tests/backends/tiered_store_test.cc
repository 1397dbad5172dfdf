// The durable store's disk tier (docs/tiered-store.md), on a ManualClock with a tiny horizon:
// far jobs live only on disk, are loaded into memory before they fall due and delivered on time
// and in due order with the near ones; an open loads only what falls within the horizon.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tiered_fixture.h"

namespace delayq {
namespace {

TEST_F(TieredStore, FarJobsStayOnDiskUntilTheHorizonReachesThemAndFireOnTime) {
  open(1min);
  for (int i = 0; i < 3; ++i) push("near-" + std::to_string(i), 10s);
  for (int i = 1; i <= 100; ++i) push("far-" + std::to_string(i), i * 1h);
  EXPECT_EQ(in_memory(), 3u) << "far jobs were loaded into memory";
  EXPECT_EQ(q_->stats().topics["t"].delayed, 103u);
  EXPECT_EQ(q_->stats().pushed, 103u);
  auto far = q_->get("far-7");
  ASSERT_TRUE(far.ok()) << far.status().to_string();
  EXPECT_EQ(far->state, JobState::delayed);
  EXPECT_EQ(far->body, "body of far-7");
  EXPECT_EQ(far->due, clock_.now() + 7h);

  clock_.advance(10s);
  EXPECT_EQ(drain(), (std::vector<std::string>{"near-0", "near-1", "near-2"}));
  for (int i = 1; i <= 100; ++i) {
    clock_.advance(1h - 1ns - (i == 1 ? 10s : 0s));
    EXPECT_TRUE(drain().empty()) << "far-" << i << " early";
    EXPECT_LE(in_memory(), 1u) << "more than the horizon's jobs in memory";
    clock_.advance(1ns);
    EXPECT_EQ(drain(), std::vector<std::string>{"far-" + std::to_string(i)});
  }
  EXPECT_EQ(in_memory(), 0u);
  EXPECT_TRUE(q_->stats().topics.empty());
}

TEST_F(TieredStore, DueOrderHoldsAcrossTheTiersTiesInPushOrder) {
  open(1min);
  // Due times in push order: 2h, 30s, 2h, 1h, 30s, 2h. After a jump of a day all six are
  // ready and come out by due time, equal ones in push order, whichever tier they were in.
  push("a", 2h);
  push("b", 30s);
  push("c", 2h);
  push("d", 1h);
  push("e", 30s);
  push("f", 2h);
  EXPECT_EQ(in_memory(), 2u);
  clock_.advance(24h);
  EXPECT_EQ(drain(), (std::vector<std::string>{"b", "e", "d", "a", "c", "f"}));
}

TEST_F(TieredStore, AReopenLoadsOnlyTheHorizonAndKeepsTheRestOnDisk) {
  open(1min);
  for (int i = 0; i < 10; ++i) push("near-" + std::to_string(i), 20s);
  for (int i = 0; i < 500; ++i) push("far-" + std::to_string(i), 2h + i * 1s, i % 2 ? "t" : "u");
  open(1min);
  EXPECT_EQ(in_memory(), 10u);
  Stats st = q_->stats();
  EXPECT_EQ(st.topics["t"].delayed, 260u);
  EXPECT_EQ(st.topics["u"].delayed, 250u);
  EXPECT_EQ(st.pushed, 510u);
  // New pushes after the reopen do not reuse a seq of a job left on disk (one would overwrite
  // the other in memory's family when both are loaded): every job comes back.
  for (int i = 0; i < 500; ++i) push("late-" + std::to_string(i), 2h + i * 1s + 500ms);
  clock_.advance(2h + 600s);
  EXPECT_EQ(in_memory(), 1010u);
  open(1min);
  EXPECT_EQ(in_memory(), 1010u);
  std::vector<std::string> t = drain("t");
  ASSERT_EQ(t.size(), 760u);
  EXPECT_EQ(t[0], "near-0");
  EXPECT_EQ(drain("u").size(), 250u);
}

TEST_F(TieredStore, DiskJobsOverdueAtOpenFireFirstInDueOrder) {
  open(1min);
  push("far-3", 3h);
  push("far-1", 1h);
  push("near", 30s);
  push("far-2", 2h);
  q_.reset();
  clock_.advance(5h);  // the store was closed meanwhile
  open(1min);
  EXPECT_EQ(drain(), (std::vector<std::string>{"near", "far-1", "far-2", "far-3"}));
}

// A lease that ran out while the store was closed is retried at lease end + wait, as if the store
// had stayed open: after the reopen, that retry comes out in its place in due order among the
// jobs that fell due meanwhile, not first (it was made ready as due at the reopen). On a store
// without a disk tier and on one whose horizon (100 ms) leaves the delayed jobs on disk.
TEST_F(TieredStore, ALeaseThatRanOutWhileClosedIsRetriedInDueOrderAfterAReopen) {
  for (const std::optional<Duration> horizon : {std::optional<Duration>(), std::optional<Duration>(100ms)}) {
    SCOPED_TRACE(horizon ? "with a disk tier" : "without a disk tier");
    const std::string name = horizon ? "tiered" : "plain";
    const auto reopen = [&] {
      q_.reset();
      auto q = open_named(name, horizon);
      ASSERT_TRUE(q.ok()) << q.status().to_string();
      q_ = std::move(q).value();
    };
    reopen();
    const TimePoint t0 = clock_.now();
    ASSERT_TRUE(q_->push({.topic = "t", .id = "leased", .ttr = 200ms,
                          .retry = RetryPolicy::fixed(200ms, 5)}).ok());
    ASSERT_EQ(q_->reserve("t", 0ms)->id, "leased");  // runs out at 200 ms, retry due at 400 ms
    push("delayed", 300ms);
    push("later", 500ms);
    q_.reset();
    clock_.advance(600ms);  // the store was closed meanwhile
    reopen();
    EXPECT_EQ(q_->get("leased")->due, t0 + 400ms);
    EXPECT_EQ(drain(), (std::vector<std::string>{"delayed", "leased", "later"}));
  }
}

// The horizon may change between opens, off and on again: every job stays, and with a shorter
// horizon far pushes go to disk again (the jobs loaded meanwhile stay in memory).
TEST_F(TieredStore, TheHorizonMayChangeBetweenOpens) {
  open(1min);
  push("far-1", 2h);
  push("far-2", 3h);
  EXPECT_EQ(in_memory(), 0u);
  open(Duration::max());  // every job in memory
  EXPECT_EQ(in_memory(), 2u);
  push("far-3", 4h);
  EXPECT_EQ(in_memory(), 3u);
  open(10min);
  EXPECT_EQ(in_memory(), 3u);
  push("far-4", 5h);
  EXPECT_EQ(in_memory(), 3u) << "a push beyond the new horizon went to memory";
  EXPECT_EQ(q_->stats().topics["t"].delayed, 4u);
  // Closed until every job is overdue: the next open must still find far-4 below the horizon
  // it starts from (the one stored when it was lowered, not the end of time stored before).
  q_.reset();
  clock_.advance(5h);
  open(1min);
  EXPECT_EQ(drain(), (std::vector<std::string>{"far-1", "far-2", "far-3", "far-4"}));
}

// Opened without a horizon (as the CLI and delayqd do), a store keeps the one it was last opened
// with: far jobs stay on disk and far pushes go there.
TEST_F(TieredStore, AnOpenWithoutAHorizonKeepsTheStoredOne) {
  open(1min);
  push("far-1", 2h);
  open(std::nullopt);
  EXPECT_EQ(in_memory(), 0u);
  push("far-2", 2h);
  EXPECT_EQ(in_memory(), 0u);
  EXPECT_EQ(engine::tier_view(*q_).horizon->due, clock_.now() + 1min);
  open(Duration::max());  // explicitly every job in memory: kept too
  EXPECT_EQ(in_memory(), 2u);
  open(std::nullopt);
  push("far-3", 3h);
  EXPECT_EQ(in_memory(), 3u);
}

// A read-only open of a store with a disk tier reads only what falls within the horizon; disk
// jobs are still found and counted, and the calls change only that view.
TEST_F(TieredStore, AReadOnlyOpenLoadsOnlyTheHorizonAndWritesNothing) {
  open(1min);
  push("near", 10s);
  for (int i = 0; i < 50; ++i) push("far-" + std::to_string(i), 2h + i * 1s);
  open(std::nullopt, /*read_only=*/true);
  EXPECT_EQ(in_memory(), 1u);
  EXPECT_EQ(q_->stats().topics["t"].delayed, 51u);
  EXPECT_EQ(q_->get("far-7")->body, "body of far-7");
  ASSERT_TRUE(q_->cancel("far-7").ok());
  EXPECT_TRUE(q_->get("far-7").is(Errc::not_found));
  push("far-new", 5h);
  clock_.advance(2h + 100s);
  EXPECT_EQ(drain().size(), 50u);  // near, and far-0 to far-49 but far-7
  open(std::nullopt);              // the store as it was, every job overdue now
  EXPECT_EQ(in_memory(), 51u);
  EXPECT_EQ(q_->get("far-7")->state, JobState::ready);
  EXPECT_TRUE(q_->get("far-new").is(Errc::not_found));
  EXPECT_EQ(q_->stats().pushed, 51u);
}

// A memory budget holds back what a refill loads ahead of time, but never what falls due within
// the minimum lead (an eighth of the horizon, refilled up to a quarter): lateness wins.
TEST_F(TieredStore, AMemoryBudgetHoldsRefillsBackButNotPastTheMinimumLead) {
  memory_jobs_ = 50;
  open(80min);
  const TimePoint t0 = clock_.now();
  // A burst of 1000 jobs, due in [t0 + 100 min, t0 + 110 min): on disk.
  for (int i = 0; i < 1000; ++i) push("b" + std::to_string(1000 + i), 100min + i * 600ms);
  EXPECT_EQ(in_memory(), 0u);
  clock_.set(t0 + 45min);  // the refill's first step would load them all: the budget, 50
  EXPECT_TRUE(drain().empty());
  EXPECT_EQ(in_memory(), 50u);
  clock_.set(t0 + 89min);
  EXPECT_EQ(in_memory(), 50u) << "loaded ahead of time beyond the budget";
  clock_.set(t0 + 95min);  // within the minimum lead of the horizon: every job due by 115 min
  EXPECT_EQ(in_memory(), 1000u);
  clock_.set(t0 + 110min);
  std::vector<std::string> got = drain();
  ASSERT_EQ(got.size(), 1000u);
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end())) << "not in due order";
}

TEST_F(TieredStore, AHorizonBelowOneMillisecondIsRefused) {
  StoreOptions o;
  o.dir = dir_.path() + "/store";
  o.horizon = 999us;
  auto q = open_store(o);
  EXPECT_TRUE(q.is(Errc::invalid_argument)) << q.status().to_string();
  EXPECT_NE(q.status().message().find("horizon"), std::string::npos);
}

}  // namespace
}  // namespace delayq
