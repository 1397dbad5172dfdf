// The checks of the kill cycles can fail: a call answered and then lost (a nack, a reschedule),
// or a broken schedule promise (an occurrence job its schedule counts, a schedule whose
// schedule() returned, an occurrence neither fired nor skipped), planted in the store between a
// kill and the check, must be caught. So can those of the power-loss cycles about schedules: an
// occurrence job its schedule counts, a schedule gone that no prefix of the calls leaves gone, or
// an occurrence neither fired nor skipped, planted after a power loss.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "crash/harness_run.h"
#include "engine/record.h"
#include "schedule/record.h"
#include "wal/journal.h"

namespace delayq::crash {
namespace {

// A call answered and then lost, planted in the store between a kill and the check: the
// reopened store must be caught showing the job as it was before that call.
struct Planted {
  std::string what;
  std::string caught_by;  // what the first problem the check finds must say
};

// Rewrites the stored record of job `id` with `edit` (through the journal, as the store writes
// it).
Status edit_stored(const std::string& dir, const std::string& id,
                   const std::function<void(engine::JobRecord&)>& edit) {
  // On RocksDB threads of its own, which end with it (DriverStore says why).
  const std::unique_ptr<rocksdb::Env> env = fork_safe_env(rocksdb::Env::Default());
  wal::JournalOptions o;
  o.env = env.get();
  Result<std::unique_ptr<wal::Journal>> j = wal::Journal::open(dir, o);
  if (!j) return j.status();
  std::optional<engine::JobRecord> found;
  Status s = (*j)->scan([&](engine::JobRecord&& r) {
    if (r.id == id) found = std::move(r);
    return Status();
  });
  if (!s.ok()) return s;
  if (!found) return Status(Errc::not_found, id + " is not in the store");
  edit(*found);
  // Read first: the write stores the journal's totals and counters with the change, and they
  // are the stored ones only once read.
  if (Result<Stats> t = (*j)->totals(); !t) return t.status();
  if (Result<engine::Counters> c = (*j)->counters(); !c) return c.status();
  return (*j)->write({engine::Change{found->seq, *found}});
}

// In the cycle just ended, a job whose last call was an answered nack (`nack`) or reschedule
// whose loss a check can tell: its record is put back to what it was before that call.
std::optional<Planted> plant_lost_call(Model& m, const std::string& dir, bool nack) {
  const int64_t now = ns_of(wall_now());
  for (uint64_t job : m.live_jobs()) {
    const std::vector<Model::Event>& ev = m.history[job];
    const size_t n = ev.size();
    if (n < 3 || ev[n - 3].cycle != m.cycle || ev[n - 1].r.code != 0) continue;
    const Record& prev = ev[n - 3].r;
    const Record& done = ev[n - 1].r;
    std::function<void(engine::JobRecord&)> edit;
    if (nack) {
      // Before the nack: reserved by `prev`, with a lease that will not run out before the
      // check and an attempt left (a lost nack of a last attempt, once the lease ran out, would
      // look like the nack: dead).
      if (done.kind != Kind::nack_done || prev.kind != Kind::reserved ||
          prev.attempt >= kMaxAttempts || ttr_of(job) != kLongTtr || prev.lease - now < 120'000'000)
        continue;
      edit = [&prev](engine::JobRecord& r) {
        r.state = JobState::reserved;
        r.due = at_ns(prev.due);
        r.lease_deadline = at_ns(prev.lease);
        r.attempts = prev.attempt;
        r.fence = prev.n;
      };
    } else {
      // Before the reschedule: due as pushed.
      if (done.kind != Kind::resched_done ||
          (prev.kind != Kind::push_done && prev.kind != Kind::batch_done))
        continue;
      const Span before = Span{prev.t0, prev.t1}.plus(Duration(prev.arg));
      const Span after = m.jobs[job].cands[0].due;
      if (before.hi + 1'000'000 > after.lo && before.lo < after.hi + 1'000'000) continue;
      edit = [before](engine::JobRecord& r) {
        r.state = JobState::delayed;
        r.due = at_ns(before.lo);
      };
    }
    if (Status s = edit_stored(dir, job_id(job), edit); !s.ok()) {
      m.problem("planting a lost call: " + s.to_string());
      return std::nullopt;
    }
    return Planted{std::string("lost ") + (nack ? "nack" : "reschedule") + " of " + job_id(job),
                   job_id(job) + ": a reopened store shows it"};
  }
  return std::nullopt;
}

using Plant = std::function<std::optional<Planted>(Model&, const std::string&)>;
using PlantHook = std::function<void(Model&, const std::string&)>;

// Runs cycles a chunk at a time (`more` runs one, calling its hook after each kill or power
// loss, and returns the cycles done so far), planting with `plant` until it plants something
// (at most `limit` cycles: a slow machine, a sanitizer's build, answers fewer calls a cycle); the
// check must then find it.
void expect_caught_within(const Plant& plant, const char* what, int limit,
                          const std::function<int(HarnessRun&, const PlantHook&)>& more) {
  HarnessRun run;
  SCOPED_TRACE(run.replay);
  ASSERT_FALSE(run.dir.path().empty()) << "mkdtemp failed";
  std::optional<Planted> planted;
  const PlantHook hook = [&](Model& m, const std::string& d) {
    if (!planted) planted = plant(m, d);
  };
  int done = 0;
  while (!planted && run.m.problems.empty() && done < limit) done = more(run, hook);
  ASSERT_TRUE(planted) << "in " << done << " cycles no " << what << " could be planted";
  ASSERT_FALSE(run.m.problems.empty()) << "the " << planted->what << " was not caught";
  const std::string& first = run.m.problems.front();
  EXPECT_NE(first.find(planted->caught_by), std::string::npos) << first;
  std::printf("[ harness  ] a %s, planted in cycle %d: caught: %s\n", planted->what.c_str(),
              done - 1, first.substr(0, first.find('\n')).c_str());
}

// Kill cycles, in chunks of 20, at most 160.
void expect_plant_caught(const Plant& plant, const char* what, const CycleChoices& choices = {}) {
  KillTally t;
  expect_caught_within(plant, what, 160, [&](HarnessRun& run, const PlantHook& hook) {
    CycleChoices chunk = choices;
    chunk.first = t.done_cycles;
    run_kill_cycles(run.m, 20, run.seed ^ mix(static_cast<uint64_t>(t.done_cycles)),
                    run.dir.path(), t, hook, chunk);
    return t.done_cycles;
  });
}

void expect_planted_loss_caught(bool nack) {
  expect_plant_caught([nack](Model& m, const std::string& d) { return plant_lost_call(m, d, nack); },
                      nack ? "lost answered nack" : "lost answered reschedule");
}

// The schedules a store opened in the driver lists that the model knows, with their numbers.
std::vector<std::pair<uint64_t, ScheduleInfo>> known_schedules(const Model& m, Queue& q) {
  std::vector<std::pair<uint64_t, ScheduleInfo>> out;
  Result<SchedulePage> page = q.list_schedules(1000);
  if (!page) return out;
  for (ScheduleInfo& info : page->schedules) {
    const auto n = parse_occurrence(info.spec.id + "@1970-01-01T00:00:00Z");
    if (n && m.schedules.count(n->first)) out.emplace_back(n->first, std::move(info));
  }
  return out;
}

// A broken schedule promise, planted between a kill and the check (through the store's own
// calls, on a store opened in the driver): the job of an occurrence its schedule counts as fired
// cancelled (`lose_job`), or a schedule whose schedule() returned unscheduled. Returns what was
// planted, or nothing when no schedule of the store fits yet.
std::optional<Planted> plant_schedule_loss(Model& m, const std::string& dir, bool lose_job) {
  DriverStore q = open_for_check(m, dir);
  if (!q) return std::nullopt;
  for (const auto& [n, info] : known_schedules(m, *q)) {
    const ScheduleModel& s = m.schedules[n];
    if (s.exist_may != ScheduleModel::kMayExist) continue;
    if (!lose_job) {
      if (Status st = q->unschedule(info.spec.id); !st.ok()) {
        m.problem("planting a lost schedule: " + st.to_string());
        return std::nullopt;
      }
      return Planted{"lost schedule: " + info.spec.id + ", whose schedule() returned, unscheduled",
                     info.spec.id + " is not in a reopened store"};
    }
    Result<JobPage> jobs = q->list_jobs(kScheduleTopic, JobState::ready, 1000);
    if (!jobs) return std::nullopt;
    for (const JobInfo& j : jobs->jobs) {
      const auto occ = parse_occurrence(j.id);
      // Not one an ack in flight at the kill may have taken: its absence would be allowed.
      if (!occ || occ->first != n || s.maybe_acked.count(occ->second)) continue;
      if (Status st = q->cancel(j.id); !st.ok()) {
        m.problem("planting a lost occurrence job: " + st.to_string());
        return std::nullopt;
      }
      return Planted{"lost occurrence job: " + j.id + ", of an occurrence " + info.spec.id +
                         " counts as fired, cancelled",
                     info.spec.id + " counts "};
    }
  }
  return std::nullopt;
}

void expect_schedule_loss_caught(bool lose_job) {
  CycleChoices no_tier;  // the driver opens the store to plant, as it does to check: without one
  no_tier.horizon = [](int) { return Duration::max(); };
  expect_plant_caught(
      [lose_job](Model& m, const std::string& d) { return plant_schedule_loss(m, d, lose_job); },
      lose_job ? "lost occurrence job" : "lost schedule", no_tier);
}

// An occurrence neither fired nor skipped, planted between a kill and the check: a schedule's
// stored record moved on past its next occurrence (through the journal, as the store writes it),
// its counters as they were, so that no store fires or skips that occurrence. Only a schedule
// whose reach (ScheduleModel::reach) the model knows to within less than an interval, there by
// the reports, with no schedule call in flight.
std::optional<Planted> plant_unaccounted_occurrence(Model& m, const std::string& dir) {
  std::optional<std::pair<uint64_t, schedule::StoredSchedule>> chosen;
  const std::unique_ptr<rocksdb::Env> env = fork_safe_env(rocksdb::Env::Default());
  wal::JournalOptions o;
  o.env = env.get();
  Result<std::unique_ptr<wal::Journal>> j = wal::Journal::open(dir, o);
  Result<std::vector<std::string>> records =
      j ? (*j)->schedules() : Result<std::vector<std::string>>(j.status());
  if (!records) {
    m.problem("planting an unaccounted occurrence: " + records.status().to_string());
    return std::nullopt;
  }
  for (const std::string& bytes : *records) {
    Result<schedule::StoredSchedule> stored = schedule::decode_schedule(bytes);
    if (!stored || !stored->state.next) continue;
    const auto n = parse_occurrence(stored->spec.id + "@1970-01-01T00:00:00Z");
    const int rule = rule_index(stored->spec.rule);
    if (!n || rule < 0 || !m.schedules.count(n->first)) continue;
    const ScheduleModel& s = m.schedules[n->first];
    if (s.exist_may != ScheduleModel::kMayExist || !s.reach ||
        s.reach->hi - s.reach->lo >= kScheduleIntervals[static_cast<size_t>(rule)].count())
      continue;
    stored->state.next = *stored->state.next + kScheduleIntervals[static_cast<size_t>(rule)];
    chosen.emplace(n->first, std::move(*stored));
    break;
  }
  if (!chosen) return std::nullopt;
  const schedule::StoredSchedule& edited = chosen->second;
  // Read first, so that the write keeps the stored totals and counters (it writes them too).
  if (!(*j)->totals() || !(*j)->counters()) {
    m.problem("planting an unaccounted occurrence: the totals or counters do not read");
    return std::nullopt;
  }
  Result<uint64_t> ticket = (*j)->append(
      {}, {}, {}, {},
      {engine::MetaPut{schedule::schedule_key(edited.spec.id), schedule::encode_schedule(edited)}});
  const Status s = ticket ? (*j)->sync_to(*ticket) : ticket.status();
  if (!s.ok()) {
    m.problem("planting an unaccounted occurrence: " + s.to_string());
    return std::nullopt;
  }
  return Planted{"schedule record moved past an occurrence uncounted (" + edited.spec.id +
                     "'s, on to " + occurrence_job_id("", *edited.state.next).substr(1) + ")",
                 "neither fired nor skipped"};
}

TEST(CrashHarness, ScheduleChecksCatchAnOccurrenceNeitherFiredNorSkipped) {
  expect_plant_caught(plant_unaccounted_occurrence, "occurrence neither fired nor skipped");
}

TEST(CrashHarness, ScheduleChecksCatchALostOccurrenceJob) {
  expect_schedule_loss_caught(true);
}
TEST(CrashHarness, ScheduleChecksCatchALostSchedule) {
  expect_schedule_loss_caught(false);
}

// ---- after a power loss ------------------------------------------------------------------------

// Power-loss cycles of Sync::batch (which may lose answered calls, so that its check of
// schedules is the power-loss one, power_schedules.cc and the prefix search, not the kill
// cycles'), in chunks of 10, at most 80.
void expect_power_plant_caught(const Plant& plant, const char* what) {
  PowerTally t;
  expect_caught_within(plant, what, 80, [&](HarnessRun& run, const PlantHook& hook) {
    PowerPlan plan;
    plan.cycles = 10;
    plan.seed = run.seed ^ mix(static_cast<uint64_t>(t.done_cycles));
    plan.run_mode = plan.checked_mode = [](int) { return Sync::batch; };
    plan.first = t.done_cycles;
    // The driver opens the store to plant, as it does to check: without a disk tier.
    plan.horizon = [](int) { return Duration::max(); };
    plan.plant = hook;
    run_power_cycles(run.m, plan, run.dir.path(), t);
    return t.done_cycles;
  });
}

// After a power loss: the job of the occurrence a schedule counts as its last fired cancelled
// (one no ack of the cycle took: a lost ack could leave its job, and a kept one take it).
std::optional<Planted> plant_lost_last_occurrence(Model& m, const std::string& dir) {
  DriverStore q = open_for_check(m, dir);
  if (!q) return std::nullopt;
  for (const auto& [n, info] : known_schedules(m, *q)) {
    if (!info.last_fired) continue;
    const ScheduleModel& s = m.schedules[n];
    const int64_t last = ns_of(*info.last_fired);
    const std::pair<uint64_t, int64_t> occ{n, last};
    if (s.acked.count(last) || s.maybe_acked.count(last) || m.occ_taken[0] == occ) continue;
    const std::string id = occurrence_job_id(info.spec.id, *info.last_fired);
    Result<JobInfo> job = q->get(id);
    if (!job || (job->state != JobState::ready && job->state != JobState::delayed)) continue;
    if (Status st = q->cancel(id); !st.ok()) {
      m.problem("planting a lost occurrence job: " + st.to_string());
      return std::nullopt;
    }
    return Planted{"lost occurrence job after a power loss: " + id + ", the last occurrence " +
                       info.spec.id + " counts as fired, cancelled",
                   info.spec.id + " after a power loss counts "};
  }
  return std::nullopt;
}

// After a power loss: a schedule that was there before the cycle, which no call of the cycle
// created or unscheduled, unscheduled: no prefix of the calls leaves it gone.
std::optional<Planted> plant_unexplained_schedule(Model& m, const std::string& dir) {
  std::set<uint64_t> touched;
  for (const Record& r : m.cycle_records)
    if ((r.kind == Kind::sched_intent && r.arg == 1) || r.kind == Kind::unsched_intent)
      touched.insert(r.job);
  for (const auto& [n, s] : m.schedules) {
    if (s.exist_may != ScheduleModel::kMayExist || touched.count(n)) continue;
    DriverStore q = open_for_check(m, dir);
    if (!q) return std::nullopt;
    if (Status st = q->unschedule(schedule_id(n)); !st.ok()) {
      m.problem("planting an unexplained schedule: " + st.to_string());
      return std::nullopt;
    }
    return Planted{"schedule no prefix explains after a power loss: " + schedule_id(n) +
                       ", there before the cycle and never unscheduled in it, unscheduled",
                   schedule_id(n) + " should be "};
  }
  return std::nullopt;
}

TEST(CrashHarness, PowerLossScheduleChecksCatchALostOccurrenceJob) {
  expect_power_plant_caught(plant_lost_last_occurrence, "lost occurrence job");
}
TEST(CrashHarness, PowerLossScheduleChecksCatchAnOccurrenceNeitherFiredNorSkipped) {
  expect_power_plant_caught(plant_unaccounted_occurrence, "occurrence neither fired nor skipped");
}
TEST(CrashHarness, PowerLossScheduleChecksCatchAScheduleNoPrefixExplains) {
  expect_power_plant_caught(plant_unexplained_schedule, "unexplained schedule");
}

TEST(CrashHarness, StateChecksCatchALostNack) {
  expect_planted_loss_caught(true);
}
TEST(CrashHarness, StateChecksCatchALostReschedule) {
  expect_planted_loss_caught(false);
}

}  // namespace
}  // namespace delayq::crash
