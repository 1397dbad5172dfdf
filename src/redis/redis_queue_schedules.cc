// Schedules on Redis (Queue::schedule and friends; docs/redis.md, "Schedules").
//
// The home shard (shard 0) keeps each schedule's record (schedule/record.h's bytes, the same as
// the durable store's) in one hash, and the running ones in a zset scored by their next
// occurrence (µs). Lua cannot read time zones, so the client plans (schedule/planner.h) from the
// record it read, and sched.lua applies the new record only if the stored bytes are still those
// it planned from. Of several clients firing one occurrence, one wins that compare-and-set; the
// winner alone then pushes the occurrence's jobs (deterministic ids, each on its own shard), the
// others read again and find the schedule already past it. So no occurrence ever makes two jobs.
//
// A client can die (or lose Redis) between its compare-and-set and its pushes. So the
// compare-and-set also records each occurrence it fires as pending (its job's id, due time and
// schedule), and the winner pushes each job with push_once.lua, which sets a marker on the job's
// shard in the same step; then it removes the pending entries and shortens its markers' lives to
// kPendingGrace. An occurrence still pending kPendingGrace after it fired is pushed by whichever
// client looks next (push_pending()), and its marker says whether the first push was made: so it
// gets its job once, even when that job was pushed, done and acked before the client died. Two
// jobs remain possible in two cases (docs/redis.md, "Schedules"): the client died after its push
// and before removing the pending entry, and no client looked for longer than a marker lives (a
// day); or a client that read the entry as pending stalled for more than kPendingGrace before its
// own push, while the job was done and its marker expired.
//
// Who fires: each client, at every move of a ManualClock (RedisOptions::clock, before the move
// returns), else a thread that looks at the zset every kSchedulePoll; and schedule() and
// resume_schedule() at once, and start() (the catch-up after downtime).
#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <mutex>

#include <fmt/format.h>

#include "common/flow_rules.h"
#include "redis/redis_queue.h"
#include "schedule/info.h"
#include "schedule/record.h"
#include "schedule/replace.h"
#include "schedule/spec_rules.h"

namespace delayq::redis {

namespace {

Status no_schedule(std::string_view id) {
  return Status(Errc::not_found, fmt::format("no schedule with id \"{}\"", id));
}

std::string us(TimePoint t) {
  return std::to_string(ceil_us(t));
}

}  // namespace

std::vector<std::string> RedisQueue::sched_keys(std::string_view id) const {
  const std::string& tag = keys_.shard(0).tag;
  return {tag + ":sched", tag + ":sched:due", tag + ":sched:recent:" + std::string(id),
          tag + ":sched:pending", tag + ":sched:ids"};
}

namespace {
// An occurrence's marker (push_once.lua), on its job's shard.
std::string occurrence_marker(const ShardKeys& sh, std::string_view job_id) {
  return sh.tag + ":occ:" + std::string(job_id);
}
}  // namespace

Result<bool> RedisQueue::push_occurrence(JobSpec job) {
  if (Status s = rules_.check_push(job, client_now()); !s.ok()) return s;
  const ShardKeys& sh = keys_.shard(keys_.shard_of(job.id));
  std::vector<std::string> args = common_(sh);
  add_job_args(job, /*with_topic=*/true, opt_.limits.default_ttr, opt_.limits.default_retry, args);
  std::vector<std::string> keys = sh.with_topic(job.topic);
  keys.push_back(occurrence_marker(sh, job.id));
  auto send = [&] { return router_.eval(sh.slot, kPushOnce, keys, args); };
  Result<Reply> r = send();
  // Safe to send again: the marker lets it be stored once.
  if (!r && sent_and_lost(r.status())) r = resend(std::move(r), send);
  if (!r) return r.status();
  const int64_t code = r->elements.empty() ? -1 : r->elements[0].as_int(-1);
  if (code == kDuplicateId) return false;
  if (code != kOk) return bad_reply(kPushOnce);
  if (r->elements.size() > 1) return false;  // the marker: pushed before
  jobs_.remember(job.id, job.topic);
  return true;
}

void RedisQueue::settle_occurrences(const std::vector<std::string>& jobs,
                                    const std::vector<bool>& pushed_now) {
  if (jobs.empty()) return;
  const std::string pending = sched_keys("")[3];
  std::vector<std::string_view> hdel{"HDEL", pending};
  hdel.insert(hdel.end(), jobs.begin(), jobs.end());
  // Not removed (Redis unreachable): pending, the next look pushes it again, and its marker
  // keeps it from a second job.
  if (!router_.command(keys_.shard(0).slot, hdel)) return;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!pushed_now[i]) continue;
    const ShardKeys& sh = keys_.shard(keys_.shard_of(jobs[i]));
    // Not deleted: a client that read the entry as pending just before it was removed may be
    // about to push it, and must find the marker. Kept for kPendingGrace (else: a day).
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(kPendingGrace).count();
    const std::string marker = occurrence_marker(sh, jobs[i]), life = std::to_string(ms);
    (void)router_.command(sh.slot, {"PEXPIRE", marker, life});
  }
}

