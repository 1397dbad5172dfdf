// Upgrades and the on-disk format (docs/production.md, "Upgrades"): a store written by an older
// delayq of the same format (before the totals and counters were kept) opens and keeps its
// jobs; a store written by a newer delayq (a higher format version) is refused by the library,
// delayqd and the CLI with a message naming both versions, and the refused open leaves every
// stored byte as it was, so that the newer delayq (or a rollback to it) still finds its store.
// Priorities (docs/journal-format.md, "format"): a store without the disk tier that only ever
// held the default priority keeps format 1, and the first job record with another priority
// raises it to 3 in the very write that stores the record. A store with the disk tier is format
// 4 (the tier's per-topic index), and every write that puts or deletes a disk record puts or
// deletes its index key with it.
#include <gtest/gtest.h>

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/transaction_log.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "child_process.h"
#include "cli_harness.h"
#include "delayq/store.h"
#include "wal/codec.h"
#include "wal/far_codec.h"
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
  std::string format() { return contents()["meta/format"]; }

  // The puts of each write RocksDB's log still holds (a store whose writer was killed: nothing
  // flushed it away), in order, as "family/key" -> value, and its deletes as "-family/key" -> "";
  // each write is one atomic batch.
  using Write = std::map<std::string, std::string>;
  std::vector<Write> logged_writes() {
    std::vector<Write> out;
    rocksdb::DBOptions o;
    o.avoid_flush_during_recovery = true;  // the log stays as the writer left it
    o.WAL_ttl_seconds = 3600;              // and is kept for GetUpdatesSince
    with_db(
        [&](rocksdb::DB& db, const std::vector<rocksdb::ColumnFamilyHandle*>& handles) {
          std::map<uint32_t, std::string> names;
          for (auto* h : handles) names[h->GetID()] = h->GetName();
          std::unique_ptr<rocksdb::TransactionLogIterator> it;
          const rocksdb::Status s = db.GetUpdatesSince(0, &it);
          ASSERT_TRUE(s.ok()) << s.ToString();
          for (; it->Valid(); it->Next()) {
            Puts puts(names);
            ASSERT_TRUE(it->GetBatch().writeBatchPtr->Iterate(&puts).ok());
            out.push_back(std::move(puts.seen));
          }
        },
        o);
    return out;
  }

 private:
  struct Puts : rocksdb::WriteBatch::Handler {
    explicit Puts(const std::map<uint32_t, std::string>& n) : names(n) {}
    rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice& k, const rocksdb::Slice& v) override {
      seen[names.at(cf) + "/" + k.ToString()] = v.ToString();
      return rocksdb::Status::OK();
    }
    rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice& k) override {
      seen["-" + names.at(cf) + "/" + k.ToString()] = "";
      return rocksdb::Status::OK();
    }
    rocksdb::Status DeleteRangeCF(uint32_t, const rocksdb::Slice&, const rocksdb::Slice&) override {
      return rocksdb::Status::OK();
    }
    const std::map<uint32_t, std::string>& names;
    Write seen;
  };

  // Opens every family the store holds ([0] default, [1] jobs, [2] meta, then the disk tier's).
  template <typename Fn>
  void with_db(Fn fn, rocksdb::DBOptions o = rocksdb::DBOptions()) {
    std::vector<std::string> names;
    ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(o, dir_, &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> fams = {
        {rocksdb::kDefaultColumnFamilyName, {}}, {"jobs", {}}, {"meta", {}}};
    for (const std::string& n : names)
      if (n != rocksdb::kDefaultColumnFamilyName && n != "jobs" && n != "meta")
        fams.push_back({n, {}});
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* db = nullptr;
    const rocksdb::Status s = rocksdb::DB::Open(o, dir_, fams, &handles, &db);
    ASSERT_TRUE(s.ok()) << s.ToString();
    fn(*db, handles);
    for (auto* h : handles) (void)db->DestroyColumnFamilyHandle(h);
    delete db;
  }
  std::string dir_;
};

