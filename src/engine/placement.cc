// Every job in memory (placement.h): the core's calls, the core's changes.
#include "engine/placement.h"

#include "engine/shard.h"

#include <utility>

namespace delayq::engine {

TimePoint MemoryPlacement::lock_at_now(std::unique_lock<ShardMutex>& lock) {
  lock.lock();
  return shards_.now();
}

Result<std::optional<uint64_t>> MemoryPlacement::queue(Shard& s, const Effects& fx) {
  Persistence* store = shards_.store();
  const std::vector<MetaPut> meta = std::exchange(s.staged_meta, {});
  if (store == nullptr || (fx.changes.empty() && meta.empty())) return std::optional<uint64_t>();
  Result<uint64_t> w = meta.empty() ? store->write(fx.changes, fx.totals)
                                    : store->write_with_meta(fx.changes, fx.totals, meta);
  if (!w) return w.status();
  return std::optional<uint64_t>(*w);
}

Status MemoryPlacement::push(Shard& s, JobSpec&& spec, TimePoint now) {
  return s.core.push(std::move(spec), now);
}

Result<JobInfo> MemoryPlacement::get(Shard& s, std::string_view id, TimePoint now) {
  return s.core.get(id, now);
}

Status MemoryPlacement::cancel(Shard& s, std::string_view id, TimePoint now) {
  return s.core.cancel(id, now);
}

Status MemoryPlacement::reschedule(Shard& s, std::string_view id, TimePoint when,
                                   TimePoint now) {
  return s.core.reschedule(id, when, now);
}

Status MemoryPlacement::requeue_dead(Shard& s, std::string_view id, TimePoint now) {
  return s.core.requeue_dead(id, now);
}

Status MemoryPlacement::token_miss(Shard&, const Token&, Status core_said) {
  return core_said;
}

}  // namespace delayq::engine