void RedisQueue::push_pending() {
  const std::string pending = sched_keys("")[3];
  Result<Reply> r = router_.command(keys_.shard(0).slot, {"HGETALL", pending});
  if (!r || r->elements.empty()) return;
  const int64_t now_us = ceil_us(client_now());
  const int64_t grace_us = std::chrono::duration_cast<std::chrono::microseconds>(kPendingGrace).count();
  for (size_t i = 0; i + 1 < r->elements.size(); i += 2) {
    const std::string& job_id = r->elements[i].str;
    const std::string& value = r->elements[i + 1].str;
    // "<due, ns> <since, µs> <schedule id>"
    const size_t a = value.find(' ');
    const size_t b = a == std::string::npos ? a : value.find(' ', a + 1);
    int64_t due_ns = 0, since_us = 0;
    bool parsed = b != std::string::npos;
    if (parsed) {
      const char* p = value.data();
      parsed = std::from_chars(p, p + a, due_ns).ec == std::errc() &&
               std::from_chars(p + a + 1, p + b, since_us).ec == std::errc();
    }
    // Its client may still push it. (Compared without subtracting a number read from Redis.)
    if (parsed && since_us > now_us - grace_us) continue;
    // The job as the schedule's record makes it now (a replacement's job, if it was replaced
    // since). Damaged, or its schedule removed since: dropped rather than read again each look.
    Result<std::optional<SchedRead>> rec =
        parsed ? read_sched(std::string_view(value).substr(b + 1))
               : Result<std::optional<SchedRead>>(std::optional<SchedRead>());
    if (!rec) {  // the next look tries again
      if (rec.status().is(Errc::corrupt)) continue;  // a damaged record: the others first
      return;                                         // Redis unreachable
    }
    if (!*rec) {
      (void)router_.command(keys_.shard(0).slot, {"HDEL", pending, job_id});
      continue;
    }
    JobSpec job = (*rec)->stored.spec.job;
    job.id = job_id;
    job.due_at = TimePoint(std::chrono::nanoseconds(due_ns));
    Result<bool> pushed = push_occurrence(std::move(job));
    if (!pushed) {
      if (pushed.status().is(Errc::unavailable) || pushed.status().is(Errc::closed)) return;
      continue;  // refused: it stays pending, and the next look tries it again
    }
    (void)router_.command(keys_.shard(0).slot, {"HDEL", pending, job_id});
  }
}

Result<std::optional<RedisQueue::SchedRead>> RedisQueue::read_sched(std::string_view id) {
  const std::string recs = sched_keys(id)[0];
  Result<Reply> r = router_.command(keys_.shard(0).slot, {"HGET", recs, id});
  if (!r) return r.status();
  if (r->type != Reply::Type::string) return std::optional<SchedRead>();
  Result<schedule::StoredSchedule> s = schedule::decode_schedule(r->str);
  if (!s) return Status(Errc::corrupt, "the schedule \"" + std::string(id) + "\": " + s.status().message());
  Result<schedule::Rule> rule = schedule::Rule::parse(s->spec.rule, s->spec.zone, s->anchor);
  if (!rule) return Status(Errc::corrupt, "the schedule \"" + std::string(id) + "\": " + rule.status().message());
  return std::optional<SchedRead>(SchedRead{std::move(r->str), std::move(*s), std::move(*rule)});
}

