// Browsing a tiered store's delayed jobs (docs/semantics.md, "Browsing") while pushes race refills:
// producer threads push jobs due around the horizon as the ManualClock moves in small steps, so
// that refills move jobs from disk into memory and batches are still queued for the disk
// (Sync::always) while a lister pages through the topic. Every listing must be in key order with
// no job twice, and must hold every job that stays on disk all along.
//
// What a page costs (docs/tiered-store.md, "Browsing"): a topic's few disk jobs among 100 000 of
// another topic come in full pages, each reading RocksDB (seeks, iterator steps and lookups, as
// its statistics count them) about twice per job of the page, whatever the other topic holds; a
// store whose disk tier predates the per-topic index is browsed by the bounded scan when opened
// read-only, and gets the index when opened for writing.
#include <gtest/gtest.h>

#include <rocksdb/statistics.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tiered_fixture.h"
#include "wal/store_testing.h"

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

class TieredBrowseCost : public TieredStore {
 protected:
  static constexpr size_t kPage = 10;
  // Reads of RocksDB so far: seeks, iterator steps and point lookups.
  uint64_t reads() const {
    return stats_->getTickerCount(rocksdb::NUMBER_DB_SEEK) +
           stats_->getTickerCount(rocksdb::NUMBER_DB_NEXT) +
           stats_->getTickerCount(rocksdb::NUMBER_KEYS_READ);
  }
  void open_counted(bool read_only = false) {
    q_.reset();
    StoreOptions o;
    o.dir = dir_.path() + "/store";
    o.sync = Sync::none;
    o.read_only = read_only;
    o.horizon = 1min;
    o.engine.clock = &clock_;
    auto q = wal::open_store_on(o, nullptr, [this](rocksdb::DBOptions& d, auto&) {
      d.statistics = stats_;
    });
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    q_ = std::move(q).value();
  }
  // 100 000 disk jobs of topic "b", due 10 ms apart from an hour on, and among them 25 of "a",
  // one every 4000 of "b"'s; and 3 of "a" in memory. Returns "a"'s ids in due order.
  std::vector<std::string> fill() {
    std::vector<std::string> a;
    for (int i = 0; i < 3; ++i) {
      a.push_back("a-mem-" + std::to_string(i));
      push(a.back(), 10s + i * 1s, "a");
    }
    std::vector<JobSpec> batch;
    for (int i = 0; i < 100000; ++i) {
      batch.push_back({.topic = "b", .id = "b" + std::to_string(i), .delay = 1h + i * 10ms});
      if (i % 4000 == 1234) {
        a.push_back("a-" + std::to_string(i));
        batch.push_back({.topic = "a", .id = a.back(), .delay = 1h + i * 10ms + 5ms});
      }
      if (batch.size() >= 1000) {
        for (const auto& r : q_->push_batch(std::move(batch))) EXPECT_TRUE(r.ok());
        batch.clear();
      }
    }
    for (const auto& r : q_->push_batch(std::move(batch))) EXPECT_TRUE(r.ok());
    return a;
  }
  struct Paged {
    std::vector<std::string> ids;
    std::vector<size_t> sizes;
    uint64_t most_reads = 0;  // the most one page read
  };
  Paged list(const std::string& topic) {
    Paged out;
    std::string cursor;
    TimePoint last{};
    for (int pages = 0; pages < 10000; ++pages) {
      const uint64_t before = reads();
      auto page = q_->list_jobs(topic, JobState::delayed, kPage, cursor);
      out.most_reads = std::max(out.most_reads, reads() - before);
      EXPECT_TRUE(page.ok()) << page.status().to_string();
      if (!page.ok()) break;
      out.sizes.push_back(page->jobs.size());
      for (const JobInfo& j : page->jobs) {
        EXPECT_LE(last, j.due) << j.id << " out of order";
        last = j.due;
        out.ids.push_back(j.id);
      }
      if (page->cursor.empty()) break;
      cursor = page->cursor;
    }
    return out;
  }
  std::shared_ptr<rocksdb::Statistics> stats_ = rocksdb::CreateDBStatistics();
};

