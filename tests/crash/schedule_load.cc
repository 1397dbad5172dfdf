// The schedule calls of the load (load.h), made by thread 0 in the kill and power-loss cycles:
// schedule() (create, or replace with one of kScheduleRules), unschedule, pause_schedule,
// resume_schedule, each on a schedule that the reports say exists (a new number to create one);
// and taking an occurrence job (reserve on kScheduleTopic without waiting, then ack at once).
#include <random>
#include <vector>

#include "worker_process.h"

namespace delayq::crash {

namespace {

int64_t now() {
  return ns_of(wall_now());
}

void take_occurrence(WorkerProcess& w, Record in) {
  in.kind = Kind::occ_intent;
  w.emit(in);
  Result<Delivery> d = w.q_->reserve({kScheduleTopic}, Duration::zero());
  if (!d.ok()) return w.emit(done_record(Kind::occ_done, in, d.status(), now()));
  const std::optional<std::pair<uint64_t, int64_t>> occ = parse_occurrence(d->id);
  if (!occ) w.fail_with("delivered from " + kScheduleTopic + " a job that is no occurrence: " + d->id, 6);
  Record got = make_record(Kind::occ_reserved, occ->first);
  got.thread = in.thread;
  got.due = occ->second;
  w.emit(got);
  Record done = done_record(Kind::occ_done, in, w.q_->ack(d->token), now());
  done.n = 1;
  w.emit(done);
}

}  // namespace

void schedule_call(WorkerProcess& w, size_t thread, std::mt19937_64& rng) {
  Record in = make_record(Kind::occ_intent);
  in.thread = static_cast<uint8_t>(thread);
  in.t0 = now();
  const uint64_t roll = rng() % 100;
  if (roll < 50) return take_occurrence(w, in);
  // The schedules that exist by the reports, and how many may.
  std::vector<uint64_t> there, paused;
  size_t may_exist = 0;
  {
    std::lock_guard lock(w.mu_);
    for (const auto& [n, s] : w.m_.schedules) {
      may_exist += (s.exist_may & ScheduleModel::kMayExist) != 0;
      if (s.exist_may != ScheduleModel::kMayExist) continue;
      there.push_back(n);
      if (s.pause_may & Model::kMayPause) paused.push_back(n);
    }
    if ((roll < 62 || there.empty()) && may_exist < kMaxSchedules) {
      in.kind = Kind::sched_intent;
      in.job = w.m_.next_schedule;
      in.n = rng() % kScheduleRules.size();
      in.arg = 1;
      w.emit_locked(in);
    }
  }
  if (in.kind == Kind::sched_intent) {
    const Status s = w.q_->schedule(schedule_spec(in.job, in.n));
    return w.emit(done_record(Kind::sched_done, in, s, now()));
  }
  if (there.empty()) return take_occurrence(w, in);
  in.job = there[rng() % there.size()];
  Status s;
  if (roll < 72) {
    in.kind = Kind::sched_intent;
    in.n = rng() % kScheduleRules.size();
    w.emit(in);
    s = w.q_->schedule(schedule_spec(in.job, in.n));
  } else if (roll < 80) {
    in.kind = Kind::unsched_intent;
    w.emit(in);
    s = w.q_->unschedule(schedule_id(in.job));
  } else if (roll < 88 || paused.empty()) {
    in.kind = Kind::spause_intent;
    w.emit(in);
    s = w.q_->pause_schedule(schedule_id(in.job));
  } else {
    in.job = paused[rng() % paused.size()];
    in.kind = Kind::sresume_intent;
    w.emit(in);
    s = w.q_->resume_schedule(schedule_id(in.job));
  }
  w.emit(done_record(done_of(in.kind), in, s, now()));
}

}  // namespace delayq::crash
