// list_jobs() of the delayed jobs a tiered store keeps on disk (TieredPlacement::
// browse_out_of_memory, tiered_placement.h).
//
// A store with the per-topic index of its disk tier (FarStore::indexes_topics: every store opened
// for writing, wal/far_index.h) reads the topic's disk jobs alone, in key order from the cursor's
// key on: a page reads the page (one more record, to know whether more follow, and the ones
// whose unwritten changes the overlays hold), whatever the other topics keep on disk. Every
// shard's lock is held meanwhile, as a refill step holds them.
//
// Without the index (a read-only open of a store whose tier predates it), the disk family keyed
// (due, seq) over every topic (wal/far_codec.h) is read in key order from the cursor's key on,
// keeping the topic's. Such a page reads at most kBrowseRead records: when the topic's jobs are
// sparse among the others, it ends early (read_to) and may hold fewer jobs than asked for, and
// the next page goes on from where the read stopped.
#include <algorithm>

#include "engine/shard.h"
#include "engine/tier/tiered_placement.h"

namespace delayq::engine {

namespace {
cursor::Key key_of(const JobRecord& r) {
  return cursor::Key{0, r.due.time_since_epoch().count(), r.seq, 0};
}
}  // namespace

Result<Placement::OutOfMemoryPage> TieredPlacement::browse_out_of_memory(
    std::string_view topic, const std::optional<cursor::Key>& after, size_t limit) {
  const FarKey from = after ? FarKey{TimePoint(Duration(after->at)), after->seq} : FarKey{};
  const auto wanted = [&](const JobRecord& r) {
    const FarKey k = far_key(r);
    return r.topic == topic && tier_.on_disk(k) && (!after || from < k);
  };
  // Unwritten changes first: they speak for their ids (the store's reads do not show them yet).
  std::vector<JobRecord> pending;
  for (const auto& s : shards_.all()) {
    FarShard& f = tier_.far(*s);
    f.overlay.purge([this](uint64_t t) { return tier_.store().written(t); });
    f.overlay.for_each([&](const std::string&, const FarOverlay::Entry& e) {
      if (e.record && wanted(*e.record)) pending.push_back(*e.record);
    });
  }
  std::sort(pending.begin(), pending.end(), by_far_key);

  OutOfMemoryPage page;
  std::vector<JobRecord> stored;
  // Stored records whose id the overlays speak for are left to them.
  const auto keep = [&](JobRecord&& r) {
    if (wanted(r) && tier_.far(shards_.of(r.id)).overlay.find(r.id) == nullptr)
      stored.push_back(std::move(r));
  };
  // Past the cursor's own key: its job was listed already.
  FarKey start = from;
  if (after && start.seq < UINT64_MAX) ++start.seq;
  start = std::max(start, tier_.horizon());
  const FarKey end{TimePoint::max(), UINT64_MAX};
  FarStore& store = tier_.store();
  Status st;
  if (store.indexes_topics()) {
    st = store.scan_topic(topic, start, end, [&](JobRecord&& r) {
      keep(std::move(r));
      return stored.size() < limit;  // `limit` is one more than the page: enough
    });
  } else {
    size_t read = 0;
    st = store.scan(start, end, [&](JobRecord&& r) {
      ++read;
      const cursor::Key k = key_of(r);
      keep(std::move(r));
      if (stored.size() >= limit) return false;
      if (read >= kBrowseRead) {
        page.read_to = k;
        return false;
      }
      return true;
    });
  }
  if (!st.ok()) return st;
  std::vector<JobRecord> all;
  std::merge(std::make_move_iterator(pending.begin()), std::make_move_iterator(pending.end()),
             std::make_move_iterator(stored.begin()), std::make_move_iterator(stored.end()),
             std::back_inserter(all), by_far_key);
  for (JobRecord& r : all) {
    const cursor::Key k = key_of(r);
    if (page.read_to && *page.read_to < k) break;  // the read did not get there
    if (page.items.size() >= limit) break;
    page.items.push_back(Core::BrowseItem{k, info_of(r)});
  }
  return page;
}

}  // namespace delayq::engine
