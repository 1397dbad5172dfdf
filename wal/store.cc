// open_store(): the Engine on a Journal.
#include "delayq/store.h"

#include <cstdio>

#include "engine/persistence.h"
#include "wal/journal.h"

namespace delayq {
namespace {

class JournalSink final : public engine::Persistence {
 public:
  explicit JournalSink(std::shared_ptr<wal::Journal> journal) : journal_(std::move(journal)) {}
  Result<uint64_t> write(const std::vector<engine::Change>& changes) override {
    return journal_->append(changes);
  }
  Status wait_durable(uint64_t ticket) override { return journal_->sync_to(ticket); }

 private:
  std::shared_ptr<wal::Journal> journal_;
};

}  // namespace

Result<std::unique_ptr<Engine>> open_store(const StoreOptions& o) {
  if (o.dir.empty())
    return Status(Errc::invalid_argument, "store options: dir is empty; name the directory to keep "
                                          "the queue in");
  wal::JournalOptions jo;
  jo.sync = o.sync == Sync::always ? wal::SyncMode::always : wal::SyncMode::none;
  jo.read_only = o.read_only;
  jo.tolerant = o.tolerant;
  jo.on_skip = [dir = o.dir](const std::string& why) {
    std::fprintf(stderr, "delayq: store %s: skipped %s\n", dir.c_str(), why.c_str());
  };
  Result<std::unique_ptr<wal::Journal>> opened = wal::Journal::open(o.dir, jo);
  if (!opened) return opened.status();
  std::shared_ptr<wal::Journal> journal = std::move(opened).value();
  const engine::RecordSource records = [&journal](const auto& fn) { return journal->scan(fn); };
  std::unique_ptr<engine::Persistence> sink;
  if (!o.read_only) sink = std::make_unique<JournalSink>(journal);
  return engine::open_engine(o.engine, std::move(sink), records);
}

}  // namespace delayq
