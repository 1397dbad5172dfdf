// How an engine is opened (store_seam.h): the options checked, the counters started above what
// a restart may have handed out, the shards made, its placement chosen (a store's disk tier
// opened), a store's records restored, then the driver started. tier_view (test_hooks.h) too.
#include <algorithm>
#include <random>

#include "common/format.h"
#include "engine/restore.h"
#include "engine/sharded_engine.h"
#include "engine/store_seam.h"
#include "engine/test_hooks.h"
#include "engine/tier/tiered_placement.h"

namespace delayq {

Result<std::unique_ptr<Engine>> Engine::open(const EngineOptions& options) {
  return engine::open_engine(options, nullptr, {}, Stats{});
}

namespace engine {
namespace {

// Counters that must not repeat across restarts (fences, generated ids) start at least at the
// real time in nanoseconds, and a durable store's above what it recorded (engine::Counters). The
// record is what holds when the wall clock stepped back across the restart; the time is all the
// in-memory engine has, and covers a store that lost its last writes with the power (a mode
// other than Sync::always) while the clock did not step back.
uint64_t restart_safe_base() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

Status check_engine_options(const EngineOptions& o) {
  auto bad = [](const std::string& why) {
    return Status(Errc::invalid_argument, "engine options: " + why);
  };
  CoreOptions co;
  co.tick = o.tick;
  co.limits = o.limits;
  if (std::string why = check_options(co); !why.empty()) return bad(why);
  if (o.timer_slack < Duration::zero() || o.timer_slack > std::chrono::seconds(1))
    return bad("timer_slack must be between 0 and 1 s, got " + format_duration(o.timer_slack));
  if (o.shards < 1 || o.shards > 1024)
    return bad("shards must be between 1 and 1024, got " + std::to_string(o.shards));
  if (o.expected_jobs > EngineOptions::kMaxExpectedJobs)
    return bad("expected_jobs must be at most " + std::to_string(EngineOptions::kMaxExpectedJobs) +
               ", got " + std::to_string(o.expected_jobs));
  return {};
}

}  // namespace

Persistence* persistence_of(Engine& engine) noexcept {
  auto* sharded = dynamic_cast<ShardedEngine*>(&engine);
  return sharded ? sharded->shards().store() : nullptr;
}

TierView tier_view(Engine& engine) {
  TierView v;
  auto* sharded = dynamic_cast<ShardedEngine*>(&engine);
  if (sharded == nullptr) return v;
  Shards& shards = sharded->shards();
  for (const auto& s : shards.all()) {
    std::lock_guard l(s->mu);
    v.in_memory += s->core.jobs();
    if (auto* tiered = dynamic_cast<const TieredPlacement*>(&shards.placement()))
      v.horizon = tiered->horizon();
  }
  return v;
}

Result<std::unique_ptr<Engine>> open_engine(
    const EngineOptions& options, std::unique_ptr<Persistence> store, const RecordSource& records,
    const Stats& totals, const SkipReport& skip, const std::vector<std::string>& paused,
    const std::vector<std::pair<std::string, TopicLimits>>& limits,
    const std::vector<std::string>& schedules) {
  if (Status s = check_engine_options(options); !s.ok()) return s;
  Clock& clock = options.clock ? *options.clock : SystemClock::instance();
  const Counters recorded = store ? store->recorded_counters() : Counters{};
  auto e = std::make_unique<ShardedEngine>(options, clock, std::move(store));
  // restore() raises fences and seqs further if a record holds a higher one.
  e->fences().store(std::max(restart_safe_base(), recorded.fences));
  e->next_id().store(std::max(restart_safe_base(), recorded.next_id));
  e->seqs().store(recorded.seqs);
  Shards& shards = e->shards();
  if (shards.store()) shards.store()->track(&e->fences(), &e->next_id(), &e->seqs());
  // The placement, once: a store with a disk tier keeps the jobs beyond the horizon on disk
  // (start() loads what falls within it); otherwise every job is in memory, as Shards starts.
  if (FarStore* far = shards.store() ? shards.store()->far() : nullptr) {
    auto tiered = std::make_unique<TieredPlacement>(*far, shards, options.shards, e->seqs(), skip);
    if (Status st = tiered->open(); !st.ok()) return st;
    shards.set_placement(std::move(tiered));
  }
  CoreOptions co;
  co.tick = options.tick;
  co.limits = options.limits;
  co.fences = &e->fences();
  co.seqs = &e->seqs();
  co.record_changes = shards.store() != nullptr;
  // Each shard's share, rounded up (ids spread evenly over the shards by hash).
  co.expected_jobs =
      static_cast<uint32_t>((options.expected_jobs + options.shards - 1) / options.shards);
  const uint64_t seed = options.seed ? options.seed : std::random_device()();
  const TimePoint now = shards.now();
  for (size_t i = 0; i < options.shards; ++i) {
    co.seed = seed + i;
    shards.add(co, now);
  }
  if (records)
    if (Status st = restore(shards, records, now, skip); !st.ok()) return st;
  shards[0].core.restore_totals(totals);
  e->restore_paused(paused);
  e->restore_limits(limits);  // after the records: in_flight counts their reserved jobs
  if (Status st = e->restore_schedules(schedules, skip); !st.ok()) return st;
  if (Status st = e->start(); !st.ok()) return st;
  return std::unique_ptr<Engine>(std::move(e));
}

}  // namespace engine
}  // namespace delayq
