// The engine's schedules (Queue::schedule and friends; the table and its thread: schedules.h).
//
// Firing an occurrence is one push on the shard of its job (id occurrence_job_id(), due at the
// occurrence), and with a durable store the schedule's record, moved past that occurrence, is
// staged on that shard (Shard::staged_meta) so that the placement writes it in the same atomic
// batch as the job's record: a crash keeps both or neither. A push refused as a duplicate (the
// occurrence's job exists already) counts as fired, its record written alone.
//
// Lock order: schedules_.mu, then a shard's lock (as a call would take it).
#include <algorithm>

#include <fmt/format.h>

#include "common/flow_rules.h"
#include "engine/driver.h"
#include "engine/sharded_engine.h"
#include "engine/store_seam.h"
#include "schedule/info.h"
#include "schedule/spec_rules.h"

namespace delayq::engine {

namespace {

Status no_schedule(std::string_view id) {
  return Status(Errc::not_found, fmt::format("no schedule with id \"{}\"", id));
}

}  // namespace

// ---- the table's thread (schedules.h) ----

void Schedules::publish() {
  int64_t due = INT64_MAX;
  for (const auto& [id, e] : table)
    if (!e.stored.paused && e.stored.state.next)
      due = std::min<int64_t>(due, e.stored.state.next->time_since_epoch().count());
  if (next_ns.exchange(due) > due) {
    std::lock_guard l(thread_mu_);
    // The thread starts with the first deadline: an engine without schedules has none.
    if (fire_ && !thread_.joinable() && !stopping_)
      thread_ = std::thread([this] { run(*clock_, fire_); });
    cv_.notify_all();
  }
}

void Schedules::start(Clock& clock, std::function<void()> fire) {
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

void Schedules::run(Clock& clock, const std::function<void()>& fire) {
  std::unique_lock l(thread_mu_);
  bool just_fired = false;
  while (!stopping_) {
    const int64_t due = next_ns.load();
    if (due == INT64_MAX) {  // no schedule runs: publish() wakes it
      cv_.wait(l);
      continue;
    }
    Duration left = kClockRecheck;
    left = std::min(left, Duration(due) - clock.now().time_since_epoch());
    if (left <= Duration::zero() && !just_fired) {
      l.unlock();
      fire();
      l.lock();
      just_fired = true;
      continue;
    }
    // Fired and still due (the engine stopped on a failed write): look again a while later.
    if (left <= Duration::zero()) left = kClockRecheck;
    just_fired = false;
    cv_.wait_for(l, left);
  }
}

// ---- firing ----

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

void ShardedEngine::fire_schedules() {
  if (closed()) return;
  std::lock_guard l(schedules_.mu);
  const TimePoint now = shards_.now();
  for (auto& [id, e] : schedules_.table)
    if (!e.stored.paused)
      if (Status s = fire_due(e, now); !s.ok()) break;  // the engine stopped: nothing more
  schedules_.publish();
}

Status ShardedEngine::fire_due(ScheduleEntry& e, TimePoint now) {
  schedule::StoredSchedule& stored = e.stored;
  if (!stored.state.next || *stored.state.next > now) return {};
  const std::string& id = stored.spec.id;
  const bool previous_live = stored.spec.overlap == ScheduleSpec::Overlap::skip &&
                             stored.state.last_fired &&
                             job_lives(occurrence_job_id(id, *stored.state.last_fired));
  const schedule::Plan plan =
      schedule::plan(e.rule, stored.spec, stored.state, now, schedule_tick(), previous_live);
  schedule::StoredSchedule next = stored;
  next.state.skipped_catch_up += plan.skipped_catch_up;
  next.state.skipped_overlap += plan.skipped_overlap;
  Persistence* store = shards_.store();
  for (size_t i = 0; i < plan.fire.size(); ++i) {
    const TimePoint o = plan.fire[i];
    next.state.fired += 1;
    next.state.last_fired = o;
    // Until the next one fires too, the schedule waits for it: a crash in between fires it
    // again on open (by the catch-up policy), never this one.
    next.state.next = i + 1 < plan.fire.size() ? std::optional(plan.fire[i + 1]) : plan.next;
    JobSpec job = stored.spec.job;
    job.id = occurrence_job_id(id, o);
    job.due_at = o;
    Shard& shard = shards_.of(job.id);
    Status pushed = shards_.apply(shard, [&](Core&, TimePoint t) {
      Status s = shards_.placement().push(shard, std::move(job), t);
      if (store && (s.ok() || s.is(Errc::duplicate_id)))
        shard.staged_meta.push_back({schedule::schedule_key(id), schedule::encode_schedule(next)});
      return s;
    });
    if (!pushed.ok() && !pushed.is(Errc::duplicate_id)) return pushed;
    stored.state = next.state;
    e.recent.push_back(o);
    if (e.recent.size() > ScheduleEntry::kRecent) e.recent.pop_front();
  }
  if (plan.fire.empty()) {
    next.state.next = plan.next;
    if (Status s = write_schedule(id, &next); !s.ok()) return s;
    stored.state = next.state;
  }
  return {};
}

Status ShardedEngine::write_schedule(const std::string& id, const schedule::StoredSchedule* s) {
  Persistence* store = shards_.store();
  if (store == nullptr) return {};
  std::vector<MetaPut> meta{{schedule::schedule_key(id), std::nullopt}};
  if (s != nullptr) meta[0].value = schedule::encode_schedule(*s);
  Result<uint64_t> w = store->write_with_meta({}, Stats(), meta);
  if (!w) return shards_.fail(w.status());
  if (Status d = store->wait_durable(*w); !d.ok()) return shards_.fail(d);
  return {};
}

// ---- the calls ----

Status ShardedEngine::schedule(const ScheduleSpec& spec) {
  if (closed()) return closed_status();
  const TimePoint now = shards_.now();
  Result<schedule::Rule> rule = schedule::check_schedule(spec, opt_.limits, now);
  if (!rule) return rule.status();
  std::lock_guard l(schedules_.mu);
  schedule::StoredSchedule stored{spec, spec.start.value_or(now), false, {}};
  const auto it = schedules_.table.find(spec.id);
  if (it == schedules_.table.end()) {
    stored.state.next = schedule::first_occurrence(*rule, spec, now);
  } else {
    // A replacement goes on from now: what the old rule missed is not the new rule's.
    stored.paused = it->second.stored.paused;
    stored.state = it->second.stored.state;
    stored.state.next = schedule::first_occurrence(*rule, spec, std::max(now, stored.anchor));
    if (stored.state.next && *stored.state.next < now)
      stored.state.next = rule->next_at_or_after(now);
    if (stored.state.next && spec.end && *stored.state.next >= *spec.end) stored.state.next.reset();
  }
  if (Status s = write_schedule(spec.id, &stored); !s.ok()) return s;
  std::deque<TimePoint> recent;
  if (it != schedules_.table.end()) recent = std::move(it->second.recent);
  ScheduleEntry& e = schedules_.table.insert_or_assign(
      spec.id, ScheduleEntry{std::move(stored), std::move(*rule), std::move(recent)}).first->second;
  Status fired = e.stored.paused ? Status() : fire_due(e, now);
  schedules_.publish();
  return fired;
}

Status ShardedEngine::unschedule(std::string_view id) {
  if (closed()) return closed_status();
  std::lock_guard l(schedules_.mu);
  const auto it = schedules_.table.find(id);
  if (it == schedules_.table.end()) return no_schedule(id);
  if (Status s = write_schedule(it->first, nullptr); !s.ok()) return s;
  schedules_.table.erase(it);
  schedules_.publish();
  return {};
}

Status ShardedEngine::set_schedule_paused(std::string_view id, bool paused) {
  if (closed()) return closed_status();
  std::lock_guard l(schedules_.mu);
  const auto it = schedules_.table.find(id);
  if (it == schedules_.table.end()) return no_schedule(id);
  ScheduleEntry& e = it->second;
  if (e.stored.paused == paused) return {};
  schedule::StoredSchedule changed = e.stored;
  changed.paused = paused;
  if (Status s = write_schedule(it->first, &changed); !s.ok()) return s;
  e.stored.paused = paused;
  // Resumed: what fell while it was paused is missed (its catch-up policy), at once.
  Status fired = paused ? Status() : fire_due(e, shards_.now());
  schedules_.publish();
  return fired;
}

ScheduleInfo ShardedEngine::info_of(const ScheduleEntry& e) {
  const schedule::StoredSchedule& s = e.stored;
  ScheduleInfo info = schedule::describe(s, e.rule);
  for (TimePoint o : e.recent)
    if (std::string job = occurrence_job_id(s.spec.id, o); job_lives(job))
      info.live_jobs.push_back(std::move(job));
  return info;
}

Result<ScheduleInfo> ShardedEngine::get_schedule(std::string_view id) {
  if (closed()) return closed_status();
  std::lock_guard l(schedules_.mu);
  const auto it = schedules_.table.find(id);
  if (it == schedules_.table.end()) return no_schedule(id);
  return info_of(it->second);
}

Result<SchedulePage> ShardedEngine::list_schedules(size_t limit, std::string_view cursor) {
  if (closed()) return closed_status();
  if (limit < 1 || limit > rules::kMaxListLimit)
    return Status(Errc::invalid_argument,
                  fmt::format("limit must be between 1 and {} schedules per page, got {}",
                              rules::kMaxListLimit, limit));
  std::lock_guard l(schedules_.mu);
  SchedulePage page;
  auto it = cursor.empty() ? schedules_.table.begin() : schedules_.table.upper_bound(cursor);
  for (; it != schedules_.table.end() && page.schedules.size() < limit; ++it)
    page.schedules.push_back(info_of(it->second));
  if (it != schedules_.table.end()) page.cursor = page.schedules.back().spec.id;
  return page;
}

Status ShardedEngine::restore_schedules(const std::vector<std::string>& records,
                                        const SkipReport& skip) {
  std::lock_guard l(schedules_.mu);
  for (const std::string& bytes : records) {
    Result<schedule::StoredSchedule> s = schedule::decode_schedule(bytes);
    Result<schedule::Rule> rule = s ? schedule::Rule::parse(s->spec.rule, s->spec.zone, s->anchor)
                                    : Result<schedule::Rule>(s.status());
    if (!rule) {
      const Status damage(Errc::corrupt, "a stored schedule: " + rule.status().message());
      if (!skip) return damage;
      skip(damage.message() + " (the schedule is left out)");
      continue;
    }
    ScheduleEntry e{std::move(*s), std::move(*rule), {}};
    if (e.stored.state.last_fired) e.recent.push_back(*e.stored.state.last_fired);
    std::string id = e.stored.spec.id;
    schedules_.table.insert_or_assign(std::move(id), std::move(e));
  }
  schedules_.publish();
  return {};
}

}  // namespace delayq::engine
