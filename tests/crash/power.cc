// The power-loss cycles (driver.h).
//
// The same load, worker and reports as the kill cycles (the consumer thread and consume()
// included), with a power loss instead of a bare SIGKILL: the worker's store runs on a file
// system that records what each successful sync covered (power_loss_fs.h); after the kill the
// driver cuts every file back to what was durable, then reopens the store on the real file
// system and checks what the worker's sync mode promises. Between cycles the driver's own clean
// close counts as a shutdown that synced everything.
//
// What each mode promises (delayq/store.h), and how it is checked:
//  - every mode: what comes back is the queue as it was after some prefix of the calls
//    (prefix.h), each job's state, due time, attempts and lease included, and each topic paused
//    or running as those calls left it; each of the load's schedules (thread 0 calls them,
//    load.h) there or gone, paused or running and with its rule as the same prefix of thread 0's
//    calls left it; and each schedule's record and the jobs of the occurrences it fired written
//    together: the occurrences it counts are its jobs in the store and the earliest of the acked
//    ones whose job is gone, the latest of them its last_fired, no occurrence with two jobs
//    (power_schedules.cc), the acks this finds kept or lost fitting that same prefix. The
//    occurrences the store fires on its own are no call of any lane: their jobs are not among
//    those the prefix search compares (they are on a topic of their own, kScheduleTopic).
//  - Sync::always: nothing answered is lost: the prefix found loses no answered call (schedule
//    calls included), and the store passes the same check as after a bare kill (check.h), its
//    schedules' included.
//  - Sync::batch: at most sync_batch_ops - 1 answered calls lost. sync_batch_ops is 8 here and
//    sync_interval 10 s, so that only the count can trigger a sync within a cycle. And batch is
//    not always: over a run, some power loss takes answered calls (batch_that_never_lost()).
//  - Sync::periodic and Sync::none: a prefix of any length.
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "check.h"
#include "driver.h"
#include "prefix.h"

