// The fixture of the disk tier's tests (docs/tiered-store.md): a durable store on a ManualClock
// with a tiny horizon, reopened at will, and what it holds in memory.
#pragma once

#include <gtest/gtest.h>

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "delayq/store.h"
#include "engine/test_hooks.h"
#include "temp_dir.h"
#include "wal/far_codec.h"

namespace delayq {

using namespace std::chrono_literals;

class TieredStore : public ::testing::Test {
 protected:
  // (Re)opens q_, the store under test (nullopt: the horizon it was last opened with).
  void open(std::optional<Duration> horizon = 1min, bool read_only = false) {
    q_.reset();
    auto q = open_named("store", horizon, Sync::none, read_only);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    q_ = std::move(q).value();
  }
  // A store in `name` under the test's directory, on the test's clock.
  Result<std::unique_ptr<Engine>> open_named(const std::string& name,
                                             std::optional<Duration> horizon,
                                             Sync sync = Sync::none, bool read_only = false) {
    StoreOptions o;
    o.dir = dir_.path() + "/" + name;
    o.sync = sync;
    o.read_only = read_only;
    o.horizon = horizon;
    o.engine.clock = &clock_;
    o.engine.seed = 7;
    o.engine.shards = shards_;
    o.memory_jobs = memory_jobs_;
    return open_store(o);
  }
  void push(const std::string& id, Duration delay, const std::string& topic = "t") {
    auto r = q_->push({.topic = topic, .id = id, .delay = delay, .body = "body of " + id});
    ASSERT_TRUE(r.ok()) << id << ": " << r.status().to_string();
  }
  size_t in_memory() { return engine::tier_view(*q_).in_memory; }
  // Opens q_ on `shards` shards with the given horizon and Sync::always (each write waits for an
  // fsync, so that batches stay queued for a while): for the tests that race pushes and refills.
  void open_for_race(size_t shards, Duration horizon) {
    shards_ = shards;
    auto q = open_named("store", horizon, Sync::always);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    q_ = std::move(q).value();
  }
  // Starts `producers` threads that each push `jobs` jobs to topic "t" (ids "p<thread>-<i>",
  // due from now to 2 s ahead at random, leases of `ttr`) and count `producing` down when done.
  std::vector<std::thread> race_pushes(int producers, int jobs, std::atomic<int>& producing,
                                       Duration ttr = 0s) {
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p)
      threads.emplace_back([&, p, jobs, ttr] {
        std::mt19937_64 rng(p + 1);
        for (int i = 0; i < jobs; ++i) {
          // Due from now to two horizons ahead: on both sides of the boundary as it moves.
          const TimePoint due = clock_.now() + std::chrono::milliseconds(rng() % 2000);
          const std::string id = "p" + std::to_string(p) + "-" + std::to_string(i);
          auto r = q_->push({.topic = "t", .id = id, .due_at = due, .ttr = ttr});
          EXPECT_TRUE(r.ok()) << id << ": " << r.status().to_string();
        }
        producing.fetch_sub(1);
      });
    return threads;
  }
  // Every job ready now, in the order reserve() hands them out (each acked).
  std::vector<std::string> drain(const std::string& topic = "t") {
    std::vector<std::string> out;
    for (;;) {
      auto d = q_->reserve(topic, 0ms);
      if (!d) break;
      EXPECT_LE(d->due, clock_.now()) << d->id << " delivered early";
      out.push_back(d->id);
      EXPECT_TRUE(q_->ack(d->token).ok());
    }
    return out;
  }

  // The store `name` read (or changed) with RocksDB directly, while it is closed: fn(db, the
  // handle of each family by name).
  using Families = std::map<std::string, rocksdb::ColumnFamilyHandle*>;
  void with_raw(const std::function<void(rocksdb::DB&, const Families&)>& fn,
                const std::string& name = "store") {
    const std::string dir = dir_.path() + "/" + name;
    std::vector<std::string> names;
    ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir, &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> fams;
    for (const std::string& n : names) fams.push_back({n, {}});
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), dir, fams, &handles, &db).ok());
    Families by_name;
    for (size_t i = 0; i < names.size(); ++i) by_name[names[i]] = handles[i];
    fn(*db, by_name);
    for (auto* h : handles) (void)db->DestroyColumnFamilyHandle(h);
    delete db;
  }
  // The keys of family `family` of the closed store `name`.
  std::set<std::string> raw_keys(const std::string& family, const std::string& name = "store") {
    std::set<std::string> keys;
    with_raw(
        [&](rocksdb::DB& db, const Families& f) {
          if (!f.contains(family)) return;
          std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions(), f.at(family)));
          for (it->SeekToFirst(); it->Valid(); it->Next()) keys.insert(it->key().ToString());
        },
        name);
    return keys;
  }
  // The closed store `name`'s per-topic index of its disk tier (wal/far_index.h) lists exactly
  // the records of "far", each under its topic.
  void expect_index_in_step(const std::string& name = "store") {
    std::set<std::string> listed;
    with_raw(
        [&](rocksdb::DB& db, const Families& f) {
          std::unique_ptr<rocksdb::Iterator> it(
              db.NewIterator(rocksdb::ReadOptions(), f.at(wal::kFarFamily)));
          for (it->SeekToFirst(); it->Valid(); it->Next()) {
            auto r = wal::decode_far_record(it->key().ToString(), it->value().ToString());
            ASSERT_TRUE(r.ok()) << r.status().to_string();
            listed.insert(wal::far_topic_key(r->topic, engine::far_key(*r)));
          }
        },
        name);
    EXPECT_EQ(raw_keys(wal::kFarTopicFamily, name), listed)
        << "family 'far-topic' is out of step with family 'far'";
  }

  testing::TempDir dir_;
  size_t shards_ = 1;
  uint64_t memory_jobs_ = 0;
  ManualClock clock_;
  std::unique_ptr<Engine> q_;
};

}  // namespace delayq
