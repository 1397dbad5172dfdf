// Internal: open_store() on a RocksDB environment of the caller's choosing. For tests that
// simulate a power loss with a file system that records what was synced.
#pragma once

#include "delayq/store.h"
#include "wal/rocksdb_tuning.h"

namespace delayq::wal {

// open_store(options), with RocksDB running on `env` (null: the default environment) and its
// options changed by `tune` (null: unchanged). The env must outlive the returned queue.
Result<std::unique_ptr<Engine>> open_store_on(const StoreOptions& options, rocksdb::Env* env,
                                              const RocksDbTuning& tune = {});

}  // namespace delayq::wal
