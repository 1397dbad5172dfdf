// The load's schedules (load.h) in the rule book and in a reopened store: what the reports allow
// of each (there or gone, paused or running, its rule), and the promise that a schedule's record
// and the job of each occurrence it fires are written together.
#include <algorithm>
#include <map>

#include "check.h"

namespace delayq::crash {

namespace {

std::string instant_text(const Model& m, int64_t ns) {
  return occurrence_job_id("", at_ns(ns)).substr(1) + " (" + m.rel(ns) + ")";
}

std::string may_text(uint8_t may, const char* yes, const char* no) {
  if (may == 3) return std::string(yes) + " or " + no;
  return may == 1 ? yes : no;
}

}  // namespace

bool is_schedule_call(Kind intent) {
  return intent == Kind::sched_intent || intent == Kind::unsched_intent ||
         intent == Kind::spause_intent || intent == Kind::sresume_intent ||
         intent == Kind::occ_intent;
}

bool Model::apply_schedule_intent(const Record& r) {
  occ_taken[r.thread].reset();
  if (r.kind == Kind::occ_intent) return true;
  if (r.kind == Kind::sched_intent && r.arg == 1) {
    if (r.job != next_schedule) {
      problem("the worker created " + schedule_id(r.job) + ", not the next new number " +
              std::to_string(next_schedule));
      return false;
    }
    next_schedule = r.job + 1;
    schedules[r.job] = ScheduleModel{};
    // Its rule's first occurrence is the instant of the call (its anchor): counted from there.
    schedules[r.job].reach = Span{r.t0, INT64_MAX};
    return true;
  }
  auto it = schedules.find(r.job);
  if (it == schedules.end() || it->second.exist_may != ScheduleModel::kMayExist) {
    problem(std::string("the worker called ") + call_name(r.kind) + " on " + schedule_id(r.job) +
            ", which may not exist");
    return false;
  }
  if (r.kind == Kind::sched_intent && r.n >= kScheduleRules.size()) {
    problem("a schedule() with rule " + std::to_string(r.n));
    return false;
  }
  // A replacement goes on from its own instant, by its rule: where the counters reach is
  // unknown until a reopened store shows it. A resume may fire what fell while it was paused.
  if (r.kind == Kind::sched_intent) it->second.reach.reset();
  if (r.kind == Kind::sresume_intent) it->second.paused_counters.reset();
  return true;
}

bool Model::apply_seen_schedule(const Record& r) {
  if (r.text[0] != '\0') {
    pending.schedule_wrong.push_back(text_of(r));
  } else if (r.kind == Kind::seen_occurrence) {
    pending.occurrences.emplace_back(r.job, r.due);
  } else {
    Observation::Schedule& sc = pending.schedules[r.job];
    sc.paused = r.attempt != 0;
    sc.rule = static_cast<int>(r.arg);
    sc.fired = r.n;
    if (r.lease != 0) sc.last_fired = r.due;
    sc.skipped_overlap = r.totals[0];
    sc.skipped_catch_up = r.totals[1];
    if (r.t1 != 0) sc.next = r.t0;
  }
  return true;
}

bool Model::apply_occurrence_delivery(const Record& r) {
  const std::optional<Record>& slot = in_flight[r.thread];
  auto it = schedules.find(r.job);
  if (!slot || slot->kind != Kind::occ_intent || it == schedules.end()) {
    problem("an occurrence job of " + schedule_id(r.job) + " delivered out of place");
    return false;
  }
  if (it->second.acked.count(r.due)) {
    problem("the occurrence " + instant_text(*this, r.due) + " of " + schedule_id(r.job) +
            " was delivered again after its ack returned");
    return false;
  }
  occ_taken[r.thread] = std::pair{r.job, r.due};
  return true;
}

bool Model::apply_schedule_outcome(const Record& r, const Record& intent) {
  const std::optional<std::pair<uint64_t, int64_t>> taken =
      std::exchange(occ_taken[intent.thread], std::nullopt);
  if (intent.kind == Kind::occ_intent) {
    if (!taken) {
      if (r.code == 0 || has_code(r, Errc::timeout)) return true;  // nothing to take
      problem("reserve on " + kScheduleTopic + " failed: " + text_of(r));
      return false;
    }
    // A lease that ran out before the ack (a stalled thread): the job is back, not acked.
    if (has_code(r, Errc::stale_token)) return true;
    if (r.code != 0) {
      problem("the ack of the occurrence " + instant_text(*this, taken->second) + " of " +
              schedule_id(taken->first) + " failed: " + text_of(r));
      return false;
    }
    schedules[taken->first].acked.insert(taken->second);
    ++counts.occurrences_acked;
    return true;
  }
  const std::string what = std::string(call_name(intent.kind)) + " of " + schedule_id(intent.job);
  if (r.code != 0) {
    problem(what + " failed: " + text_of(r));
    return false;
  }
  ScheduleModel& s = schedules[intent.job];
  switch (intent.kind) {
    case Kind::sched_intent:
      s.exist_may = ScheduleModel::kMayExist;
      s.rule_may = static_cast<uint8_t>(1u << intent.n);
      if (intent.arg == 1) s.pause_may = kMayRun;
      if (intent.arg == 1 && s.reach) s.reach->hi = r.t1;
      ++(intent.arg == 1 ? counts.schedules_created : counts.schedules_replaced);
      return true;
    case Kind::unsched_intent:
      s.exist_may = ScheduleModel::kMayBeGone;
      ++counts.unschedules;
      return true;
    case Kind::spause_intent:
      s.pause_may = kMayPause;
      ++counts.schedule_pauses;
      return true;
    default:
      s.pause_may = kMayRun;
      ++counts.schedule_resumes;
      return true;
  }
}

// A schedule call in flight at a kill: done or not.
void Model::settle_schedule(const Record& intent, int64_t kill_hi) {
  const std::optional<std::pair<uint64_t, int64_t>> taken =
      std::exchange(occ_taken[intent.thread], std::nullopt);
  if (intent.kind == Kind::occ_intent) {
    if (taken) schedules[taken->first].maybe_acked.insert(taken->second);
    return;
  }
  ScheduleModel& s = schedules[intent.job];
  switch (intent.kind) {
    case Kind::sched_intent:
      s.exist_may |= ScheduleModel::kMayExist;
      s.rule_may |= static_cast<uint8_t>(1u << intent.n);
      if (intent.arg == 1) s.pause_may = kMayRun;  // it was gone: running if there
      if (intent.arg == 1 && s.reach) s.reach->hi = kill_hi;
      return;
    case Kind::unsched_intent:
      s.exist_may |= ScheduleModel::kMayBeGone;
      return;
    case Kind::spause_intent:
      s.pause_may |= kMayPause;
      return;
    default:
      s.pause_may |= kMayRun;
      return;
  }
}

// Each schedule there or gone, paused or running and with a rule as the reports allow; and for
// each one there, its counters and the occurrence jobs in the store agree: the occurrences it
// counts as fired are exactly those whose job is in the store or was taken by an ack (`fired`
// of them, the latest last_fired), and no job of it is there twice; and none of its rule's
// occurrences due by the open is missing (check_occurrences_accounted()).
void check_schedules(Model& m, const Observation& o) {
  ++m.counts.schedule_looks;
  for (const std::string& w : o.schedule_wrong) m.problem("schedules after a reopen: " + w);
  if (o.occurrences.size() != o.occurrence_jobs)
    m.problem("list_jobs found " + std::to_string(o.occurrences.size()) + " jobs on " +
              kScheduleTopic + ", stats() counts " + std::to_string(o.occurrence_jobs));
  std::map<uint64_t, std::set<int64_t>> present;
  for (const auto& [n, instant] : o.occurrences) {
    if (!present[n].insert(instant).second)
      m.problem("the occurrence " + instant_text(m, instant) + " of " + schedule_id(n) +
                " has two jobs after a reopen");
    if (!m.schedules.count(n))
      m.problem("an occurrence job of " + schedule_id(n) + ", which the load never created");
  }
  for (const auto& [n, seen] : o.schedules)
    if (!m.schedules.count(n))
      m.problem(schedule_id(n) + " is in a reopened store, but the load never created it");
  for (auto& [n, s] : m.schedules) {
    const std::string name = schedule_id(n);
    static const std::set<int64_t> kNone;
    const auto p = present.find(n);
    const std::set<int64_t>& jobs = p == present.end() ? kNone : p->second;
    for (int64_t t : jobs)
      if (s.acked.count(t))
        m.problem("the occurrence " + instant_text(m, t) + " of " + name +
                  " has a job again after its ack returned");
    // An ack in flight at the kill took its job if, and only if, the job is gone.
    for (int64_t t : s.maybe_acked)
      if (!jobs.count(t)) s.acked.insert(t);
    s.maybe_acked.clear();
    auto seen = o.schedules.find(n);
    const uint8_t exists = seen != o.schedules.end() ? ScheduleModel::kMayExist
                                                     : ScheduleModel::kMayBeGone;
    if (!(s.exist_may & exists)) {
      m.problem(name + (exists == ScheduleModel::kMayExist ? " is" : " is not") +
                " in a reopened store; the reports allow it " +
                may_text(s.exist_may, "there", "gone"));
      continue;
    }
    s.exist_may = exists;
    if (seen == o.schedules.end()) continue;
    const Observation::Schedule& sc = seen->second;
    ++m.counts.seen_schedules;
    m.counts.seen_schedule_paused += sc.paused;
    m.counts.seen_fired += sc.fired;
    if (!(s.pause_may & (sc.paused ? Model::kMayPause : Model::kMayRun)))
      m.problem(name + (sc.paused ? " is paused" : " is running") +
                " in a reopened store; the reports allow it " +
                may_text(s.pause_may, "running", "paused"));
    s.pause_may = sc.paused ? Model::kMayPause : Model::kMayRun;
    if (sc.rule < 0 || !((s.rule_may >> sc.rule) & 1))
      m.problem(name + " has a rule the reports do not allow after a reopen (" +
                (sc.rule < 0 ? std::string("not one of the load's") : kScheduleRules[sc.rule]) +
                ")");
    if (sc.rule >= 0) s.rule_may = static_cast<uint8_t>(1u << sc.rule);
    std::set<int64_t> fired = jobs;
    fired.insert(s.acked.begin(), s.acked.end());
    const std::optional<int64_t> latest =
        fired.empty() ? std::nullopt : std::optional(*fired.rbegin());
    if (sc.fired != fired.size() || sc.last_fired != latest)
      m.problem(name + " counts " + std::to_string(sc.fired) + " occurrences fired, the last " +
                (sc.last_fired ? instant_text(m, *sc.last_fired) : std::string("none")) +
                "; the store holds " + std::to_string(jobs.size()) + " of its jobs and acks took " +
                std::to_string(s.acked.size()) + " (the latest " +
                (latest ? instant_text(m, *latest) : std::string("none")) +
                "): its record and its jobs were not written together");
    check_occurrences_accounted(m, n, sc, o.open_began);
  }
  m.counts.seen_occurrences += o.occurrences.size();
}

bool observe_schedules(Queue& q, Observation& o) {
  auto look_schedules = [&](std::map<uint64_t, Observation::Schedule>& out) {
    std::string cursor;
    do {
      Result<SchedulePage> p = q.list_schedules(1000, cursor);
      if (!p) {
        o.schedule_wrong.push_back("list_schedules failed: " + p.status().to_string());
        return;
      }
      for (const ScheduleInfo& info : p->schedules) {
        const std::optional<std::pair<uint64_t, int64_t>> n =
            parse_occurrence(info.spec.id + "@1970-01-01T00:00:00Z");
        if (!n) {
          o.schedule_wrong.push_back("a schedule the load never made: " + info.spec.id);
          continue;
        }
        Observation::Schedule& s = out[n->first];
        s.paused = info.paused;
        s.rule = rule_index(info.spec.rule);
        s.fired = info.fired;
        if (info.last_fired) s.last_fired = ns_of(*info.last_fired);
        s.skipped_overlap = info.skipped_overlap;
        s.skipped_catch_up = info.skipped_catch_up;
        if (!info.next.empty()) s.next = ns_of(info.next.front());
      }
      cursor = p->cursor;
    } while (!cursor.empty());
  };
  auto same = [](const std::map<uint64_t, Observation::Schedule>& a,
                 const std::map<uint64_t, Observation::Schedule>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
      return x.first == y.first && x.second.fired == y.second.fired &&
             x.second.last_fired == y.second.last_fired && x.second.next == y.second.next &&
             x.second.skipped_overlap == y.second.skipped_overlap &&
             x.second.skipped_catch_up == y.second.skipped_catch_up;
    });
  };
  // The store fires its schedules on a thread of its own while it is looked at: the jobs are
  // read between two reads of the schedules that agree, or read again.
  for (int attempt = 0; attempt < 50; ++attempt) {
    o.schedules.clear();
    o.occurrences.clear();
    o.schedule_wrong.clear();
    look_schedules(o.schedules);
    for (JobState state : {JobState::delayed, JobState::ready, JobState::reserved, JobState::dead}) {
      std::string cursor;
      do {
        Result<JobPage> p = q.list_jobs(kScheduleTopic, state, 1000, cursor);
        if (!p) {
          o.schedule_wrong.push_back("list_jobs of " + kScheduleTopic + " failed: " +
                                     p.status().to_string());
          break;
        }
        for (const JobInfo& j : p->jobs) {
          if (const auto occ = parse_occurrence(j.id))
            o.occurrences.push_back(*occ);
          else
            o.schedule_wrong.push_back("a job on " + kScheduleTopic + " that is no occurrence: " +
                                       j.id);
        }
        cursor = p->cursor;
      } while (!cursor.empty());
    }
    const Stats st = q.stats();
    std::map<uint64_t, Observation::Schedule> again;
    look_schedules(again);
    o.occurrence_jobs = jobs_on(st, kScheduleTopic);
    // A lease that ran out as the states were listed moves a job from one list to another.
    std::set<std::pair<uint64_t, int64_t>> distinct(o.occurrences.begin(), o.occurrences.end());
    if (same(o.schedules, again) && distinct.size() == o.occurrences.size() &&
        o.occurrences.size() == o.occurrence_jobs)
      return true;
  }
  return false;  // the last look stands, and its checks say what is wrong
}

std::vector<Record> schedule_records(const Observation& o) {
  std::vector<Record> out;
  for (const auto& [n, s] : o.schedules) {
    Record r = make_record(Kind::seen_schedule, n);
    r.attempt = s.paused;
    r.arg = s.rule;
    r.n = s.fired;
    r.lease = s.last_fired.has_value();
    r.due = s.last_fired.value_or(0);
    r.totals[0] = s.skipped_overlap;
    r.totals[1] = s.skipped_catch_up;
    r.t0 = s.next.value_or(0);
    r.t1 = s.next.has_value();
    out.push_back(r);
  }
  for (const std::string& w : o.schedule_wrong) {
    Record r = make_record(Kind::seen_occurrence);
    set_text(r, w);
    out.push_back(r);
  }
  for (const auto& [n, instant] : o.occurrences) {
    Record r = make_record(Kind::seen_occurrence, n);
    r.due = instant;
    out.push_back(r);
  }
  return out;
}

}  // namespace delayq::crash
