// Browsing a tiered store's delayed jobs (docs/semantics.md, "Browsing") while pushes race refills:
// producer threads push jobs due around the horizon as the ManualClock moves in small steps, so
// that refills move jobs from disk into memory and batches are still queued for the disk
// (Sync::always) while a lister pages through the topic. Every listing must be in key order with
// no job twice, and must hold every job that stays on disk all along.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tiered_fixture.h"

namespace delayq {
namespace {

class TieredBrowse : public TieredStore {
 protected:
  void run(size_t shards) {
    constexpr Duration kHorizon = 1s;
    constexpr int kProducers = 2, kJobs = 250, kStaying = 60;
    open_for_race(shards, kHorizon);
    if (HasFatalFailure()) return;
    // Jobs that stay on disk all along (due in an hour), among which the racing ones come and go.
    std::set<std::string> staying;
    for (int i = 0; i < kStaying; ++i) {
      staying.insert("stay-" + std::to_string(i));
      push("stay-" + std::to_string(i), 1h + std::chrono::milliseconds(i * 10));
    }

    std::atomic<int> producing{kProducers};
    std::vector<std::thread> threads = race_pushes(kProducers, kJobs, producing);
    std::atomic<int> listings{0};
    std::thread lister([&] {
      do {
        std::set<std::string> seen;
        TimePoint last{};
        std::string cursor;
        for (int pages = 0;; ++pages) {
          auto page = q_->list_jobs("t", JobState::delayed, 7, cursor);
          ASSERT_TRUE(page.ok()) << page.status().to_string();
          for (const JobInfo& j : page->jobs) {
            EXPECT_TRUE(seen.insert(j.id).second) << j.id << " listed twice";
            EXPECT_LE(last, j.due) << j.id << " out of order";
            last = j.due;
          }
          if (page->cursor.empty()) break;
          ASSERT_LT(pages, 10000) << "no end";
          cursor = page->cursor;
        }
        for (const std::string& id : staying) EXPECT_TRUE(seen.contains(id)) << id << " missed";
        listings.fetch_add(1);
      } while (producing.load() > 0);
    });
    while (producing.load() > 0) {
      clock_.advance(kHorizon / 10);
      std::this_thread::yield();
    }
    for (auto& t : threads) t.join();
    lister.join();
    EXPECT_GT(listings.load(), 0);
    EXPECT_TRUE(q_->health().ok()) << q_->health().to_string();
  }
};

TEST_F(TieredBrowse, ListingsBesidePushesAndRefillsHaveEveryStayingJobOnceInOrder) {
  run(1);
}
TEST_F(TieredBrowse, OnFourShardsToo) {
  run(4);
}

}  // namespace
}  // namespace delayq
