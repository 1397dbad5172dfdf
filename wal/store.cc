// open_store(): the options checked, the journal opened and read, the engine restored on it with
// the journal as its store (JournalSink, journal_sink.h); backups of an open store.
#include "delayq/store.h"

#include <fmt/format.h>

#include <cstdio>
#include <optional>

#include "engine/store_seam.h"
#include "engine/tier/far_store.h"
#include "wal/journal.h"
#include "wal/journal_sink.h"
#include "wal/journal_tier.h"
#include "wal/store_testing.h"

namespace delayq {
namespace {

// The disk tier's stored state, and its horizon: the options', stored for the next open that
// leaves it unset, or as stored.
Status give_tier(wal::JournalTier tier, const StoreOptions& o, wal::JournalSink& sink) {
  Result<std::optional<Duration>> stored = tier.span();
  if (!stored) return stored.status();
  if (o.horizon && *stored != o.horizon && !o.read_only)
    if (Status st = tier.store_span(*o.horizon); !st.ok()) return st;
  Result<engine::FarKey> horizon = tier.horizon();
  if (!horizon) return horizon.status();
  Result<engine::TopicCounts> counts = tier.counts();
  if (!counts) return counts.status();
  sink.give_tier(o.horizon.value_or(stored->value_or(Duration::max())), o.memory_jobs, *horizon,
                 std::move(counts).value());
  return Status();
}

}  // namespace

const char* to_string(Sync s) noexcept {
  switch (s) {
    case Sync::always: return "always";
    case Sync::batch: return "batch";
    case Sync::periodic: return "periodic";
    case Sync::none: return "none";
  }
  return "?";
}

Result<Sync> parse_sync(std::string_view text) {
  for (Sync s : {Sync::always, Sync::batch, Sync::periodic, Sync::none})
    if (text == to_string(s)) return s;
  return Status(Errc::invalid_argument, "unknown sync mode '" + std::string(text) +
                                            "': use always, batch, periodic or none");
}

Status backup_store(Engine& store, const std::string& dir) {
  auto* sink = dynamic_cast<wal::JournalSink*>(engine::persistence_of(store));
  if (sink == nullptr)
    return Status(Errc::invalid_argument,
                  "backup: this queue has no store to copy (an in-memory Engine, or a store "
                  "opened read_only); back up a store opened by open_store()");
  // Held for the copy's duration: the journal outlives a concurrent close of the engine.
  const std::shared_ptr<wal::Journal> journal = sink->journal();
  return journal->checkpoint(dir);
}

Result<std::unique_ptr<Engine>> open_store(const StoreOptions& o) {
  return wal::open_store_on(o, nullptr);
}

Result<std::unique_ptr<Engine>> wal::open_store_on(const StoreOptions& o, rocksdb::Env* env,
                                                  const RocksDbTuning& tune) {
  if (o.dir.empty())
    return Status(Errc::invalid_argument, "store options: dir is empty; name the directory to keep "
                                          "the queue in");
  if (o.sync != Sync::always && o.sync != Sync::batch && o.sync != Sync::periodic &&
      o.sync != Sync::none)
    return Status(Errc::invalid_argument, "store options: sync is not one of always, batch, "
                                          "periodic, none");
  if (o.sync == Sync::batch && o.sync_batch_ops == 0)
    return Status(Errc::invalid_argument, "store options: sync_batch_ops is 0; Sync::batch needs "
                                          "at least 1 call per synced write");
  if ((o.sync == Sync::batch || o.sync == Sync::periodic) && o.sync_interval <= Duration::zero())
    return Status(Errc::invalid_argument,
                  "store options: sync_interval must be positive with Sync::" +
                      std::string(to_string(o.sync)));
  if (o.horizon && *o.horizon < std::chrono::milliseconds(1))
    return Status(Errc::invalid_argument,
                  "store options: horizon must be at least 1 ms (Duration::max(): every job in "
                  "memory), got " + std::to_string(o.horizon->count()) + " ns");
  if (o.memtable_bytes < (uint64_t{1} << 20) || o.memtable_bytes > (uint64_t{1} << 30))
    return Status(Errc::invalid_argument,
                  "store options: memtable_bytes must be between 1 MiB and 1 GiB, got " +
                      std::to_string(o.memtable_bytes));
  wal::JournalOptions jo;
  jo.memtable_bytes = o.memtable_bytes;
  jo.sync = {.mode = o.sync, .batch_ops = o.sync_batch_ops, .interval = o.sync_interval};
  jo.env = env;
  jo.tune = tune;
  jo.read_only = o.read_only;
  jo.tolerant = o.tolerant;
  jo.tiered = o.horizon && *o.horizon != Duration::max();
  jo.on_skip = o.on_skip;
  if (!jo.on_skip)
    jo.on_skip = [](const std::string& why) {
      fmt::print(stderr, "delayq: skipped: {}\n", why);
    };
  Result<std::unique_ptr<wal::Journal>> opened = wal::Journal::open(o.dir, jo);
  if (!opened) return opened.status();
  std::shared_ptr<wal::Journal> journal = std::move(opened).value();
  const engine::RecordSource records = [&journal](const auto& fn) { return journal->scan(fn); };
  Result<Stats> totals = journal->totals();
  if (!totals) return totals.status();
  Result<engine::Counters> counters = journal->counters();
  if (!counters) return counters.status();
  Result<std::vector<std::string>> paused = journal->paused_topics();
  if (!paused) return paused.status();
  Result<std::vector<std::pair<std::string, TopicLimits>>> limits = journal->topic_limits();
  if (!limits) return limits.status();
  Result<std::vector<std::string>> schedules = journal->schedules();
  if (!schedules) return schedules.status();
  std::unique_ptr<wal::JournalSink> sink;
  const bool tiered = wal::JournalTier(*journal).present();
  if (!o.read_only || tiered)
    sink = std::make_unique<wal::JournalSink>(journal, *counters, o.read_only);
  if (tiered)
    if (Status st = give_tier(wal::JournalTier(*journal), o, *sink); !st.ok()) return st;
  // The engine's refusals of records (Core::restore) do not know the directory: add it.
  const std::string where = "store " + o.dir + ": ";
  engine::SkipReport skip;
  // By value: the disk tier reports what its refills skip long after the open.
  if (o.tolerant) skip = [on_skip = jo.on_skip, where](const std::string& why) { on_skip(where + why); };
  auto q = engine::open_engine(o.engine, std::move(sink), records, *totals, skip, *paused,
                                *limits, *schedules);
  if (q.is(Errc::corrupt)) return Status(Errc::corrupt, where + q.status().message());
  return q;
}

}  // namespace delayq
