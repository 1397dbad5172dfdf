// Schedules after a power loss (check.h; power.cc calls these).
//
// What a reopened store may show of a schedule's occurrences, in every sync mode: the store
// writes a schedule's record with the job of each occurrence it fires (one write), and fires a
// schedule's occurrences in the order of their instants, so the record a power loss leaves counts
// exactly the occurrences fired up to some instant L (those of the run's writes that were kept),
// plus those the reopened store fired at its open (catch-up, after L, their jobs all there: no
// one took them yet). Each occurrence it counts has its job in the store, or an ack took it (an
// ack is written after its delivery, after the firing: a kept ack means a kept firing). So the
// acked occurrences the record counts are the earliest of those acked whose job is gone, as many
// as the record counts beyond the jobs there; the latest counted is its last_fired. Which acks of
// the cycle were kept follows, and the prefix search (prefix.h) must fit them, with the schedule
// calls, into thread 0's lane.
//
// So what is checked here, per schedule the load made: no occurrence whose ack the last check
// found kept has a job again (that ack was synced since); and for each schedule the store shows,
// its count of occurrences fired is at least its jobs there and at most those plus the acked
// occurrences whose job is gone, every ack the last check found kept is among the earliest it
// counts, and the latest occurrence it counts is its last_fired. What the cycle's acks then
// must have been (kept or lost) goes to the prefix search. A schedule the store no longer has
// says nothing of its acks but one whose job is back (lost). check_schedules() (schedules.cc)
// adds what it checks after a kill: no occurrence with two jobs, none of a schedule the load
// never made, list_jobs agreeing with stats().
#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "check.h"

