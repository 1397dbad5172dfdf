// The RocksDB environment and options a test may give the store: the one place that names them
// for journal.h (JournalOptions) and store_testing.h (open_store_on), without RocksDB's headers.
#pragma once

#include <functional>
#include <vector>

namespace rocksdb {
class Env;
struct DBOptions;
struct ColumnFamilyDescriptor;
}  // namespace rocksdb

namespace delayq::wal {

// Changes RocksDB's options as the store would open with them, just before the open.
using RocksDbTuning =
    std::function<void(rocksdb::DBOptions&, std::vector<rocksdb::ColumnFamilyDescriptor>&)>;

}  // namespace delayq::wal
