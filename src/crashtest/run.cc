// delayq-crashtest's run (run.h).
#include "crashtest/run.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>
#include <vector>

#include "crash/check.h"

namespace delayq::crashtest {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;
using namespace crash;

namespace {

// Cycles per call of the harness: a multiple of its turns (4 sync modes, 1 and 2 shards, the
// disk tier on and off every 8), so that a run of N cycles makes the same choices whatever the
// chunks, and a progress line after each.
constexpr int kChunk = 8;

std::string kill_dir(const std::string& dir) {
  return dir + "/kill";
}
std::string power_dir(const std::string& dir) {
  return dir + "/power";
}

void clear_stores(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(kill_dir(dir), ec);
  fs::remove_all(power_dir(dir), ec);
}

CycleChoices choices_of(const Options& o, int first) {
  CycleChoices c;
  c.first = first;
  if (o.plant == "deliver-early") c.worker_fault = WorkerFault::early_delivery;
  if (o.plant == "worker-dies") c.worker_fault = WorkerFault::dies;
  if (o.sync) c.sync = [s = *o.sync](int) { return s; };
  if (o.tier == Tier::off) c.horizon = [](int) { return Duration::max(); };
  if (o.tier == Tier::on) c.horizon = [h = o.horizon](int) { return h; };
  return c;
}

// --plant-fault (options.h), the program's own tests: a fault planted in the run, that only this
// hidden flag plants. After a kill, before the check, the store is changed as a faulty disk or
// store could have changed it, through the Queue's own calls, once per run:
//   drop-answered-write  a waiting job whose push was answered is taken out (cancel);
//   resurrect-gone-job   a job the answered calls left gone is back (push with its id);
//   move-due-time        a waiting job's due time moves an hour later (reschedule).
// In the kill cycles' workers (WorkerFault, tests/crash/worker.h), until a promise breaks:
//   deliver-early        a delivery is reported due an hour later than the store said (a store
//                        that hands out a job an hour early);
//   worker-dies          the worker aborts 2 ms after its store opened.
// In the power-loss cycles:
//   batch-without-sync   the workers of the Sync::batch cycles run Sync::none, still checked as
//                        Sync::batch (a store that never syncs though asked to every 8 calls).
const char* worker_fault_text(WorkerFault f) {
  return f == WorkerFault::early_delivery
             ? "each kill cycle's worker reports its first delivery due an hour later than the "
               "store said (a store that hands out a job an hour early)"
             : "each kill cycle's worker aborts 2 ms after its store opened";
}

void plant_fault(const std::string& fault, Model& m, const std::string& dir, std::string& planted) {
  if (!planted.empty()) return;
  const bool resurrect = fault == "resurrect-gone-job";
  std::optional<uint64_t> target;
  for (uint64_t job : resurrect ? std::vector<uint64_t>() : m.live_jobs())
    if (!m.jobs[job].pushing && m.jobs[job].cands[0].st == St::waiting) {
      target = job;
      break;
    }
  if (resurrect) {
    uint64_t best = 0;
    for (const auto& [job, j] : m.jobs)
      if (!j.pushing && j.gone() && (best == 0 || job < best)) best = job;
    if (best != 0) target = best;
  }
  if (!target) return;  // none in this cycle: the next one
  StoreOptions so;
  so.dir = dir;
  so.sync = Sync::always;
  Result<DriverStore> q = open_in_driver(so);
  if (!q) {
    m.problem("--plant-fault: the store would not open: " + q.status().to_string());
    return;
  }
  const std::string id = job_id(*target);
  Status s;
  if (fault == "drop-answered-write") {
    s = (**q).cancel(id);
    planted = "the answered push of " + id + " dropped";
  } else if (resurrect) {
    s = (**q).push(spec_of(m.salt, *target, std::chrono::hours(1), m.threads)).status();
    planted = "the gone " + id + " pushed back";
  } else {
    s = (**q).reschedule(id, wall_now() + std::chrono::hours(1));
    planted = "the due time of " + id + " moved an hour later";
  }
  if (!s.ok()) m.problem("--plant-fault " + fault + ": " + id + ": " + s.to_string());
  planted += " after cycle " + std::to_string(m.cycle) + "'s kill";
}

// The last step of a mode: every job still owed must be delivered.
void finish(ModeRun& r, const std::string& store_dir, Steady::time_point t0) {
  if (r.m.problems.empty()) {
    r.m.cycle += 1;  // problems of the drain count as the cycle after the last
    DriverStore q = open_for_check(r.m, store_dir);
    if (q) drain(r.m, *q, &r.owed, &r.drained);
  }
  r.secs = std::chrono::duration<double>(Steady::now() - t0).count();
}

}  // namespace

std::string claim_dir(const std::string& dir, bool& made) {
  made = false;
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) {
    if (!fs::create_directory(dir, ec))
      return "cannot make --dir " + dir + ": " + (ec ? ec.message() : "it appeared meanwhile") +
             " (its parent must exist)";
    made = true;
  } else if (!fs::is_directory(st)) {
    return "--dir " + dir + " is not a directory";
  } else {
    bool ours = fs::exists(dir + "/" + kMarker, ec);
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      if (ours) break;
      return "--dir " + dir + " holds files delayq-crashtest did not make (" +
             e.path().filename().string() +
             "): give a new or empty directory on the volume to test";
    }
    if (ec) return "cannot read --dir " + dir + ": " + ec.message();
  }
  std::ofstream marker(dir + "/" + kMarker);
  marker << "made by delayq-crashtest: it may reuse and remove everything in this directory\n";
  if (!marker.flush()) {
    if (made) fs::remove(dir, ec);
    return "cannot write the marker file in --dir " + dir;
  }
  return "";
}