// Runs `calls` in a child process, which is killed once they returned true: no clean close,
// nothing flushed out of RocksDB's log, which keeps every write as it was made. `calls` keeps
// the queue it opens in its argument, so that it stays open until the kill.
void write_then_killed(const std::function<bool(std::unique_ptr<delayq::Engine>&)>& calls) {
  delayq::testing::ChildProcess writer([&](int report) {
    std::unique_ptr<delayq::Engine> q;
    const char c = calls(q) ? '1' : '0';
    (void)!::write(report, &c, 1);
    ::pause();
  });
  ASSERT_TRUE(writer.started());
  char c = 0;
  ASSERT_EQ(::read(writer.reports(), &c, 1), 1);
  ASSERT_EQ(c, '1');
  writer.kill_and_wait();
}

// In the log of a store created at format 1: meta/format stays 1 until the first write holding
// a put that `needs` says needs more, is `raised` in that very write, and is not written again.
void expect_raised_in_the_write_of(
    const std::vector<RawStore::Write>& writes,
    const std::function<bool(const std::string&, const std::string&)>& needs,
    const std::string& raised) {
  int first = -1;
  for (size_t i = 0; i < writes.size() && first < 0; ++i)
    for (const auto& [key, value] : writes[i])
      if (needs(key, value)) first = static_cast<int>(i);
  ASSERT_GE(first, 0) << "no write in the log needs format " << raised;
  for (int i = 0; i < first; ++i)
    if (writes[i].contains("meta/format")) EXPECT_EQ(writes[i].at("meta/format"), "1") << i;
  ASSERT_TRUE(writes[first].contains("meta/format")) << "write " << first;
  EXPECT_EQ(writes[first].at("meta/format"), raised);
  for (size_t i = first + 1; i < writes.size(); ++i)
    EXPECT_FALSE(writes[i].contains("meta/format")) << "written once, write " << i;
}

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
  EXPECT_EQ(newer, "6");  // this build reads formats 1 to 5
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

// A store that only ever held jobs at the default priority (pushed with it named or not, on disk
// or in memory) keeps the format older builds read: 1; with the disk tier it is 4 (its index).
TEST(StoreFormat, OnlyDefaultPrioritiesKeepTheFormat) {
  TempDir dir;
  for (const bool tiered : {false, true}) {
    const std::string store = dir.sub(tiered ? "tiered" : "plain");
    delayq::StoreOptions o{.dir = store};
    if (tiered) o.horizon = std::chrono::minutes(1);
    {
      auto q = delayq::open_store(o).value();
      ASSERT_TRUE(q->push({.topic = "t", .id = "far", .delay = std::chrono::hours(2)}).ok());
      ASSERT_TRUE(q->push({.topic = "t", .id = "now", .priority = delayq::kDefaultPriority}).ok());
      auto d = q->reserve("t", std::chrono::seconds(10));
      ASSERT_TRUE(d.ok());
      ASSERT_TRUE(q->nack(d->token, std::chrono::hours(3)).ok());
    }
    RawStore raw(store);
    EXPECT_EQ(raw.format(), tiered ? "4" : "1");
    for (const auto& [key, value] : raw.contents()) {
      if (key.starts_with("jobs/") || key.starts_with("far/")) {
        EXPECT_EQ(value[0], '\x01') << key;
      }
    }
    {
      auto again = delayq::open_store(o);
      ASSERT_TRUE(again.ok()) << again.status().to_string();
    }
    EXPECT_EQ(raw.format(), tiered ? "4" : "1") << "an open must not raise it";
  }
}

