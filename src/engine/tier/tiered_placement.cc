// The tiered placement (tiered_placement.h).
#include "engine/tier/tiered_placement.h"

#include <optional>
#include <utility>

#include "common/rules.h"
#include "engine/shard.h"

namespace delayq::engine {

JobInfo info_of(const JobRecord& r) {
  return JobInfo{.id = r.id,
                 .topic = r.topic,
                 .state = JobState::delayed,
                 .attempts = r.attempts,
                 .max_attempts = r.retry.max_attempts,
                 .due = r.due,
                 .lease_deadline = r.lease_deadline,
                 .ttr = r.ttr,
                 .body = r.body,
                 .retry = r.retry,
                 .priority = r.priority};
}

namespace {

// The record of a job pushed to disk (as Core::push would fill it in).
JobRecord record_of(JobSpec&& spec, TimePoint due, const Limits& limits, uint64_t seq) {
  JobRecord r;
  r.seq = seq;
  r.id = std::move(spec.id);
  r.topic = std::move(spec.topic);
  r.body = std::move(spec.body);
  r.due = due;
  r.ttr = spec.ttr > Duration::zero() ? spec.ttr : limits.default_ttr;
  r.retry = spec.retry ? std::move(*spec.retry) : limits.default_retry;
  r.priority = spec.priority;
  return r;
}

}  // namespace

TimePoint TieredPlacement::lock_at_now(std::unique_lock<ShardMutex>& lock) {
  // A closed queue loads nothing more (stats() answers as it was when it closed).
  for (; !shards_.waiting().closed();) {
    // A failed refill stops the engine; the call goes on and meets the stop (every write fails).
    if (!tier_.keep_ahead().ok()) break;
    lock.lock();
    const TimePoint now = shards_.now();
    // The thread may have stalled since keep_ahead(): look again without the lock.
    if (tier_.covers(now)) return now;
    lock.unlock();
  }
  lock.lock();
  return shards_.now();
}

Result<std::optional<uint64_t>> TieredPlacement::queue(Shard& s, const Effects& fx) {
  FarShard& far = tier_.far(s);
  // A schedule's record goes in the batch of its occurrence's job, in memory or on disk.
  const std::vector<MetaPut> meta = std::exchange(s.staged_meta, {});
  Result<uint64_t> w = uint64_t{0};
  if (far.staged())
    w = tier_.commit(far, fx, meta);
  else if (!meta.empty())
    w = shards_.store()->write_with_meta(fx.changes, fx.totals, meta);
  else if (!fx.changes.empty())
    w = shards_.store()->write(fx.changes, fx.totals);
  else
    return std::optional<uint64_t>();
  if (!w) return w.status();
  return std::optional<uint64_t>(*w);
}

Result<JobRecord> TieredPlacement::on_disk(Shard& s, std::string_view id) {
  Result<std::optional<JobRecord>> r = tier_.find(tier_.far(s), id);
  if (!r) return r.status();
  if (!*r) return rules::no_such_job(id);
  return std::move(**r);
}

Status TieredPlacement::move_in(Shard& s, JobRecord stored, TimePoint due, TimePoint now) {
  JobRecord r = stored;
  r.due = due <= now ? now : due;
  const Change put{r.seq, r};
  if (Status st = s.core.restore(std::move(r), now); !st.ok()) return st;
  s.core.advance(now);  // a job due now is ready when the call returns
  tier_.far(s).stage_remove(std::move(stored));
  tier_.far(s).jobs.push_back(put);
  return Status();
}


Status TieredPlacement::push(Shard& s, JobSpec&& spec, TimePoint now) {
  Core& c = s.core;
  c.advance(now);
  const Limits& limits = c.options().limits;
  if (Status st = rules::check_spec(spec, limits, now); !st.ok()) return st;
  const TimePoint due = spec.delay    ? rules::plus(now, *spec.delay)
                        : spec.due_at ? *spec.due_at
                                      : now;
  Result<std::optional<JobRecord>> held = tier_.find(tier_.far(s), spec.id);
  if (!held) return held.status();
  if (*held) return rules::duplicate_id(spec.id, JobState::delayed);
  if (due <= now || !tier_.pushed_to_disk(due)) return c.push(std::move(spec), now);
  if (Result<JobInfo> in_memory = c.get(spec.id, now); in_memory.ok())
    return rules::duplicate_id(spec.id, in_memory->state);
  const uint64_t seq = seqs_.fetch_add(1, std::memory_order_relaxed) + 1;
  tier_.far(s).stage_put(record_of(std::move(spec), due, limits, seq));
  ++tier_.far(s).totals.pushed;
  return Status();
}

Result<JobInfo> TieredPlacement::get(Shard& s, std::string_view id, TimePoint now) {
  Result<JobInfo> r = s.core.get(id, now);
  if (!r.is(Errc::not_found)) return r;
  Result<JobRecord> d = on_disk(s, id);
  if (!d) return d.status();
  return info_of(*d);
}

Status TieredPlacement::cancel(Shard& s, std::string_view id, TimePoint now) {
  Status st = s.core.cancel(id, now);
  if (!st.is(Errc::not_found)) return st;
  Result<JobRecord> d = on_disk(s, id);
  if (!d) return d.status();
  tier_.far(s).stage_remove(std::move(d).value());
  ++tier_.far(s).totals.cancelled;
  return Status();
}

Status TieredPlacement::reschedule(Shard& s, std::string_view id, TimePoint when, TimePoint now) {
  Core& c = s.core;
  const Duration max_delay = c.options().limits.max_delay;
  if (std::optional<uint64_t> seq = c.seq_of(id)) {
    if (when <= now || !tier_.on_disk(FarKey{when, *seq})) return c.reschedule(id, when, now);
    // Refused as Core::reschedule refuses: a reserved or dead job first, then the time.
    Result<JobInfo> m = c.get(id, now);
    if (Status st = rules::check_reschedulable(id, m->state); !st.ok()) return st;
    if (Status st = rules::check_new_due(when, now, max_delay); !st.ok()) return st;
    Result<JobRecord> r = c.evict(id, now);
    if (!r) return r.status();
    r->due = when;
    tier_.far(s).stage_put(std::move(r).value());
    return Status();
  }
  Result<JobRecord> d = on_disk(s, id);
  if (!d) return d.status();
  if (Status st = rules::check_new_due(when, now, max_delay); !st.ok()) return st;
  if (when <= now || !tier_.on_disk(FarKey{when, d->seq}))
    return move_in(s, std::move(*d), when, now);
  tier_.far(s).stage_remove(*d);
  d->due = when;
  tier_.far(s).stage_put(std::move(d).value());
  return Status();
}

Status TieredPlacement::requeue_dead(Shard& s, std::string_view id, TimePoint now) {
  Status st = s.core.requeue_dead(id, now);
  if (!st.is(Errc::not_found)) return st;
  Result<JobRecord> d = on_disk(s, id);
  if (!d) return d.status();
  return rules::check_requeueable(id, JobState::delayed);
}

Status TieredPlacement::token_miss(Shard& s, const Token& t, Status core_said) {
  if (!core_said.is(Errc::not_found)) return core_said;
  Result<JobRecord> d = on_disk(s, t.id);
  if (!d) return d.is(Errc::not_found) ? core_said : d.status();
  return rules::stale_token(t, JobState::delayed, d->attempts);
}

void TieredPlacement::add_shard_stats(Shard& s, Stats& st, OutOfMemoryCounts& out) {
  const FarShard& far = tier_.far(s);
  for (const auto& [topic, n] : far.count_deltas) out[topic] += n;
  add_totals(st, far.totals_since_open);
}

void TieredPlacement::finish_stats(Stats& st, OutOfMemoryCounts& out) {
  for (const auto& [topic, n] : tier_.store().stored_counts()) out[topic] += n;
  for (const auto& [topic, n] : out)
    if (n > 0) {
      st.topics[topic].delayed += static_cast<uint64_t>(n);
      st.timing[topic].due.beyond += static_cast<uint64_t>(n);
    }
}

}  // namespace delayq::engine
