// The calls on one job of a store with a disk tier (far_calls.h).
#include "engine/far_calls.h"

#include <optional>
#include <utility>

#include "common/rules.h"

namespace delayq::engine::far_calls {

namespace {

// The disk-only job `id`, or why there is none: not_found, or the store's read error.
Result<JobRecord> on_disk(Tier& tier, Shard& s, std::string_view id) {
  Result<std::optional<JobRecord>> r = tier.find(s.far, id);
  if (!r) return r.status();
  if (!*r) return rules::no_such_job(id);
  return std::move(**r);
}

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
                 .retry = r.retry};
}

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
  return r;
}

// Moves a disk-only job into memory at `due` (<= now: ready at once, as Core::reschedule does).
Status move_in(Shard& s, JobRecord stored, TimePoint due, TimePoint now) {
  JobRecord r = stored;
  r.due = due <= now ? now : due;
  const Change put{r.seq, r};
  if (Status st = s.core.restore(std::move(r), now); !st.ok()) return st;
  s.core.advance(now);  // a job due now is ready when the call returns
  s.far.stage_remove(std::move(stored));
  s.far.jobs.push_back(put);
  return Status();
}

}  // namespace

Status push(Tier& tier, Shard& s, JobSpec&& spec, TimePoint now, std::atomic<uint64_t>& seqs) {
  Core& c = s.core;
  c.advance(now);
  const Limits& limits = c.options().limits;
  if (Status st = rules::check_spec(spec, limits, now); !st.ok()) return st;
  const TimePoint due = spec.delay    ? rules::plus(now, *spec.delay)
                        : spec.due_at ? *spec.due_at
                                      : now;
  Result<std::optional<JobRecord>> held = tier.find(s.far, spec.id);
  if (!held) return held.status();
  if (*held) return rules::duplicate_id(spec.id, JobState::delayed);
  if (due <= now || !tier.pushed_to_disk(due)) return c.push(std::move(spec), now);
  if (Result<JobInfo> in_memory = c.get(spec.id, now); in_memory.ok())
    return rules::duplicate_id(spec.id, in_memory->state);
  const uint64_t seq = seqs.fetch_add(1, std::memory_order_relaxed) + 1;
  s.far.stage_put(record_of(std::move(spec), due, limits, seq));
  ++s.far.totals.pushed;
  return Status();
}

Result<JobInfo> get(Tier& tier, Shard& s, std::string_view id, TimePoint now) {
  Result<JobInfo> r = s.core.get(id, now);
  if (!r.is(Errc::not_found)) return r;
  Result<JobRecord> d = on_disk(tier, s, id);
  if (!d) return d.status();
  return info_of(*d);
}

Status cancel(Tier& tier, Shard& s, std::string_view id, TimePoint now) {
  Status st = s.core.cancel(id, now);
  if (!st.is(Errc::not_found)) return st;
  Result<JobRecord> d = on_disk(tier, s, id);
  if (!d) return d.status();
  s.far.stage_remove(std::move(d).value());
  ++s.far.totals.cancelled;
  return Status();
}

Status reschedule(Tier& tier, Shard& s, std::string_view id, TimePoint when, TimePoint now) {
  Core& c = s.core;
  const Duration max_delay = c.options().limits.max_delay;
  if (std::optional<uint64_t> seq = c.seq_of(id)) {
    if (when <= now || !tier.on_disk(FarKey{when, *seq})) return c.reschedule(id, when, now);
    // Refused as Core::reschedule refuses: a reserved or dead job first, then the time.
    Result<JobInfo> m = c.get(id, now);
    if (Status st = rules::check_reschedulable(id, m->state); !st.ok()) return st;
    if (Status st = rules::check_new_due(when, now, max_delay); !st.ok()) return st;
    Result<JobRecord> r = c.evict(id, now);
    if (!r) return r.status();
    r->due = when;
    s.far.stage_put(std::move(r).value());
    return Status();
  }
  Result<JobRecord> d = on_disk(tier, s, id);
  if (!d) return d.status();
  if (Status st = rules::check_new_due(when, now, max_delay); !st.ok()) return st;
  if (when <= now || !tier.on_disk(FarKey{when, d->seq}))
    return move_in(s, std::move(*d), when, now);
  s.far.stage_remove(*d);
  d->due = when;
  s.far.stage_put(std::move(d).value());
  return Status();
}

Status requeue_dead(Tier& tier, Shard& s, std::string_view id, TimePoint now) {
  Status st = s.core.requeue_dead(id, now);
  if (!st.is(Errc::not_found)) return st;
  Result<JobRecord> d = on_disk(tier, s, id);
  if (!d) return d.status();
  return rules::check_requeueable(id, JobState::delayed);
}

Status token_miss(Tier& tier, Shard& s, const Token& t, Status core_said) {
  if (!core_said.is(Errc::not_found)) return core_said;
  Result<JobRecord> d = on_disk(tier, s, t.id);
  if (!d) return d.is(Errc::not_found) ? core_said : d.status();
  return rules::stale_token(t, JobState::delayed, d->attempts);
}

}  // namespace delayq::engine::far_calls