// The first record of version 2 (a priority other than the default) and meta/format = 3 are in
// one write, atomic in RocksDB: no crash can leave such a record under a format that a build of
// format 1 or 2 would open (and whose records it could not read). The writer is killed so that
// RocksDB's log still holds every write as it was made.
TEST(StoreFormat, TheFirstOtherPriorityRaisesTheFormatTo3InTheSameWrite) {
  if (!delayq::testing::single_threaded())
    GTEST_SKIP() << "needs a process of its own (run it alone, as ctest does)";
  TempDir dir;
  const std::string store = dir.sub("s");
  write_then_killed([&](std::unique_ptr<delayq::Engine>& q) {
    auto opened = delayq::open_store({.dir = store, .sync = delayq::Sync::always});
    if (!opened) return false;
    q = std::move(opened).value();
    return q->push({.topic = "t", .id = "plain"}).ok() &&
           q->push({.topic = "t", .id = "urgent", .priority = 3}).ok() &&
           q->push({.topic = "t", .id = "urgent-too", .priority = 2}).ok();
  });
  if (HasFatalFailure()) return;

  RawStore raw(store);
  expect_raised_in_the_write_of(
      raw.logged_writes(),
      [](const std::string& key, const std::string& value) {
        return key.starts_with("jobs/") && value[0] == '\x02';
      },
      "3");

  // A build of format 2 refuses the store (it reads formats up to 2); this one opens it.
  EXPECT_EQ(raw.format(), "3");
  EXPECT_GT(*delayq::wal::decode_format(raw.format()), delayq::wal::kTieredFormat);
  {
    auto q = delayq::open_store({.dir = store});
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    EXPECT_EQ((*q)->get("urgent")->priority, 3u);
    EXPECT_EQ((*q)->reserve("t", std::chrono::seconds(1))->id, "urgent-too");
  }
  // Given the disk tier afterwards, the store is raised to 4 (the tier's index).
  {
    auto tiered = delayq::open_store({.dir = store, .horizon = std::chrono::minutes(1)});
    ASSERT_TRUE(tiered.ok()) << tiered.status().to_string();
  }
  EXPECT_EQ(raw.format(), "4");
}

// The store's first schedule record (meta/schedule/<id>) and meta/format = 5 are in one write: a
// build of format 4 would open the store, keep the record and never fire the schedule. Jobs of
// the default priority before it leave the format at 1; removing the schedule does not lower it.
TEST(StoreFormat, TheFirstScheduleRaisesTheFormatTo5InTheSameWrite) {
  if (!delayq::testing::single_threaded())
    GTEST_SKIP() << "needs a process of its own (run it alone, as ctest does)";
  TempDir dir;
  const std::string store = dir.sub("s");
  write_then_killed([&](std::unique_ptr<delayq::Engine>& q) {
    auto opened = delayq::open_store({.dir = store, .sync = delayq::Sync::always});
    if (!opened) return false;
    q = std::move(opened).value();
    delayq::ScheduleSpec s;
    s.id = "hourly";
    s.rule = "every 1h";
    s.job.topic = "t";
    return q->push({.topic = "t", .id = "plain"}).ok() && q->schedule(s).ok() &&
           q->unschedule("hourly").ok() && q->push({.topic = "t", .id = "after"}).ok();
  });
  if (HasFatalFailure()) return;

  RawStore raw(store);
  expect_raised_in_the_write_of(
      raw.logged_writes(),
      [](const std::string& key, const std::string&) { return key == "meta/schedule/hourly"; },
      "5");

  // Above what a build of format 4 reads; this one opens it, the schedule gone, both jobs there.
  EXPECT_EQ(raw.format(), "5");
  EXPECT_GT(*delayq::wal::decode_format(raw.format()), delayq::wal::kFarIndexFormat);
  auto q = delayq::open_store({.dir = store});
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_TRUE((*q)->get_schedule("hourly").status().is(Errc::not_found));
  EXPECT_TRUE((*q)->get("plain").ok());
  EXPECT_TRUE((*q)->get("after").ok());
}

// With the disk tier, the store is format 4 from its first open, and a job with a priority that
// goes to disk leaves it there (format 4 reads records of version 2 too); the job keeps its
// priority on disk.
TEST(StoreFormat, APriorityOnDiskLeavesATieredStoreAt4) {
  TempDir dir;
  const std::string store = dir.sub("s");
  const delayq::StoreOptions o{.dir = store, .horizon = std::chrono::minutes(1)};
  {
    auto q = delayq::open_store(o).value();
    ASSERT_TRUE(q->push({.topic = "t", .id = "plain-far", .delay = std::chrono::hours(1)}).ok());
  }
  RawStore raw(store);
  EXPECT_EQ(raw.format(), "4");
  {
    auto q = delayq::open_store(o).value();
    ASSERT_TRUE(
        q->push({.topic = "t", .id = "urgent-far", .delay = std::chrono::hours(1), .priority = 9})
            .ok());
  }
  EXPECT_EQ(raw.format(), "4");
  bool on_disk = false;
  for (const auto& [key, value] : raw.contents())
    if (key.starts_with("far/") && value[0] == '\x02') on_disk = true;
  EXPECT_TRUE(on_disk) << "the job was not written to the disk tier";
  auto q = delayq::open_store(o).value();
  EXPECT_EQ(q->get("urgent-far")->priority, 9u);
  EXPECT_EQ(q->get("plain-far")->priority, delayq::kDefaultPriority);
}