namespace delayq::crash {

namespace {

constexpr Duration kPowerBatchInterval = 10s;  // long: within a cycle only the count syncs
constexpr Duration kPowerPeriodicInterval = 15ms;

// After a power loss: the store must be the queue after some prefix of the calls, losing no
// more answered calls than `checked` allows, and keep every other promise.
void check_after_power_loss(Model& m, Queue& q, int64_t open_began,
                            const std::unordered_map<uint64_t, JobModel>& before,
                            uint32_t paused_before,
                            const std::map<uint64_t, ScheduleModel>& schedules_before,
                            Sync checked, int64_t kill_hi, size_t shards, const std::string& cut,
                            PowerTally& tally) {
  const Observation o = observe(q, m, open_began);
  const size_t problems_before = m.problems.size();
  const PowerSchedules sched = schedules_after_power_loss(m, schedules_before, o);
  if (m.problems.size() != problems_before) {
    m.problems.back() += "\n  the power loss cut the store's files:" + cut;
    return;
  }
  const PrefixVerdict v =
      explain_by_prefix(before, m.cycle_records, o.jobs, kill_hi, shards, m.origin,
                        {paused_before, o.paused}, m.consumer, m.threads, sched.prefix);
  if (!v.explained) {
    std::string s = "after the power loss the store is not the queue as it was after any ";
    s += "prefix of the calls: " + v.why;
    for (uint64_t job : v.suspects) s += m.explain(job);
    m.problem(s + "\n  the power loss cut the store's files:" + cut);
    return;
  }
  const size_t mi = mode_index(checked);
  tally.max_lost[mi] = std::max(tally.max_lost[mi], v.lost);
  tally.lost[mi] += v.lost;
  tally.kept_some[mi] += v.answered > v.lost;
  tally.batch_cycles_to_tell += checked == Sync::batch && v.answered >= 2 * kPowerBatchOps;
  tally.consumers_lost += v.lost_in[kConsumerLane] + v.lost_in[kConsumeLane];
  tally.pauses_seen += o.paused != 0;
  tally.schedule_calls_lost += v.lost_schedule_calls;
  tally.schedules_seen += !o.schedules.empty();
  if (const std::optional<uint64_t> allowed = allowed_loss(checked); allowed && v.lost > *allowed) {
    std::string s = "the power loss took " + std::to_string(v.lost) +
                    " answered calls that changed the queue, at the least (calls kept of those " +
                    "made:";
    for (size_t l = 0; l < kLanes; ++l) {
      if (l >= m.threads && l < kMaxThreads) continue;  // no such thread in this run
      s += std::string(l ? "," : "") + " " + lane_name(l) + " " + std::to_string(v.kept[l]) +
           " of " + std::to_string(v.calls[l]);
    }
    s += "); Sync::" + std::string(to_string(checked)) + " allows " + std::to_string(*allowed) +
         ". Lost:";
    for (const std::string& c : v.lost_calls) s += "\n    " + c;
    if (v.lost > v.lost_calls.size()) s += "\n    ...";
    m.problem(s);
    return;
  }
  if (checked == Sync::always) {
    // Nothing answered lost: the same check as after a bare kill.
    m.settle_in_flight(kill_hi);
  } else {
    // The prefix found is the queue now.
    m.in_flight = {};
    m.listed = {};
    m.unreported = {};
    for (auto& [job, j] : m.jobs) j.cands = {rec_of(o.jobs.at(job))};
    m.take_pauses(o.paused);  // as the prefix search found them
    take_schedules(m, o, sched);
  }
  check_observation(m, o);
}

}  // namespace

std::optional<uint64_t> allowed_loss(Sync s) {
  switch (s) {
    case Sync::always:
      return 0;
    case Sync::batch:
      return kPowerBatchOps - 1;
    case Sync::periodic:
    case Sync::none:
      return std::nullopt;
  }
  return std::nullopt;
}

// Sync::always 4 cycles in 10 (its promise is the strongest), batch 3, periodic 2, none 1.
Sync power_mode(int cycle) {
  switch (cycle % 10) {
    case 1:
    case 4:
    case 7:
      return Sync::batch;
    case 3:
    case 8:
      return Sync::periodic;
    case 5:
      return Sync::none;
    default:
      return Sync::always;
  }
}

std::string batch_that_never_lost(const PowerTally& t) {
  const size_t b = mode_index(Sync::batch);
  if (t.batch_cycles_to_tell < kBatchCyclesToTell || t.lost[b] > 0) return "";
  return std::to_string(t.batch_cycles_to_tell) + " power losses after at least " +
         std::to_string(2 * kPowerBatchOps) + " answered calls of a Sync::batch store " +
         "(sync_batch_ops " + std::to_string(kPowerBatchOps) + ", sync_interval " +
         std::to_string(
             std::chrono::duration_cast<std::chrono::seconds>(kPowerBatchInterval).count()) +
         " s) took no answered call: it syncs every call, as Sync::always would";
}

void run_power_cycles(Model& m, const PowerPlan& plan, const std::string& root, PowerTally& t) {
  const std::string store = root + "/store";
  const std::string side_log = root + "/synced.log";  // outside the store: no power loss cuts it
  std::mt19937_64 rng(plan.seed);
  power_loss::Ledger ledger;
  m.consumer = true;  // the consumer thread and consume() in every worker (load.h)
  for (int i = 0; i < plan.cycles && m.problems.empty(); ++i) {
    const int cycle = plan.first + i;
    m.cycle = cycle;
    const Sync mode = plan.run_mode(cycle);
    const Sync checked = plan.checked_mode(cycle);
    const size_t shards = cycle % 3 == 2 ? 2 : 1;
    const Duration horizon = plan.horizon ? plan.horizon(cycle) : horizon_of(cycle);
    m.cycle_label =
        std::string("power loss, Sync::") + to_string(checked) +
        (mode != checked ? std::string(" promised, the worker ran Sync::") + to_string(mode)
                         : std::string()) +
        ", " + std::to_string(shards) + (shards == 1 ? " shard" : " shards") +
        horizon_label(horizon);
    const auto run = run_time(rng);
    const bool from_open = plan.from_open_only || rng() % 4 != 0;
    const uint64_t cut_seed = rng();  // the power loss's own choices (power_loss_fs.cc)
    const bool at_refill = kill_at_refill(horizon, rng);
    // Everything in the directory is durable now: the store was closed cleanly (by the last
    // cycle's driver) and, in this simulation, fully synced.
    if (Status s = ledger.reset_to(store); !s.ok()) {
      m.problem("power-loss ledger: " + s.to_string());
      break;
    }
    if (::truncate(side_log.c_str(), 0) != 0 && errno != ENOENT) {
      m.problem("truncating the side log: " + std::string(std::strerror(errno)));
      break;
    }
    WorkerSetup setup;
    setup.sync = mode;
    setup.shards = shards;
    setup.sync_batch_ops = kPowerBatchOps;
    setup.sync_interval = mode == Sync::periodic ? kPowerPeriodicInterval : kPowerBatchInterval;
    setup.sync_log = side_log;
    setup.horizon = horizon;
    t.tiered += horizon != Duration::max();

    const std::unordered_map<uint64_t, JobModel> before = m.jobs;
    const std::map<uint64_t, ScheduleModel> schedules_before = m.schedules;  // exact, as checked
    uint32_t paused_before = 0;  // exact: the last check took the store's
    for (size_t i = 0; i < kTopics.size(); ++i)
      paused_before |= static_cast<uint32_t>(m.pause_may[i] == Model::kMayPause) << i;
    m.cycle_records.clear();
    m.keep_cycle_records = true;
    const RunOutcome out = run_worker(m, store, plan.seed ^ mix(static_cast<uint64_t>(cycle) + 1),
                                      setup, run, from_open, at_refill);
    m.keep_cycle_records = false;
    t.killed_before_open += !out.opened;
    t.mid_background += out.background > 0;
    t.mid_refill += out.refilling > 0;
    ++t.done_cycles;
    ++t.cycles[mode_index(checked)];
    if (!m.problems.empty()) break;

    // The power goes out: every file keeps only what was durable.
    Status cut = ledger.apply_log(side_log);
    t.syncs_recorded += ledger.counts().synced;
    std::string report;
    if (cut.ok()) {
      std::mt19937_64 cut_rng(cut_seed);
      cut = power_loss::simulate_power_loss(store, ledger, cut_rng, t.fs, &report);
    }
    if (!cut.ok()) {
      m.problem("simulating the power loss: " + cut.to_string());
      break;
    }
    if (plan.plant) plan.plant(m, store);
    DriverStore q = open_for_check(m, store, horizon);
    if (!q) break;
    check_after_power_loss(m, *q, q.open_began(), before, paused_before, schedules_before,
                           checked, out.kill_hi, shards, report, t);
    if (i + 1 == plan.cycles) sweep_forgotten(*q, m);
  }  // the driver's store is closed before the next worker starts
  m.cycle_label.clear();
  m.cycle_records.clear();
}

}  // namespace delayq::crash