Result<bool> RedisQueue::cas_sched(std::string_view id, const std::string* expected,
                                   const schedule::StoredSchedule* next,
                                   const std::vector<std::pair<std::string, TimePoint>>& fired) {
  const ShardKeys& home = keys_.shard(0);
  std::vector<std::string> args = common_(home);
  args.emplace_back(id);
  args.emplace_back(expected ? "bytes" : next ? "absent" : "any");
  args.push_back(expected ? *expected : std::string());
  args.push_back(next ? schedule::encode_schedule(*next) : std::string());
  args.push_back(next && !next->paused && next->state.next ? us(*next->state.next) : std::string());
  for (const auto& [job, due] : fired) {
    args.push_back(job);
    args.push_back(std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      due.time_since_epoch()).count()));
  }
  Result<Reply> r = router_.eval(home.slot, kSched, sched_keys(id), std::move(args));
  if (!r) return r.status();
  const int64_t code = r->elements.empty() ? -1 : r->elements[0].as_int(-1);
  if (code == kOk) return true;
  if (code == kInvalidState) return false;
  if (code == kNotFound) return no_schedule(id);
  return bad_reply(kSched);
}

bool RedisQueue::job_lives(const std::string& id) {
  Result<JobInfo> r = get(id);
  return r.ok() && r->state != JobState::dead;
}

Duration RedisQueue::schedule_tick() const {
  // A manual clock's moves fire at once; the thread may look up to kSchedulePoll late.
  return opt_.clock && opt_.clock->manual() ? Duration::zero() : kSchedulePoll * 2;
}

Status RedisQueue::fire_sched(std::string_view id) {
  for (;;) {
    Result<std::optional<SchedRead>> read = read_sched(id);
    if (!read) return read.status();
    if (!*read) return {};  // unscheduled meanwhile
    SchedRead& cur = **read;
    const schedule::StoredSchedule& s = cur.stored;
    const TimePoint now = client_now();
    if (s.paused || !s.state.next || *s.state.next > now) return {};
    const bool previous_live = s.spec.overlap == ScheduleSpec::Overlap::skip &&
                               s.state.last_fired &&
                               job_lives(occurrence_job_id(s.spec.id, *s.state.last_fired));
    const schedule::Plan plan =
        schedule::plan(cur.rule, s.spec, s.state, now, schedule_tick(), previous_live);
    schedule::StoredSchedule next = s;
    schedule::apply(next.state, plan);
    std::vector<std::pair<std::string, TimePoint>> fired;
    for (TimePoint o : plan.fire) fired.emplace_back(occurrence_job_id(s.spec.id, o), o);
    Result<bool> won = cas_sched(id, &cur.bytes, &next, fired);
    if (!won) return won.status();
    if (!*won) continue;  // another client moved it: read again
    auto stop_at = [](FireStep step) {
      auto hook = fire_stop_hook.load();
      return hook != nullptr && hook(step);
    };
    if (stop_at(FireStep::after_fire)) return {};
    // Failed pushes stay pending: push_pending() pushes them after kPendingGrace.
    std::vector<std::string> jobs;
    std::vector<bool> pushed_now;
    Status failed;
    for (const auto& [job_id, due] : fired) {
      JobSpec job = s.spec.job;
      job.id = job_id;
      job.due_at = due;
      Result<bool> pushed = push_occurrence(std::move(job));
      if (!pushed) {
        failed = pushed.status();
        continue;
      }
      jobs.push_back(job_id);
      pushed_now.push_back(*pushed);
    }
    if (stop_at(FireStep::after_push)) return {};
    settle_occurrences(jobs, pushed_now);
    return failed;
  }
}

void RedisQueue::fire_schedules() {
  if (shut()) return;
  push_pending();
  const std::string due = sched_keys("")[1];
  Result<Reply> r = router_.command(keys_.shard(0).slot,
                                    {"ZRANGEBYSCORE", due, "-inf", us(client_now())});
  if (!r) return;
  for (const Reply& id : r->elements)
    if (!fire_sched(id.str).ok()) return;  // Redis unreachable: the next look tries again
}

void RedisQueue::run_schedules(std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock l(mu);
  while (!stop.stop_requested()) {
    l.unlock();
    fire_schedules();
    l.lock();
    cv.wait_for(l, stop, kSchedulePoll, [] { return false; });
  }
}

