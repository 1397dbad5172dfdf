// Upgrades and the on-disk format (docs/production.md, "Upgrades"): a store written by an older
// delayq of the same format (before the totals and counters were kept) opens and keeps its
// jobs; a store written by a newer delayq (a higher format version) is refused by the library,
// delayqd and the CLI with a message naming both versions, and the refused open leaves every
// stored byte as it was, so that the newer delayq (or a rollback to it) still finds its store.
#include <gtest/gtest.h>

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "delayq/store.h"
#include "wal/codec.h"
#include "wal/journal.h"

namespace {

using namespace delayq::testing;
using delayq::Errc;

// Every family's keys and values, read with RocksDB directly (or a Put / Delete in `family`).
class RawStore {
 public:
  explicit RawStore(std::string dir) : dir_(std::move(dir)) {}

  std::map<std::string, std::string> contents() {
    std::map<std::string, std::string> all;
    with_db([&](rocksdb::DB& db, const std::vector<rocksdb::ColumnFamilyHandle*>& handles) {
      for (rocksdb::ColumnFamilyHandle* h : handles) {
        std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions(), h));
        for (it->SeekToFirst(); it->Valid(); it->Next())
          all[h->GetName() + "/" + it->key().ToString()] = it->value().ToString();
      }
    });
    return all;
  }
  void put(const std::string& family, const std::string& key, const std::string* value) {
    with_db([&](rocksdb::DB& db, const std::vector<rocksdb::ColumnFamilyHandle*>& handles) {
      rocksdb::ColumnFamilyHandle* h = family == "jobs" ? handles[1] : handles[2];
      const rocksdb::Status s = value ? db.Put(rocksdb::WriteOptions(), h, key, *value)
                                      : db.Delete(rocksdb::WriteOptions(), h, key);
      EXPECT_TRUE(s.ok()) << s.ToString();
    });
  }

 private:
  template <typename Fn>
  void with_db(Fn fn) {
    std::vector<rocksdb::ColumnFamilyDescriptor> fams = {
        {rocksdb::kDefaultColumnFamilyName, {}}, {"jobs", {}}, {"meta", {}}};
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* db = nullptr;
    const rocksdb::Status s = rocksdb::DB::Open(rocksdb::DBOptions(), dir_, fams, &handles, &db);
    ASSERT_TRUE(s.ok()) << s.ToString();
    fn(*db, handles);
    for (auto* h : handles) (void)db->DestroyColumnFamilyHandle(h);
    delete db;
  }
  std::string dir_;
};

void make_store(const std::string& dir) {
  auto q = delayq::open_store({.dir = dir}).value();
  ASSERT_TRUE(
      q->push({.topic = "t", .id = "kept", .delay = std::chrono::hours(1), .body = "b"}).ok());
  ASSERT_TRUE(q->push({.topic = "t", .id = "ready", .body = "r"}).ok());
}

// A store of format 1 written before the totals of stats() and the counters were kept: it
// opens, with every job, the totals counting from zero, and serves (and keeps them from then).
TEST(StoreFormat, AnOlderStoreWithoutTotalsOrCountersOpens) {
  TempDir dir;
  const std::string store = dir.sub("s");
  make_store(store);
  RawStore raw(store);
  raw.put("meta", "totals", nullptr);
  raw.put("meta", "counters", nullptr);
  {
    auto q = delayq::open_store({.dir = store});
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    EXPECT_EQ((*q)->get("kept")->body, "b");
    EXPECT_EQ((*q)->get("ready")->state, delayq::JobState::ready);
    EXPECT_EQ((*q)->stats().pushed, 0u);
    ASSERT_TRUE((*q)->push({.topic = "t", .id = "new"}).ok());
    auto d = (*q)->reserve("t", std::chrono::seconds(10));
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE((*q)->ack(d->token).ok());
  }
  auto q = delayq::open_store({.dir = store}).value();
  EXPECT_EQ(q->stats().pushed, 1u);
  EXPECT_EQ(q->stats().acked, 1u);
  EXPECT_TRUE(q->get("kept").ok());
}

// A store of a newer format: refused everywhere, naming both versions and what to do, and the
// store is left exactly as it was.
TEST(StoreFormat, ANewerStoreIsRefusedEverywhereAndLeftAsItWas) {
  TempDir dir;
  const std::string store = dir.sub("s");
  make_store(store);
  RawStore raw(store);
  const std::string newer = std::to_string(delayq::wal::kFormatVersion + 1);
  raw.put("meta", "format", &newer);
  const auto before = raw.contents();
  const std::string says = "has format version " + newer +
                           " (family 'meta', key 'format'), newer than this build reads (format "
                           "version " +
                           std::to_string(delayq::wal::kFormatVersion) +
                           "); open it with a newer delayq";

  auto q = delayq::open_store({.dir = store});
  EXPECT_TRUE(q.is(Errc::corrupt)) << q.status().to_string();
  EXPECT_NE(q.status().message().find(says), std::string::npos) << q.status().message();
  EXPECT_TRUE(delayq::open_store({.dir = store, .read_only = true}).is(Errc::corrupt));

  CliRun d = run_program(DELAYQD_PATH, {"--listen", "127.0.0.1:0", "--store", store});
  EXPECT_EQ(d.exit, 1) << describe(d);
  EXPECT_TRUE(contains(d.err, " error cannot open the store " + store + ": corrupt data: store " +
                                  store + " " + says))
      << d.err;
  CliRun c = cli({"--store", store, "stats"});
  EXPECT_EQ(c.exit, 1) << describe(c);
  EXPECT_TRUE(contains(c.err, says)) << c.err;
  CliRun p = cli({"--store", store, "push", "t"});
  EXPECT_EQ(p.exit, 1) << describe(p);

  EXPECT_EQ(raw.contents(), before) << "a refused open changed what is stored";
  // Put back to this build's version, it is the same queue: nothing was lost.
  const std::string ours = std::to_string(delayq::wal::kFormatVersion);
  raw.put("meta", "format", &ours);
  auto back = delayq::open_store({.dir = store});
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ((*back)->get("kept")->body, "b");
  EXPECT_EQ((*back)->stats().pushed, 2u);
}

}  // namespace
