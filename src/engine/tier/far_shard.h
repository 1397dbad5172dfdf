// A shard's part of the disk tier (docs/tiered-store.md): what the call under way staged for the
// disk, the overlay of disk changes queued but not yet written, and what the shard's calls did
// to the disk tier's counts since open. Everything here is guarded by the shard's lock.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/tier/far_store.h"
#include "engine/record.h"

namespace delayq::engine {

// Disk-tier changes whose batches are queued in the commit pipeline but not yet written, so not
// yet visible to the store's reads: for each id, its latest state (on disk as a record, or not
// on disk) and the ticket of the batch that set it. An entry leaves once that batch is written.
class FarOverlay {
 public:
  struct Entry {
    uint64_t ticket = 0;
    std::optional<JobRecord> record;  // nullopt: no longer on disk
  };

  // Drops the entries whose batch is written (`written(ticket)`).
  void purge(const std::function<bool(uint64_t)>& written) {
    while (!order_.empty() && written(order_.front().first)) {
      auto it = by_id_.find(order_.front().second);
      if (it != by_id_.end() && it->second.ticket == order_.front().first) by_id_.erase(it);
      order_.pop_front();
    }
  }
  // The latest unwritten state of `id`, or null when the store's reads are up to date for it.
  const Entry* find(std::string_view id) const {
    auto it = by_id_.find(std::string(id));
    return it == by_id_.end() ? nullptr : &it->second;
  }
  void note(const FarChange& c, uint64_t ticket) {
    Entry& e = by_id_[c.record.id];
    e.ticket = ticket;
    e.record = c.put ? std::optional<JobRecord>(c.record) : std::nullopt;
    order_.emplace_back(ticket, c.record.id);
  }
  // fn(id, entry) for every entry.
  template <class F>
  void for_each(F&& fn) const {
    for (const auto& [id, e] : by_id_) fn(id, e);
  }
  size_t size() const { return by_id_.size(); }

 private:
  std::unordered_map<std::string, Entry> by_id_;
  std::deque<std::pair<uint64_t, std::string>> order_;  // (ticket, id), in ticket order
};

struct FarShard {
  // Staged by the call under way, written with its core changes (Shards::apply).
  std::vector<Change> jobs;  // records moved from disk into memory: Put into "jobs"
  FarBatch far;
  Stats totals;  // how much the calls on disk-only jobs grew the totals of stats()

  // Unwritten disk changes of this shard's jobs.
  FarOverlay overlay;
  // What this shard's calls did since open, for stats(): disk-only jobs gained or lost per
  // topic, and the totals grown by calls on disk-only jobs.
  std::unordered_map<std::string, int64_t> count_deltas;
  Stats totals_since_open;

  bool staged() const { return !jobs.empty() || !far.empty(); }
  void stage_put(JobRecord r) {
    r.state = JobState::delayed;
    far.changes.push_back(FarChange{true, std::move(r)});
  }
  void stage_remove(JobRecord r) { far.changes.push_back(FarChange{false, std::move(r)}); }
  // The staged changes were queued under `ticket`: into the overlay and the counts.
  void written_as(uint64_t ticket) {
    for (const FarChange& c : far.changes) note(c, ticket);
    add_totals(totals_since_open, totals);
    clear_staged();
  }
  // The staged changes could not be queued (the engine stops).
  void clear_staged() {
    jobs.clear();
    far = FarBatch();
    totals = Stats();
  }
  void note(const FarChange& c, uint64_t ticket) {
    overlay.note(c, ticket);
    count_deltas[c.record.topic] += c.put ? 1 : -1;
  }
};

}  // namespace delayq::engine