Status RedisQueue::schedule(const ScheduleSpec& spec) {
  if (shut()) return shut_status();
  const TimePoint now = client_now();
  Result<schedule::Rule> rule = schedule::check_schedule(spec, opt_.limits, now);
  if (!rule) return rule.status();
  for (;;) {
    Result<std::optional<SchedRead>> old = read_sched(spec.id);
    if (!old) return old.status();
    schedule::StoredSchedule stored{spec, spec.start.value_or(now), false, {}};
    if (!*old) {
      stored.state.next = schedule::first_occurrence(*rule, spec, now);
    } else {
      // As the engine: a replacement goes on from now, keeping the counters and the pause.
      const schedule::StoredSchedule& was = (*old)->stored;
      stored.paused = was.paused;
      stored.state = was.state;
      stored.state.next = schedule::replacement_next(*rule, spec, was.state, now, stored.anchor);
    }
    Result<bool> done = cas_sched(spec.id, *old ? &(*old)->bytes : nullptr, &stored, {});
    if (!done) return done.status();
    if (*done) break;
  }
  return fire_sched(spec.id);
}

Status RedisQueue::unschedule(std::string_view id) {
  if (shut()) return shut_status();
  Result<bool> r = cas_sched(id, nullptr, nullptr, {});
  return r ? Status() : r.status();
}

Status RedisQueue::set_schedule_paused(std::string_view id, bool paused) {
  if (shut()) return shut_status();
  for (;;) {
    Result<std::optional<SchedRead>> read = read_sched(id);
    if (!read) return read.status();
    if (!*read) return no_schedule(id);
    if ((*read)->stored.paused == paused) return {};
    schedule::StoredSchedule changed = (*read)->stored;
    changed.paused = paused;
    Result<bool> won = cas_sched(id, &(*read)->bytes, &changed, {});
    if (!won) return won.status();
    if (*won) break;
  }
  // Resumed: what fell while it was paused is missed (its catch-up policy), at once.
  return paused ? Status() : fire_sched(id);
}

Result<ScheduleInfo> RedisQueue::sched_info(SchedRead& cur) {
  const schedule::StoredSchedule& s = cur.stored;
  ScheduleInfo info = schedule::describe(s, cur.rule);
  Result<Reply> recent =
      router_.command(keys_.shard(0).slot, {"LRANGE", sched_keys(s.spec.id)[2], "0", "-1"});
  if (!recent) return recent.status();
  for (const Reply& j : recent->elements)
    if (job_lives(j.str)) info.live_jobs.push_back(j.str);
  return info;
}

Result<ScheduleInfo> RedisQueue::get_schedule(std::string_view id) {
  if (shut()) return shut_status();
  Result<std::optional<SchedRead>> read = read_sched(id);
  if (!read) return read.status();
  if (!*read) return no_schedule(id);
  return sched_info(**read);
}

Result<SchedulePage> RedisQueue::list_schedules(size_t limit, std::string_view cursor) {
  if (shut()) return shut_status();
  if (limit < 1 || limit > rules::kMaxListLimit)
    return Status(Errc::invalid_argument,
                  fmt::format("limit must be between 1 and {} schedules per page, got {}",
                              rules::kMaxListLimit, limit));
  const ShardKeys& home = keys_.shard(0);
  const std::vector<std::string> k = sched_keys("");
  // The ids' zset, made again if it does not hold every record (sched_index.lua).
  Result<Reply> indexed = router_.eval(home.slot, kSchedIndex, {k[0], k[4]}, common_(home));
  if (!indexed) return indexed.status();
  SchedulePage page;
  std::string from = cursor.empty() ? "-" : "(" + std::string(cursor);
  for (;;) {
    // One id more than the page lacks: if it is there, the page is not the last.
    const size_t ask = limit - page.schedules.size() + 1;
    Result<Reply> r = router_.command(home.slot, {"ZRANGEBYLEX", k[4], from, "+", "LIMIT", "0",
                                                  std::to_string(ask)});
    if (!r) return r.status();
    const std::vector<Reply>& ids = r->elements;
    size_t i = 0;
    for (; i < ids.size() && page.schedules.size() < limit; ++i) {
      Result<std::optional<SchedRead>> read = read_sched(ids[i].str);
      if (!read) return read.status();
      if (!*read) continue;  // unscheduled meanwhile
      Result<ScheduleInfo> info = sched_info(**read);
      if (!info) return info.status();
      page.schedules.push_back(std::move(*info));
    }
    if (i < ids.size()) {  // the page is full, and ids remain
      page.cursor = page.schedules.back().spec.id;
      return page;
    }
    if (ids.size() < ask) return page;  // every id read
    from = "(" + ids.back().str;
  }
}

}  // namespace delayq::redis
