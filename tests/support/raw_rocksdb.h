// A store's RocksDB database opened directly, bypassing the journal: for tests that write damage
// into a value or read one as it is stored.
#pragma once

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <string>
#include <vector>

namespace delayq::testing {

// Puts `*value` under `key` in `family` of the database in `dir`, or (value == nullptr) reads
// that key into *got. Every family the store has is opened (RocksDB opens none without all),
// "jobs" and "meta" made if missing. Fails the test if RocksDB does.
inline void raw_access(const std::string& dir, const std::string& family, const std::string& key,
                       const std::string* value, std::string* got) {
  rocksdb::DBOptions o;
  o.create_if_missing = true;
  o.create_missing_column_families = true;
  std::vector<std::string> names = {rocksdb::kDefaultColumnFamilyName, "jobs", "meta"};
  std::vector<std::string> existing;
  (void)rocksdb::DB::ListColumnFamilies(o, dir, &existing);
  for (const std::string& n : existing)
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  std::vector<rocksdb::ColumnFamilyDescriptor> fams;
  for (const std::string& n : names) fams.push_back({n, {}});
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(o, dir, fams, &handles, &db);
  ASSERT_TRUE(s.ok()) << s.ToString();
  rocksdb::ColumnFamilyHandle* h =
      handles[std::find(names.begin(), names.end(), family) - names.begin()];
  s = value ? db->Put(rocksdb::WriteOptions(), h, key, *value)
            : db->Get(rocksdb::ReadOptions(), h, key, got);
  for (auto* x : handles) (void)db->DestroyColumnFamilyHandle(x);
  delete db;
  ASSERT_TRUE(s.ok()) << s.ToString();
}

}  // namespace delayq::testing
