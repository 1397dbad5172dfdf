// The engine's schedule calls (Queue::schedule and friends; the table, its index and its
// thread: schedules.h; firing the occurrences: schedule_firing.cc). A call that changes a
// schedule writes its record alone (a durable store) and waits for it before the table changes,
// then indexes the schedule again and fires what is due of it at once.
//
// Lock order: schedules_.mu, then a shard's lock (as a call would take it).
#include <algorithm>

#include <fmt/format.h>

#include "common/flow_rules.h"
#include "engine/driver.h"
#include "engine/sharded_engine.h"
#include "engine/store_seam.h"
#include "schedule/info.h"
#include "schedule/replace.h"
#include "schedule/spec_rules.h"

namespace delayq::engine {

namespace {

Status no_schedule(std::string_view id) {
  return Status(Errc::not_found, fmt::format("no schedule with id \"{}\"", id));
}

}  // namespace

Status ShardedEngine::write_schedule(const std::string& id, const schedule::StoredSchedule* s) {
  if (shards_.store() == nullptr) return {};
  std::vector<MetaPut> meta{{schedule::schedule_key(id), std::nullopt}};
  if (s != nullptr) meta[0].value = schedule::encode_schedule(*s);
  return write_records(meta);
}

Status ShardedEngine::write_records(const std::vector<MetaPut>& records) {
  Persistence* store = shards_.store();
  if (store == nullptr) return {};
  Result<uint64_t> w = store->write_with_meta({}, Stats(), records);
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
    stored.state.next = schedule::replacement_next(*rule, spec, stored.state, now, stored.anchor);
  }
  if (Status s = write_schedule(spec.id, &stored); !s.ok()) return s;
  std::deque<TimePoint> recent;
  if (it != schedules_.table.end()) {
    recent = std::move(it->second.recent);
    schedules_.unindex(it->first, it->second);
  }
  ScheduleSlot& slot = *schedules_.table.insert_or_assign(
      spec.id, ScheduleEntry{std::move(stored), std::move(*rule), std::move(recent)}).first;
  schedules_.index(slot.first, slot.second);
  ScheduleSlot* const fire[] = {&slot};
  Status fired = fire_due(fire, now);
  schedules_.publish();
  return fired;
}

Status ShardedEngine::unschedule(std::string_view id) {
  if (closed()) return closed_status();
  std::lock_guard l(schedules_.mu);
  const auto it = schedules_.table.find(id);
  if (it == schedules_.table.end()) return no_schedule(id);
  if (Status s = write_schedule(it->first, nullptr); !s.ok()) return s;
  schedules_.unindex(it->first, it->second);
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
  schedules_.index(it->first, e);
  // Resumed: what fell while it was paused is missed (its catch-up policy), at once.
  ScheduleSlot* const fire[] = {&*it};
  Status fired = paused ? Status() : fire_due(fire, shards_.now());
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
    if (auto old = schedules_.table.find(id); old != schedules_.table.end())
      schedules_.unindex(old->first, old->second);
    ScheduleSlot& slot = *schedules_.table.insert_or_assign(std::move(id), std::move(e)).first;
    schedules_.index(slot.first, slot.second);
  }
  schedules_.publish();
  return {};
}

}  // namespace delayq::engine
