// Damage in the disk tier (docs/durability.md, "Damage on disk"): a record of family `far` that
// does not decode, or that no call could have written, is refused as corrupt, naming it, when a
// lookup or a refill meets it; with StoreOptions::tolerant it is reported and skipped, and every
// other job is served.
#include <gtest/gtest.h>

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tiered_fixture.h"
#include "wal/codec.h"
#include "wal/far_codec.h"

namespace delayq {
namespace {

class TieredDamage : public TieredStore {
 protected:
  // Pushes far-0 .. far-9 (due in 2 h and on), closes the store, and replaces the record of
  // far-3 with `damage(record)`.
  void damage_far_3(const std::function<std::string(engine::JobRecord)>& damage) {
    open(1min);
    for (int i = 0; i < 10; ++i) push("far-" + std::to_string(i), 2h + i * 1s);
    q_.reset();
    with_raw([&](rocksdb::DB& db, const Families& f) {
      rocksdb::ColumnFamilyHandle* far = f.at(wal::kFarFamily);
      std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions(), far));
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        auto r = wal::decode_far_record(it->key().ToString(), it->value().ToString());
        ASSERT_TRUE(r.ok()) << r.status().to_string();
        if (r->id != "far-3") continue;
        ASSERT_TRUE(db.Put(rocksdb::WriteOptions(), far, it->key(), damage(*r)).ok());
        return;
      }
      FAIL() << "far-3 is not in family 'far'";
    });
  }
  void open_tolerant() {
    q_.reset();
    StoreOptions o;
    o.dir = dir_.path() + "/store";
    o.sync = Sync::none;
    o.engine.clock = &clock_;
    o.tolerant = true;
    o.on_skip = [this](const std::string& why) { skipped_.push_back(why); };
    auto q = open_store(o);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    q_ = std::move(q).value();
  }
  std::vector<std::string> skipped_;
};

std::string garbage(const engine::JobRecord&) {
  return "\x01garbage";
}
// Decodes, but no call could have written it: a topic of 0 bytes.
std::string no_topic(engine::JobRecord r) {
  r.topic.clear();
  return wal::encode_record(r);
}

TEST_F(TieredDamage, AnUnreadableRecordIsCorruptWhenMetAndTheRefillStopsTheQueue) {
  damage_far_3(garbage);
  open(std::nullopt);
  EXPECT_TRUE(q_->get("far-3").is(Errc::corrupt));
  EXPECT_TRUE(q_->get("far-2").ok());
  clock_.advance(3h);  // the refill meets it
  const Status h = q_->health();
  EXPECT_TRUE(h.is(Errc::corrupt)) << h.to_string();
  EXPECT_NE(h.message().find("family 'far'"), std::string::npos) << h.message();
}

TEST_F(TieredDamage, TolerantSkipsAnUnreadableRecordAndServesTheRest) {
  damage_far_3(garbage);
  open_tolerant();
  EXPECT_TRUE(q_->get("far-3").is(Errc::not_found));
  ASSERT_FALSE(skipped_.empty());
  EXPECT_NE(skipped_[0].find("far-3"), std::string::npos) << skipped_[0];
  clock_.advance(3h);
  EXPECT_TRUE(q_->health().ok()) << q_->health().to_string();
  std::vector<std::string> got = drain();
  EXPECT_EQ(got.size(), 9u);
  EXPECT_EQ(std::count(got.begin(), got.end(), "far-3"), 0);
}

TEST_F(TieredDamage, ARecordNoCallCouldWriteIsDroppedWhenTolerantElseCorrupt) {
  damage_far_3(no_topic);
  open(std::nullopt);
  clock_.advance(3h);
  EXPECT_TRUE(q_->health().is(Errc::corrupt)) << q_->health().to_string();
  open_tolerant();
  EXPECT_TRUE(q_->health().ok()) << q_->health().to_string();
  EXPECT_EQ(drain().size(), 9u);
  ASSERT_FALSE(skipped_.empty());
  EXPECT_NE(skipped_.back().find("dropped from the disk tier"), std::string::npos)
      << skipped_.back();
  open(std::nullopt);  // dropped for good
  EXPECT_TRUE(q_->get("far-3").is(Errc::not_found));
}

// Browsing reads the disk jobs of a topic through the per-topic index (wal/far_index.h): a record
// it lists that does not decode, or that is gone, is corrupt, naming it; tolerant, it is reported
// and the page goes on without it.
TEST_F(TieredDamage, BrowsingMeetsAnUnreadableOrMissingRecordAsCorruptOrSkipsItWhenTolerant) {
  damage_far_3(garbage);
  std::string far_5;
  with_raw([&](rocksdb::DB& db, const Families& f) {
    std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions(), f.at("far")));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      auto r = wal::decode_far_record(it->key().ToString(), it->value().ToString());
      if (r.ok() && r->id == "far-5") far_5 = it->key().ToString();
    }
    ASSERT_FALSE(far_5.empty());
    ASSERT_TRUE(db.Delete(rocksdb::WriteOptions(), f.at("far"), far_5).ok());
  });
  open(std::nullopt);
  auto page = q_->list_jobs("t", JobState::delayed, 100);
  ASSERT_TRUE(page.is(Errc::corrupt)) << page.status().to_string();
  EXPECT_NE(page.status().message().find("family 'far'"), std::string::npos)
      << page.status().message();

  open_tolerant();
  page = q_->list_jobs("t", JobState::delayed, 100);
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  std::vector<std::string> ids;
  for (const JobInfo& j : page->jobs) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"far-0", "far-1", "far-2", "far-4", "far-6", "far-7",
                                           "far-8", "far-9"}));
  const auto said = [&](const std::string& what) {
    return std::any_of(skipped_.begin(), skipped_.end(),
                       [&](const std::string& s) { return s.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(said("which holds no record")) << ::testing::PrintToString(skipped_);
  EXPECT_TRUE(said("does not decode")) << ::testing::PrintToString(skipped_);
}

// A store whose disk tier predates the index (format 3, no family "far-topic") with an unreadable
// record: the open that builds the index leaves that record out and goes on; pages list the
// other jobs, and a lookup still meets the record as corrupt.
TEST_F(TieredDamage, AnUnreadableRecordGetsNoIndexKeyWhenTheIndexIsBuilt) {
  damage_far_3(garbage);
  with_raw([](rocksdb::DB& db, const Families& f) {
    ASSERT_TRUE(db.DropColumnFamily(f.at(wal::kFarTopicFamily)).ok());
    ASSERT_TRUE(db.Put(rocksdb::WriteOptions(), f.at("meta"), "format", "3").ok());
  });
  open(std::nullopt);
  auto page = q_->list_jobs("t", JobState::delayed, 100);
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  EXPECT_EQ(page->jobs.size(), 9u);
  EXPECT_TRUE(q_->get("far-3").is(Errc::corrupt));
  q_.reset();
  EXPECT_EQ(raw_keys(wal::kFarTopicFamily).size(), 9u);
}

}  // namespace
}  // namespace delayq