// The per-topic index of the disk tier (docs/journal-format.md, "far-topic"): every write that
// puts a record in "far" puts its index key in the same atomic write, and every write that
// deletes one deletes its key, so that no crash leaves them out of step. The writer is killed so
// that RocksDB's log still holds every write as it was made; the store it leaves lists each
// record of "far" in the index, and nothing else.
TEST(StoreFormat, EachDiskRecordAndItsIndexKeyAreWrittenInOneWrite) {
  if (!delayq::testing::single_threaded())
    GTEST_SKIP() << "needs a process of its own (run it alone, as ctest does)";
  TempDir dir;
  const std::string store = dir.sub("s");
  using std::chrono::hours;
  write_then_killed([&](std::unique_ptr<delayq::Engine>& q) {
    auto opened = delayq::open_store(
        {.dir = store, .sync = delayq::Sync::always, .horizon = std::chrono::minutes(1)});
    if (!opened) return false;
    q = std::move(opened).value();
    bool ok = true;
    for (int i = 0; ok && i < 6; ++i)
      ok = q->push({.topic = i % 2 ? "odd" : "even", .id = "far-" + std::to_string(i),
                    .delay = hours(1 + i)})
               .ok();
    ok = ok && q->push({.topic = "odd", .id = "near", .delay = std::chrono::seconds(5)}).ok();
    ok = ok && q->cancel("far-2").ok();  // deleted from disk
    const auto now = std::chrono::system_clock::now();
    ok = ok && q->reschedule("far-3", now + hours(30)).ok();  // moved on disk
    ok = ok && q->reschedule("near", now + hours(20)).ok();   // from memory to disk
    return ok && q->reschedule("far-4", now + std::chrono::seconds(9)).ok();  // into memory
  });
  if (HasFatalFailure()) return;

  RawStore raw(store);
  size_t puts = 0, deletes = 0;
  for (const RawStore::Write& w : raw.logged_writes()) {
    for (const auto& [key, value] : w) {
      if (key.starts_with("far/")) {
        const std::string fk = key.substr(4);
        auto r = delayq::wal::decode_far_record(fk, value);
        ASSERT_TRUE(r.ok()) << r.status().to_string();
        EXPECT_TRUE(w.contains("far-topic/" + delayq::wal::far_topic_key(r->topic, *delayq::wal::decode_far_key(fk))))
            << r->id << ": its index key is not in the write that puts its record";
        ++puts;
      } else if (key.starts_with("-far/")) {
        const std::string fk = key.substr(5);
        const bool listed = std::any_of(w.begin(), w.end(), [&](const auto& kv) {
          return kv.first.starts_with("-far-topic/") && kv.first.ends_with(fk);
        });
        EXPECT_TRUE(listed) << "a delete of far key " << delayq::wal::hex(fk)
                            << " without its index key's";
        ++deletes;
      }
    }
  }
  EXPECT_GE(puts, 8u);    // six pushes, two moves to (or on) disk
  EXPECT_GE(deletes, 3u);  // the cancel and the two moves off their keys
  size_t records = 0;
  std::set<std::string> listed, indexed;
  for (const auto& [key, value] : raw.contents()) {
    if (key.starts_with("far/")) {
      auto r = delayq::wal::decode_far_record(key.substr(4), value);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      listed.insert(delayq::wal::far_topic_key(r->topic, *delayq::wal::decode_far_key(key.substr(4))));
      ++records;
    } else if (key.starts_with("far-topic/")) {
      indexed.insert(key.substr(10));
    }
  }
  EXPECT_EQ(records, 5u);  // far-0, 1, 3, 5 and near
  EXPECT_EQ(indexed, listed);
  EXPECT_EQ(raw.format(), "4");
}

}  // namespace
