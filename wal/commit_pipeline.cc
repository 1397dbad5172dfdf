// The group commit (commit_pipeline.h).
#include "wal/commit_pipeline.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace delayq::wal {

namespace {

void clear(Group& g) {
  g.changes.clear();  // keeps the capacity for the next group
  g.far.clear();
  g.counts.clear();
  g.horizon.reset();
  g.totals.reset();
  g.counters.reset();
  g.paused.clear();
  g.limits.clear();
  g.meta.clear();
  g.appends = 0;
  g.min_format = 0;
}

}  // namespace

CommitPipeline::CommitPipeline(CommitSink& sink, SyncPolicy policy) : sink_(sink), policy_(policy) {
  if (policy_.mode == Sync::batch || policy_.mode == Sync::periodic)
    syncer_ = std::thread([this] { run_syncer(); });
}

CommitPipeline::~CommitPipeline() {
  close();
}

void CommitPipeline::set_totals(const Stats& totals) {
  std::lock_guard l(mu_);
  totals_ = totals;
}

void CommitPipeline::set_counters(const engine::Counters& counters) {
  std::lock_guard l(mu_);
  counters_ = counters;
}

void CommitPipeline::set_counts(const engine::TopicCounts& counts) {
  std::lock_guard l(mu_);
  counts_ = std::map<std::string, uint64_t>(counts.begin(), counts.end());
}

Status CommitPipeline::status() {
  std::lock_guard l(mu_);
  return broken_;
}

Result<uint64_t> CommitPipeline::append(std::vector<EncodedChange> changes, const Stats& totals,
                                        const engine::Counters& counters, EncodedFar far,
                                        uint32_t min_format, std::vector<engine::MetaPut> meta) {
  if (changes.empty() && far.empty() && meta.empty()) return uint64_t{0};
  std::lock_guard l(mu_);
  if (!broken_.ok()) return broken_;
  engine::add_totals(totals_, totals);
  totals_dirty_ = true;
  if (counters.fences > counters_.fences || counters.next_id > counters_.next_id ||
      counters.seqs > counters_.seqs) {
    counters_.fences = std::max(counters_.fences, counters.fences);
    counters_.next_id = std::max(counters_.next_id, counters.next_id);
    counters_.seqs = std::max(counters_.seqs, counters.seqs);
    counters_dirty_ = true;
  }
  pending_.changes.insert(pending_.changes.end(), std::make_move_iterator(changes.begin()),
                          std::make_move_iterator(changes.end()));
  pending_.far.insert(pending_.far.end(), std::make_move_iterator(far.changes.begin()),
                      std::make_move_iterator(far.changes.end()));
  for (const auto& [topic, delta] : far.count_deltas) {
    // Counts never go below 0: a removal is only appended for a job that was counted.
    uint64_t& n = counts_[topic];
    n = static_cast<uint64_t>(static_cast<int64_t>(n) + delta);
    counts_dirty_.push_back(topic);
  }
  if (far.horizon) horizon_ = std::move(far.horizon);
  for (engine::MetaPut& m : meta) pending_.meta.emplace_back(std::move(m.key), std::move(m.value));
  pending_.min_format = std::max(pending_.min_format, min_format);
  ++pending_.appends;
  return ++appended_;
}

Result<uint64_t> CommitPipeline::append_paused(std::string topic, bool paused) {
  std::lock_guard l(mu_);
  if (!broken_.ok()) return broken_;
  pending_.paused.emplace_back(std::move(topic), paused);
  ++pending_.appends;
  return ++appended_;
}

Result<uint64_t> CommitPipeline::append_limits(std::string topic,
                                               std::optional<std::string> value) {
  std::lock_guard l(mu_);
  if (!broken_.ok()) return broken_;
  pending_.limits.emplace_back(std::move(topic), std::move(value));
  ++pending_.appends;
  return ++appended_;
}

Group CommitPipeline::take_pending() {
  if (totals_dirty_) pending_.totals = totals_;
  if (counters_dirty_) pending_.counters = counters_;
  totals_dirty_ = counters_dirty_ = false;
  std::sort(counts_dirty_.begin(), counts_dirty_.end());
  counts_dirty_.erase(std::unique(counts_dirty_.begin(), counts_dirty_.end()), counts_dirty_.end());
  for (std::string& topic : counts_dirty_) {
    const uint64_t n = counts_[topic];
    if (n == 0) counts_.erase(topic);
    pending_.counts.emplace_back(std::move(topic), n);
  }
  counts_dirty_.clear();
  pending_.horizon = std::exchange(horizon_, std::nullopt);
  Group group = std::move(pending_);
  pending_ = std::move(spare_);
  return group;
}

Status CommitPipeline::sync_to(uint64_t ticket) {
  const bool wait_for_disk = policy_.mode == Sync::always;
  auto done = [&] { return (wait_for_disk ? synced_ : written_).load() >= ticket; };
  if (done()) return Status();
  std::unique_lock l(mu_);
  while (!done()) {
    if (!broken_.ok()) return broken_;
    if (writing_) {
      written_cv_.wait(l);
    } else {
      lead(l);
    }
  }
  return Status();
}

// Under mu_, with no write in flight: writes everything appended so far as one group.
void CommitPipeline::lead(std::unique_lock<std::mutex>& l) {
  writing_ = true;
  Group group = take_pending();
  const uint64_t upto = appended_;
  const bool sync = policy_.mode == Sync::always ||
                    (policy_.mode == Sync::batch && upto - synced_.load() >= policy_.batch_ops);
  l.unlock();
  Status s = sink_.write(group, sync);
  clear(group);
  l.lock();
  spare_ = std::move(group);
  writing_ = false;
  if (s.ok()) {
    written_.store(upto);
    if (sync) synced_.store(upto);
  } else if (broken_.ok()) {
    // Every call waiting on this write, and every later one, fails. (A write is applied whole
    // or not at all, but after a failed sync nobody can tell what reached the disk.)
    broken_ = s;
  }
  written_cv_.notify_all();
}

// Syncs the sink and marks every append written before the sync as durable.
Status CommitPipeline::sync_now() {
  const uint64_t upto = written_.load();
  if (Status s = sink_.sync(); !s.ok()) {
    std::lock_guard l(mu_);
    if (broken_.ok()) broken_ = s;
    return s;
  }
  uint64_t cur = synced_.load();
  while (cur < upto && !synced_.compare_exchange_weak(cur, upto)) {
  }
  return Status();
}

void CommitPipeline::run_syncer() {
  std::unique_lock l(mu_);
  while (!stopping_) {
    syncer_cv_.wait_for(l, policy_.interval, [this] { return stopping_; });
    if (stopping_ || !broken_.ok() || synced_.load() >= written_.load()) continue;
    l.unlock();
    (void)sync_now();  // a failure is kept in broken_
    l.lock();
  }
}

void CommitPipeline::close() {
  std::unique_lock l(mu_);
  if (closed_) return;
  closed_ = stopping_ = true;
  if (syncer_.joinable()) {
    l.unlock();
    syncer_cv_.notify_all();
    syncer_.join();
    if (synced_.load() < written_.load()) (void)sync_now();
    l.lock();
  }
  written_cv_.wait(l, [this] { return !writing_; });
  if (pending_.appends == 0 || !broken_.ok()) return;
  Group group = take_pending();
  (void)sink_.write(group, policy_.mode != Sync::none);
}

}  // namespace delayq::wal