void cleanup(const std::string& dir, bool made) {
  clear_stores(dir);
  std::error_code ec;
  fs::remove(dir + "/" + kMarker, ec);
  if (made) fs::remove(dir, ec);  // only if empty: nothing but what the run made
}

RunResult run_cycles(const Options& o) {
  RunResult r;
  r.kill.asked = o.modes != Modes::power;
  r.power.asked = o.modes != Modes::kill;
  r.kill.m = new_model(o.seed, o.threads);
  r.power.m = new_model(o.seed ^ 0x90e4, o.threads);
  const Steady::time_point t0 = Steady::now();
  const Steady::time_point until = t0 + std::chrono::seconds(o.duration_s);
  const bool tty = isatty(STDERR_FILENO) == 1;
  auto wants = [&](const ModeRun& mr) {
    if (!mr.asked || !r.kill.m.problems.empty() || !r.power.m.problems.empty()) return false;
    return o.cycles > 0 ? mr.cycles < o.cycles : Steady::now() < until;
  };
  // What an interrupted run left (claim_dir() accepted it by its marker) goes first.
  clear_stores(o.dir);
  std::error_code ec;
  fs::create_directory(kill_dir(o.dir), ec);
  fs::create_directory(power_dir(o.dir), ec);
  double kill_secs = 0, power_secs = 0;
  while (wants(r.kill) || wants(r.power)) {
    if (wants(r.kill)) {
      const Steady::time_point c0 = Steady::now();
      const CycleChoices c = choices_of(o, r.kill.cycles);
      if (c.worker_fault != WorkerFault::none) r.planted = worker_fault_text(c.worker_fault);
      const int n = o.cycles > 0 ? std::min(kChunk, o.cycles - r.kill.cycles) : kChunk;
      std::function<void(Model&, const std::string&)> plant;
      if (!o.plant.empty() && c.worker_fault == WorkerFault::none &&
          o.plant != "batch-without-sync")
        plant = [&](Model& m, const std::string& d) { plant_fault(o.plant, m, d, r.planted); };
      run_kill_cycles(r.kill.m, n, o.seed ^ mix(static_cast<uint64_t>(r.kill.cycles) + 1),
                      kill_dir(o.dir), r.kill.kill, plant, c);
      r.kill.cycles = r.kill.kill.done_cycles;
      kill_secs += std::chrono::duration<double>(Steady::now() - c0).count();
    }
    if (wants(r.power)) {
      const Steady::time_point c0 = Steady::now();
      const CycleChoices c = choices_of(o, r.power.cycles);
      PowerPlan plan;
      plan.cycles = o.cycles > 0 ? std::min(kChunk, o.cycles - r.power.cycles) : kChunk;
      plan.seed = o.seed ^ mix(static_cast<uint64_t>(r.power.cycles) + 0x90e4);
      plan.checked_mode = c.sync ? c.sync : power_mode;
      plan.run_mode = plan.checked_mode;
      if (o.plant == "batch-without-sync") {
        plan.run_mode = [checked = plan.checked_mode](int cycle) {
          const Sync s = checked(cycle);
          return s == Sync::batch ? Sync::none : s;
        };
        r.planted =
            "the Sync::batch cycles' workers run Sync::none (never sync), checked as "
            "Sync::batch";
      }
      plan.first = r.power.cycles;
      plan.horizon = c.horizon;
      run_power_cycles(r.power.m, plan, power_dir(o.dir), r.power.power);
      r.power.cycles = r.power.power.done_cycles;
      power_secs += std::chrono::duration<double>(Steady::now() - c0).count();
    }
    if (o.progress) {
      const double secs = std::chrono::duration<double>(Steady::now() - t0).count();
      const size_t broken = r.kill.m.problems.size() + r.power.m.problems.size();
      std::fprintf(stderr, "%sdelayq-crashtest: %d kill and %d power-loss cycles, %.1f s, %s%s",
                   tty ? "\r" : "", r.kill.cycles, r.power.cycles, secs,
                   broken ? "a promise broke" : "every promise held so far", tty ? "" : "\n");
      std::fflush(stderr);
    }
  }
  if (o.progress && tty) std::fprintf(stderr, "\n");
  if (r.kill.asked) finish(r.kill, kill_dir(o.dir), Steady::now());
  if (r.power.asked) finish(r.power, power_dir(o.dir) + "/store", Steady::now());
  r.kill.secs += kill_secs;
  r.power.secs += power_secs;
  return r;
}

}  // namespace delayq::crashtest
