// JournalSink: the journal as the engine sees it, its engine::Persistence (src/engine/store_seam.h)
// and, with a disk tier (docs/tiered-store.md), its engine::FarStore. open_store() (store.cc)
// makes one and hands it to the engine; every call's changes come in through write() and
// wait_durable(), defined in journal.cc beside Journal::append, so that the write path of a call
// is read in one file.
//
// Read-only (only with a disk tier: without one a read-only engine has no store), it writes
// nothing: the calls change the engine's view, and the disk tier's changes stay in the engine's
// overlays, their batches never written.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/tier/far_store.h"
#include "engine/store_seam.h"
#include "wal/journal.h"

namespace delayq::wal {

class JournalSink final : public engine::Persistence, public engine::FarStore {
 public:
  JournalSink(std::shared_ptr<Journal> journal, const engine::Counters& recorded, bool read_only)
      : journal_(std::move(journal)), recorded_(recorded), read_only_(read_only) {}

  // The write path (journal.cc): Journal::append and Journal::sync_to, or, read-only, a ticket
  // for a write never made.
  Result<uint64_t> write(const std::vector<engine::Change>& changes, const Stats& totals) override;
  Result<uint64_t> write(const std::vector<engine::Change>& changes, const engine::FarBatch& far,
                         const Stats& totals) override;
  Result<uint64_t> write_paused(std::string_view topic, bool paused) override;
  Status wait_durable(uint64_t ticket) override;
  bool written(uint64_t ticket) const override {
    return !read_only_ && journal_->written() >= ticket;
  }

  engine::Counters recorded_counters() override { return recorded_; }
  void track(const std::atomic<uint64_t>* fences, const std::atomic<uint64_t>* next_id,
             const std::atomic<uint64_t>* seqs) override {
    fences_ = fences;
    next_id_ = next_id;
    seqs_ = seqs;
  }
  const std::shared_ptr<Journal>& journal() const { return journal_; }

  // The disk tier, once its stored state is read (give_tier()).
  engine::FarStore* far() override { return tiered_ ? this : nullptr; }
  void give_tier(Duration span, uint64_t budget, const engine::FarKey& horizon,
                 engine::TopicCounts counts) {
    tiered_ = true;
    span_ = span;
    budget_ = budget;
    horizon_ = horizon;
    counts_ = std::move(counts);
  }
  Duration horizon_span() const override { return span_; }
  uint64_t memory_budget() const override { return budget_; }
  engine::FarKey stored_horizon() const override { return horizon_; }
  const engine::TopicCounts& stored_counts() const override { return counts_; }
  Result<std::optional<engine::JobRecord>> find(std::string_view id) override {
    return journal_->find_far(id);
  }
  Status scan(const engine::FarKey& from, const engine::FarKey& below,
              const std::function<bool(engine::JobRecord&&)>& fn) override {
    return journal_->scan_far(from, below, fn);
  }
  void prefetch(const engine::FarKey& from, const engine::FarKey& below, size_t n) override {
    journal_->prefetch_far(from, below, n);
  }

 private:
  // Read after the engine's call issued what its changes hold, so they are covered. Seqs only
  // with a disk tier: without one every record is read at open, which is what restores them.
  engine::Counters counters_now() const {
    if (!fences_) return {};
    return {fences_->load(), next_id_->load(), tiered_ ? seqs_->load() : 0};
  }

  std::shared_ptr<Journal> journal_;
  engine::Counters recorded_;
  const bool read_only_;
  std::atomic<uint64_t> view_tickets_{0};  // read-only: the tickets of writes never made
  const std::atomic<uint64_t>* fences_ = nullptr;
  const std::atomic<uint64_t>* next_id_ = nullptr;
  const std::atomic<uint64_t>* seqs_ = nullptr;
  bool tiered_ = false;
  Duration span_ = Duration::max();
  uint64_t budget_ = 0;
  engine::FarKey horizon_;
  engine::TopicCounts counts_;
};

}  // namespace delayq::wal