TEST_F(TieredBrowseCost, AFewDiskJobsAmongManyOthersComeInFullPagesThatReadThePage) {
  open_counted();
  const std::vector<std::string> a = fill();
  const Paged got = list("a");
  EXPECT_EQ(got.ids, a);
  ASSERT_EQ(got.sizes.size(), 3u);  // 28 jobs: 10, 10, 8
  EXPECT_EQ(got.sizes[0], kPage);
  EXPECT_EQ(got.sizes[1], kPage);
  // Per job of the page a step of the index and a lookup of its record, for the page and the
  // one more it reads to know whether more follow, and one seek.
  EXPECT_LE(got.most_reads, 2 * (kPage + 1) + 1);
  EXPECT_GT(got.most_reads, 0u) << "the counter counts nothing";
  q_.reset();
  expect_index_in_step();
}

// A store whose disk tier predates the index (format 3, no family "far-topic"): read-only it is
// browsed by the bounded scan of every topic's disk jobs (pages that end early, reading
// thousands of records); opened for writing it gets the index, and the pages are the cheap ones.
TEST_F(TieredBrowseCost, AStoreFromBeforeTheIndexIsScannedReadOnlyAndIndexedWhenOpened) {
  open_counted();
  const std::vector<std::string> a = fill();
  q_.reset();
  with_raw([](rocksdb::DB& db, const Families& f) {
    ASSERT_TRUE(db.DropColumnFamily(f.at(wal::kFarTopicFamily)).ok());
    ASSERT_TRUE(db.Put(rocksdb::WriteOptions(), f.at("meta"), "format", "3").ok());
  });
  ASSERT_TRUE(raw_keys(wal::kFarTopicFamily).empty());

  open_counted(/*read_only=*/true);
  const Paged scanned = list("a");
  EXPECT_EQ(scanned.ids, a);
  EXPECT_GE(scanned.most_reads, 4096u);
  EXPECT_GT(scanned.sizes.size(), 3u);  // pages that ended where the read stopped

  open_counted();
  const Paged indexed = list("a");
  EXPECT_EQ(indexed.ids, a);
  EXPECT_EQ(indexed.sizes, (std::vector<size_t>{kPage, kPage, 8}));
  EXPECT_LE(indexed.most_reads, 2 * (kPage + 1) + 1);
  q_.reset();
  expect_index_in_step();
  with_raw([](rocksdb::DB& db, const Families& f) {
    std::string format;
    ASSERT_TRUE(db.Get(rocksdb::ReadOptions(), f.at("meta"), "format", &format).ok());
    EXPECT_EQ(format, "4");
  });
}

// A build of the index that a crash cut short leaves format 3 and part of "far-topic" (or keys an
// older build let go stale): the next open for writing builds it again whole.
TEST_F(TieredBrowseCost, AnIndexLeftHalfBuiltIsBuiltAgainWhole) {
  open(1min);
  for (int i = 0; i < 20; ++i) push("far-" + std::to_string(i), 2h + i * 1s, i % 2 ? "a" : "b");
  q_.reset();
  with_raw([](rocksdb::DB& db, const Families& f) {
    rocksdb::ColumnFamilyHandle* index = f.at(wal::kFarTopicFamily);
    std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions(), index));
    it->SeekToFirst();
    ASSERT_TRUE(it->Valid());
    ASSERT_TRUE(db.Delete(rocksdb::WriteOptions(), index, it->key()).ok());
    const std::string stale = wal::far_topic_key("a", engine::FarKey{TimePoint(3h), 99999});
    ASSERT_TRUE(db.Put(rocksdb::WriteOptions(), index, stale, "").ok());
    ASSERT_TRUE(db.Put(rocksdb::WriteOptions(), f.at("meta"), "format", "3").ok());
  });
  open(1min);
  std::vector<std::string> a;
  auto page = q_->list_jobs("a", JobState::delayed, 100);
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  for (const JobInfo& j : page->jobs) a.push_back(j.id);
  EXPECT_EQ(a.size(), 10u);
  q_.reset();
  expect_index_in_step();
}

TEST_F(TieredBrowse, ListingsBesidePushesAndRefillsHaveEveryStayingJobOnceInOrder) {
  run(1);
}
TEST_F(TieredBrowse, OnFourShardsToo) {
  run(4);
}

}  // namespace
}  // namespace delayq
