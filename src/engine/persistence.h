// What the Engine needs from a durable store, and the internal way to open an Engine on one.
// The store itself (RocksDB, wal/) lives in its own library, which depends on this one.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "delayq/engine.h"
#include "engine/record.h"

namespace delayq::engine {

// Receives the changes of each call (or wake-up) before the engine answers anyone.
class Persistence {
 public:
  virtual ~Persistence() = default;
  // Makes the changes durable as one atomic write. On failure nothing of them may be applied.
  virtual Status write(const std::vector<Change>& changes) = 0;
};

// Calls its argument for every stored record, in seq order.
using RecordSource = std::function<Status(const std::function<Status(JobRecord&&)>&)>;

// Opens an Engine that writes its changes to `store` and first rebuilds itself from `records`.
// With a null store it is the in-memory Engine::open().
Result<std::unique_ptr<Engine>> open_engine(const EngineOptions& options,
                                            std::unique_ptr<Persistence> store,
                                            const RecordSource& records);

}  // namespace delayq::engine
