// The journal as the engine sees it: JournalSink, its engine::Persistence (engine/store_seam.h),
// and with a disk tier (docs/tiered-store.md) FarSink, its engine::FarStore
// (engine/tier/far_store.h), which JournalSink::far() hands out. open_store() (store.cc) makes
// them and hands the sink to the engine; every call's changes come in through write() and
// wait_durable(), defined in journal.cc beside Journal::append, so that the write path of a call
// is read in one file.
//
// Read-only (only with a disk tier: without one a read-only engine has no store), they write
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

#include "engine/store_seam.h"
#include "engine/tier/far_store.h"
#include "wal/journal.h"
#include "wal/journal_tier.h"

namespace delayq::wal {

class FarSink;

class JournalSink final : public engine::Persistence {
 public:
  JournalSink(std::shared_ptr<Journal> journal, const engine::Counters& recorded, bool read_only);
  ~JournalSink() override;

  // The write path (journal.cc): Journal::append and Journal::sync_to, or, read-only, a ticket
  // for a write never made.
  Result<uint64_t> write(const std::vector<engine::Change>& changes, const Stats& totals) override;
  Result<uint64_t> write_with_meta(const std::vector<engine::Change>& changes, const Stats& totals,
                                   const std::vector<engine::MetaPut>& meta) override;
  Result<uint64_t> write_paused(std::string_view topic, bool paused) override;
  Result<uint64_t> write_limits(std::string_view topic,
                                const std::optional<TopicLimits>& limits) override;
  Status wait_durable(uint64_t ticket) override;
  // The disk tier's write (FarSink::write): the changes with the tier's part and the meta
  // keys, one batch.
  Result<uint64_t> write_far(const std::vector<engine::Change>& changes,
                             const engine::FarBatch& far, const Stats& totals,
                             const std::vector<engine::MetaPut>& meta);
  // Whether the batch with this ticket is written (never, read-only).
  bool written(uint64_t ticket) const { return !read_only_ && journal_->written() >= ticket; }

  engine::Counters recorded_counters() override { return recorded_; }
  void track(const std::atomic<uint64_t>* fences, const std::atomic<uint64_t>* next_id,
             const std::atomic<uint64_t>* seqs) override {
    fences_ = fences;
    next_id_ = next_id;
    seqs_ = seqs;
  }
  const std::shared_ptr<Journal>& journal() const { return journal_; }

  // The disk tier, once its stored state is read (give_tier()); null without one.
  engine::FarStore* far() override;
  void give_tier(Duration span, uint64_t budget, const engine::FarKey& horizon,
                 engine::TopicCounts counts);

 private:
  // Read after the engine's call issued what its changes hold, so they are covered. Seqs only
  // with a disk tier: without one every record is read at open, which is what restores them.
  engine::Counters counters_now() const {
    if (!fences_) return {};
    return {fences_->load(), next_id_->load(), far_ ? seqs_->load() : 0};
  }

  std::shared_ptr<Journal> journal_;
  engine::Counters recorded_;
  const bool read_only_;
  std::atomic<uint64_t> view_tickets_{0};  // read-only: the tickets of writes never made
  const std::atomic<uint64_t>* fences_ = nullptr;
  const std::atomic<uint64_t>* next_id_ = nullptr;
  const std::atomic<uint64_t>* seqs_ = nullptr;
  std::unique_ptr<FarSink> far_;
};

// The disk tier's store over the journal (JournalTier), its writes through the JournalSink.
class FarSink final : public engine::FarStore {
 public:
  FarSink(JournalSink& sink, Journal& journal, Duration span, uint64_t budget,
          const engine::FarKey& horizon, engine::TopicCounts counts)
      : sink_(sink),
        tier_(journal),
        span_(span),
        budget_(budget),
        horizon_(horizon),
        counts_(std::move(counts)) {}

  Duration horizon_span() const override { return span_; }
  uint64_t memory_budget() const override { return budget_; }
  engine::FarKey stored_horizon() const override { return horizon_; }
  const engine::TopicCounts& stored_counts() const override { return counts_; }
  Result<uint64_t> write(const std::vector<engine::Change>& changes, const engine::FarBatch& far,
                         const Stats& totals, const std::vector<engine::MetaPut>& meta) override {
    return sink_.write_far(changes, far, totals, meta);
  }
  bool written(uint64_t ticket) const override { return sink_.written(ticket); }
  Result<std::optional<engine::JobRecord>> find(std::string_view id) override {
    return tier_.find(id);
  }
  Status scan(const engine::FarKey& from, const engine::FarKey& below,
              const std::function<bool(engine::JobRecord&&)>& fn) override {
    return tier_.scan(from, below, fn);
  }
  void prefetch(const engine::FarKey& from, const engine::FarKey& below, size_t n) override {
    tier_.prefetch(from, below, n);
  }
  bool indexes_topics() const override { return tier_.topic_index(); }
  Status scan_topic(std::string_view topic, const engine::FarKey& from,
                    const engine::FarKey& below,
                    const std::function<bool(engine::JobRecord&&)>& fn) override {
    return tier_.scan_topic(topic, from, below, fn);
  }

 private:
  JournalSink& sink_;
  JournalTier tier_;
  const Duration span_;
  const uint64_t budget_;
  const engine::FarKey horizon_;
  const engine::TopicCounts counts_;
};

}  // namespace delayq::wal
