// Firing the engine's schedules (the table, its index and its thread: schedules.h; the calls:
// engine_schedules.cc).
//
// A wake-up looks only at the schedules due (Schedules::due), plans each (schedule/planner.h),
// then pushes their occurrences' jobs (id occurrence_job_id(), due at the occurrence) in rounds:
// round r holds the r-th occurrence of each plan, grouped by the shard of its job, up to
// kFireBatch to one shard call. With a durable store each job's schedule record, moved past that
// occurrence, is staged beside it (Shard::staged_meta), so that the placement writes the jobs of
// a shard call and their records in one atomic batch: a crash keeps an occurrence's job and its
// record both or neither. A schedule's later occurrences go in later rounds, written after its
// earlier ones, so that its record never moves past an occurrence whose job is lost. A push
// refused as a duplicate (the occurrence's job exists already) counts as fired. Schedules that
// fire nothing (skipped by overlap or catch-up) have their records written together, alone.
//
// Lock order: schedules_.mu, then a shard's lock (as a call would take it).
#include <algorithm>
#include <span>

#include "engine/driver.h"
#include "engine/sharded_engine.h"
#include "engine/store_seam.h"
#include "engine/test_hooks.h"

namespace delayq::engine {

// ---- the index and the thread (schedules.h) ----

void Schedules::index(const std::string& id, ScheduleEntry& e) {
  const std::optional<TimePoint> at = e.stored.paused ? std::nullopt : e.stored.state.next;
  if (at == e.indexed) return;
  unindex(id, e);
  if (at) due.emplace(*at, id);
  e.indexed = at;
}

void Schedules::unindex(const std::string& id, ScheduleEntry& e) {
  if (e.indexed) due.erase({*e.indexed, id});
  e.indexed.reset();
}

std::string Schedules::index_damage() const {
  size_t running = 0;
  for (const auto& [id, e] : table) {
    if (e.stored.paused || !e.stored.state.next) {
      if (e.indexed) return "paused or ended but indexed: " + id;
      continue;
    }
    ++running;
    if (e.indexed != e.stored.state.next || !due.contains({*e.stored.state.next, id}))
      return "not indexed at its next occurrence: " + id;
  }
  if (due.size() != running) return "index entries of no running schedule";
  const int64_t next = due.empty() ? INT64_MAX : due.begin()->first.time_since_epoch().count();
  if (next_ns.load() != next) return "a published deadline other than the index's earliest";
  return {};
}

void Schedules::publish() {
  const int64_t next = due.empty() ? INT64_MAX : due.begin()->first.time_since_epoch().count();
  if (next_ns.exchange(next) > next) {
    std::lock_guard l(thread_mu_);
    // The thread starts with the first deadline: an engine without schedules has none.
    if (fire_ && !thread_.joinable() && !stopping_)
      thread_ = std::thread([this] { run(*clock_, fire_); });
    cv_.notify_all();
  }
}

void Schedules::start(Clock& clock, std::function<bool()> fire) {
  std::lock_guard l(thread_mu_);
  clock_ = &clock;
  fire_ = std::move(fire);
  if (next_ns.load() != INT64_MAX && !stopping_)  // restored schedules
    thread_ = std::thread([this] { run(*clock_, fire_); });
}

void Schedules::stop() {
  {
    std::lock_guard l(thread_mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Schedules::run(Clock& clock, const std::function<bool()>& fire) {
  std::unique_lock l(thread_mu_);
  bool failed = false;
  while (!stopping_) {
    const int64_t due = next_ns.load();
    if (due == INT64_MAX) {  // no schedule runs: publish() wakes it
      cv_.wait(l);
      continue;
    }
    Duration left = kClockRecheck;
    left = std::min(left, Duration(due) - clock.now().time_since_epoch());
    // Due: fired at once, again if more fell due while the last firing ran, unless that one
    // failed (the engine stopped on a failed write, a push was refused): then only a while later.
    if (left <= Duration::zero() && !failed) {
      l.unlock();
      failed = !fire();
      l.lock();
      continue;
    }
    if (left <= Duration::zero()) left = kClockRecheck;
    failed = false;
    cv_.wait_for(l, left);
  }
}

// ---- firing ----

namespace {

// At most this many occurrences are pushed in one shard call (one write batch): the shard's
// lock is free in between for consumers, and no batch grows without bound.
constexpr size_t kFireBatch = 1024;

}  // namespace

// One schedule at one wake-up: its plan, and its record as it is after the rounds so far.
struct ShardedEngine::Firing {
  ScheduleSlot* slot;
  schedule::Plan plan;
  schedule::StoredSchedule next;
  bool stopped = false;  // a push was refused: none of its later occurrences this time
};

// One occurrence's push, with the record to stage beside its job.
struct ShardedEngine::Occurrence {
  Firing* firing;
  TimePoint at;
  JobSpec job;
  schedule::ScheduleState state;  // the schedule's state once it is pushed
  std::string record;             // the encoded record (a durable store only)
  Status pushed{};
};

Duration ShardedEngine::schedule_tick() const {
  // A manual clock's moves fire at once; otherwise the thread may wake up to kClockRecheck late
  // after a step of the wall clock.
  return clock_.manual() ? opt_.tick : std::max(opt_.tick, kClockRecheck);
}

bool ShardedEngine::job_lives(const std::string& id) {
  Shard& shard = shards_.of(id);
  Result<JobInfo> r = shards_.apply(
      shard, [&](Core&, TimePoint now) { return shards_.placement().get(shard, id, now); });
  return r.ok() && r->state != JobState::dead;
}

bool ShardedEngine::fire_schedules() {
  if (closed()) return false;
  std::lock_guard l(schedules_.mu);
  const TimePoint now = shards_.now();
  std::vector<ScheduleSlot*> due;
  for (auto it = schedules_.due.begin(); it != schedules_.due.end() && it->first <= now; ++it)
    due.push_back(&*schedules_.table.find(it->second));
  const Status s = fire_due(due, now);
  schedules_.publish();
  return s.ok();
}

Status ShardedEngine::fire_due(std::span<ScheduleSlot* const> slots, TimePoint now) {
  // Planned and pushed kFireBatch schedules at a time: the first jobs go out while the later
  // schedules wait to be planned, not after all of them (0.8 s at 100 000 due at once). A
  // schedule is in one part only, so its occurrences keep their order.
  Status first;
  for (size_t from = 0; from < slots.size() && !closed(); from += kFireBatch) {
    const Status s = fire_plans(slots.subspan(from, std::min(kFireBatch, slots.size() - from)), now);
    if (first.ok()) first = s;
  }
  // Each where its next occurrence now is, whatever happened (a failure leaves it due).
  for (ScheduleSlot* slot : slots) schedules_.index(slot->first, slot->second);
  return first;
}

Status ShardedEngine::fire_plans(std::span<ScheduleSlot* const> slots, TimePoint now) {
  std::vector<Firing> firings;
  firings.reserve(slots.size());
  std::vector<Firing> quiet;  // nothing to push: only the record moves on
  for (ScheduleSlot* slot : slots) {
    const schedule::StoredSchedule& stored = slot->second.stored;
    if (stored.paused || !stored.state.next || *stored.state.next > now) continue;
    const bool previous_live = stored.spec.overlap == ScheduleSpec::Overlap::skip &&
                               stored.state.last_fired &&
                               job_lives(occurrence_job_id(slot->first, *stored.state.last_fired));
    Firing f{slot, schedule::plan(slot->second.rule, stored.spec, stored.state, now,
                                  schedule_tick(), previous_live),
             stored};
    f.next.state.skipped_catch_up += f.plan.skipped_catch_up;
    f.next.state.skipped_overlap += f.plan.skipped_overlap;
    if (f.plan.fire.empty()) {
      f.next.state.next = f.plan.next;
      quiet.push_back(std::move(f));
    } else {
      firings.push_back(std::move(f));
    }
  }
  if (!quiet.empty()) {
    std::vector<MetaPut> records;
    for (const Firing& f : quiet)
      records.push_back({schedule::schedule_key(f.slot->first), schedule::encode_schedule(f.next)});
    if (Status s = write_records(records); !s.ok()) return s;
    for (const Firing& f : quiet) f.slot->second.stored.state = f.next.state;
  }
  Status refused;
  for (size_t round = 0;; ++round) {
    std::vector<std::vector<Occurrence>> by_shard(shards_.size());
    bool any = false;
    for (Firing& f : firings) {
      if (f.stopped || round >= f.plan.fire.size()) continue;
      const TimePoint o = f.plan.fire[round];
      schedule::ScheduleState& st = f.next.state;
      st.fired += 1;
      st.last_fired = o;
      // Until the next one fires too, the schedule waits for it: a crash in between fires it
      // again on open (by the catch-up policy), never this one.
      st.next = round + 1 < f.plan.fire.size() ? std::optional(f.plan.fire[round + 1])
                                                : f.plan.next;
      JobSpec job = f.next.spec.job;
      job.id = occurrence_job_id(f.slot->first, o);
      job.due_at = o;
      const size_t shard = shards_.index_of(job.id);
      by_shard[shard].push_back({&f, o, std::move(job), st,
                                 shards_.store() ? schedule::encode_schedule(f.next) : ""});
      any = true;
    }
    if (!any) break;
    for (size_t i = 0; i < by_shard.size(); ++i) {
      std::span<Occurrence> all(by_shard[i]);
      for (size_t from = 0; from < all.size(); from += kFireBatch) {
        const std::span<Occurrence> batch = all.subspan(from, std::min(kFireBatch, all.size() - from));
        if (Status s = push_occurrences(shards_[i], batch); !s.ok()) return s;  // engine stopped
        for (Occurrence& oc : batch) {
          Firing& f = *oc.firing;
          if (!oc.pushed.ok() && !oc.pushed.is(Errc::duplicate_id)) {
            f.stopped = true;  // it stays due from this occurrence on
            if (refused.ok()) refused = oc.pushed;
            continue;
          }
          ScheduleEntry& e = f.slot->second;
          e.stored.state = oc.state;
          e.recent.push_back(oc.at);
          if (e.recent.size() > ScheduleEntry::kRecent) e.recent.pop_front();
        }
      }
    }
  }
  return refused;
}

Status ShardedEngine::push_occurrences(Shard& shard, std::span<Occurrence> batch) {
  const bool durable = shards_.store() != nullptr;
  return shards_.apply(shard, [&](Core&, TimePoint now) {
    for (Occurrence& oc : batch) {
      oc.pushed = shards_.placement().push(shard, std::move(oc.job), now);
      if (durable && (oc.pushed.ok() || oc.pushed.is(Errc::duplicate_id)))
        shard.staged_meta.push_back(
            {schedule::schedule_key(oc.firing->slot->first), std::move(oc.record)});
    }
    return Status();
  });
}

std::string ShardedEngine::schedule_index_damage() {
  std::lock_guard l(schedules_.mu);
  return schedules_.index_damage();
}

std::string schedule_index_damage(Queue& queue) {
  auto* engine = dynamic_cast<ShardedEngine*>(&queue);
  return engine ? engine->schedule_index_damage() : std::string();
}

}  // namespace delayq::engine