namespace delayq::crash {

namespace {

std::string occ_text(uint64_t n, int64_t t, const Model& m) {
  return occurrence_job_id(schedule_id(n), at_ns(t)) + " (" + m.rel(t) + ")";
}

// The occurrences thread 0 took in the cycle and acked (the ack answered, or in flight at the
// kill), by schedule.
std::map<uint64_t, std::set<int64_t>> taken_in_cycle(const std::vector<Record>& records) {
  std::map<uint64_t, std::set<int64_t>> taken;
  std::array<std::optional<std::pair<uint64_t, int64_t>>, kWorkers> open;
  for (const Record& r : records) {
    if (r.thread >= kWorkers) continue;
    auto& at = open[r.thread];
    if (r.kind == Kind::occ_intent) {
      at.reset();
    } else if (r.kind == Kind::occ_reserved) {
      at = std::pair{r.job, r.due};
    } else if (r.kind == Kind::occ_done) {
      if (at && r.code == 0) taken[at->first].insert(at->second);
      at.reset();
    }
  }
  for (const auto& at : open)
    if (at) taken[at->first].insert(at->second);
  return taken;
}

}  // namespace

std::map<uint64_t, SchedState> schedules_there(const std::map<uint64_t, ScheduleModel>& s) {
  std::map<uint64_t, SchedState> out;
  for (const auto& [n, sm] : s) {
    if (sm.exist_may != ScheduleModel::kMayExist) continue;
    int rule = -1;
    for (size_t i = 0; i < kScheduleRules.size(); ++i)
      if ((sm.rule_may >> i) & 1) rule = static_cast<int>(i);
    out[n] = SchedState{sm.pause_may == Model::kMayPause, rule};
  }
  return out;
}

PowerSchedules schedules_after_power_loss(Model& m,
                                          const std::map<uint64_t, ScheduleModel>& before,
                                          const Observation& o) {
  PowerSchedules p;
  p.prefix.before = schedules_there(before);
  for (const auto& [n, sc] : o.schedules) p.prefix.seen[n] = SchedState{sc.paused, sc.rule};
  const std::map<uint64_t, std::set<int64_t>> taken = taken_in_cycle(m.cycle_records);
  std::map<uint64_t, std::set<int64_t>> present;
  for (const auto& [n, t] : o.occurrences) present[n].insert(t);
  static const std::set<int64_t> kNone;
  auto of = [](const auto& map, uint64_t n) -> const std::set<int64_t>& {
    auto it = map.find(n);
    return it == map.end() ? kNone : it->second;
  };
  for (const auto& entry : m.schedules) {
    const uint64_t n = entry.first;
    const std::string name = schedule_id(n);
    auto b = before.find(n);
    // Acks the last check found kept: synced since (the driver closed the store cleanly).
    const std::set<int64_t>& confirmed = b == before.end() ? kNone : b->second.acked;
    const std::set<int64_t>& jobs = of(present, n);
    const std::set<int64_t>& cycle = of(taken, n);
    for (int64_t t : confirmed)
      if (jobs.count(t))
        m.problem("the occurrence " + occ_text(n, t, m) + " has a job again after a power loss, " +
                  "although its ack was kept before the cycle");
    std::vector<int64_t> gone;  // acked, its job not in the store: sorted
    std::set_union(confirmed.begin(), confirmed.end(), cycle.begin(), cycle.end(),
                   std::back_inserter(gone));
    std::erase_if(gone, [&](int64_t t) { return jobs.count(t) != 0; });
    auto seen = o.schedules.find(n);
    if (seen == o.schedules.end()) {
      // Gone: an ack whose job is there was lost; one whose job is not, kept or lost with its
      // firing (nothing counts it now).
      for (int64_t t : cycle)
        if (jobs.count(t)) p.prefix.acks[{n, t}] = false;
      p.acked[n] = std::set<int64_t>(gone.begin(), gone.end());
      continue;
    }
    const Observation::Schedule& sc = seen->second;
    std::string why;
    if (sc.fired < jobs.size() || sc.fired - jobs.size() > gone.size()) {
      why = "the store holds " + std::to_string(jobs.size()) + " of its jobs and acks took at " +
            "most " + std::to_string(gone.size());
    } else {
      const std::set<int64_t> kept(gone.begin(), gone.begin() + (sc.fired - jobs.size()));
      for (int64_t t : confirmed)
        if (!kept.count(t) && why.empty())
          why = "the occurrence " + occ_text(n, t, m) + ", whose ack was kept before the cycle, " +
                "is not among them";
      std::optional<int64_t> latest;
      if (!jobs.empty()) latest = *jobs.rbegin();
      if (!kept.empty() && (!latest || *kept.rbegin() > *latest)) latest = *kept.rbegin();
      if (why.empty() && latest != sc.last_fired)
        why = "the latest of them is " + (latest ? occ_text(n, *latest, m) : "none");
      for (int64_t t : cycle) p.prefix.acks[{n, t}] = kept.count(t) != 0;
      p.acked[n] = kept;
    }
    if (!why.empty())
      m.problem(name + " after a power loss counts " + std::to_string(sc.fired) +
                " occurrences fired, the last " +
                (sc.last_fired ? occ_text(n, *sc.last_fired, m) : std::string("none")) +
                "; the occurrences it may count are its jobs in the store and the earliest of " +
                "those acked whose job is gone (" + why +
                "): its record and its jobs were not written together");
  }
  return p;
}

void take_schedules(Model& m, const Observation& o, const PowerSchedules& p) {
  m.occ_taken = {};
  for (auto& [n, s] : m.schedules) {
    auto seen = o.schedules.find(n);
    s.exist_may = seen != o.schedules.end() ? ScheduleModel::kMayExist : ScheduleModel::kMayBeGone;
    if (seen != o.schedules.end()) {
      s.pause_may = seen->second.paused ? Model::kMayPause : Model::kMayRun;
      if (seen->second.rule >= 0) s.rule_may = static_cast<uint8_t>(1u << seen->second.rule);
    }
    auto acked = p.acked.find(n);
    s.acked = acked == p.acked.end() ? std::set<int64_t>{} : acked->second;
    s.maybe_acked.clear();
  }
}

}  // namespace delayq::crash
