// The crash and power-loss harnesses of the durable store (tests/crash/ holds the harness).
//
// A driver (the test) forks a worker process that opens the store and runs a mixed load on it
// from two threads: push, push_batch, reserve, ack, ack_batch, nack, dead_letter, touch,
// release, cancel, reschedule, requeue_dead, requeue_dead_topic, purge_dead, pause and resume
// and schedules (and in the kill cycles limits and list_jobs, crash/load.h), on jobs with 3
// attempts and leases of 15 or 200 ms (so that dead letters happen: by nacks, dead_letter() and
// leases that run out). The worker reports every call's intent and outcome over a
// pipe; the driver kills it with SIGKILL after 10-80 ms and checks what a reopened store shows
// against its model of the reports: every job's state, due time, attempts and lease deadline
// (crash/model.h, crash/check.h). A consumer thread and a consume() loop in the worker take the
// jobs of one topic of each thread as they are pushed (crash/load.h).
//
//  - CrashHarness.SigkillsInEverySyncModeKeepEveryPromise: the kill cycles, every sync mode in
//    turn (a kill loses nothing answered in any of them).
//  - CrashHarness.PowerLossesLoseNoMoreThanEachSyncModePromises: a power loss after each kill
//    (crash/power.cc says what is checked per mode).
//  - The others show that the checks can fail: a store that never syncs checked as always and
//    batch, a batch that syncs every call; and (planted_loss_test.cc) a planted lost nack or
//    reschedule, a lost occurrence job or schedule, an occurrence neither fired nor skipped, and
//    after a power loss a lost occurrence job, a schedule that no prefix of the calls explains
//    or an occurrence neither fired nor skipped.
//
// Environment: DELAYQ_CRASH_CYCLES=N sets the number of kill cycles (a soak: 10000),
// DELAYQ_POWER_CYCLES=N the number of power-loss cycles, DELAYQ_CRASH_SEED=S replays a run's
// choices (its timings differ, so a replay is likely, not certain, to hit the same
// interleaving). Every failure message names the seed, and a failure about a job shows the
// job's recent history and what the harness expected of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <vector>

#include "crash/check.h"
#include "crash/driver.h"
#include "crash/harness_run.h"

namespace delayq::crash {
namespace {

// Cycles by default: the whole binary takes about a minute on this shared 2-core machine, in
// the RelWithDebInfo build (52 to 62 s) and under AddressSanitizer (54 to 57 s), most of it
// the workers' run times (the budget is 3 and 4 minutes). Under ThreadSanitizer, whose stage
// runs the harness for its threads, fewer (a cycle takes 3 to 4 times as long there). A run
// short of the evidence its checks need goes on past them (extend_until below).
constexpr int kKillCyclesPerMode = kUnderAsan ? 25 : kUnderTsan ? 10 : 50;
constexpr int kDefaultPowerCycles = kUnderAsan ? 80 : kUnderTsan ? 30 : 120;

void print_calls(const Model::Counts& c) {
  std::printf(
      "[ harness  ] calls that returned: %llu pushes, %llu push_batches, %llu deliveries, %llu "
      "acks, %llu nacks, %llu dead_letters, %llu touches, %llu releases, %llu cancels, %llu "
      "reschedules, %llu "
      "requeues, %llu purges (%llu jobs); %llu refused (stale token, wrong state)\n"
      "[ harness  ] reopened stores: %llu looked at; dead letters seen %llu times; in-flight "
      "calls found done %llu, not done %llu; deliveries never reported %llu\n",
      (unsigned long long)c.pushes, (unsigned long long)c.batches, (unsigned long long)c.deliveries,
      (unsigned long long)c.acks, (unsigned long long)c.nacks, (unsigned long long)c.dead_letters,
      (unsigned long long)c.touches, (unsigned long long)c.releases, (unsigned long long)c.cancels,
      (unsigned long long)c.reschedules, (unsigned long long)c.requeues,
      (unsigned long long)c.purges, (unsigned long long)c.purged, (unsigned long long)c.refused,
      (unsigned long long)c.observations, (unsigned long long)c.seen_dead,
      (unsigned long long)c.resolved_present, (unsigned long long)c.resolved_missing,
      (unsigned long long)c.unreported_deliveries);
  std::printf(
      "[ harness  ] and %llu ack_batches, %llu requeue_dead_topics (%llu jobs), %llu pauses, "
      "%llu resumes, %llu set_topic_limits, %llu clear_topic_limits, %llu list_jobs (%llu jobs "
      "listed); paused topics seen in reopened stores %llu times, limited ones %llu times\n",
      (unsigned long long)c.ack_batches, (unsigned long long)c.requeue_topics,
      (unsigned long long)c.requeued, (unsigned long long)c.pauses, (unsigned long long)c.resumes,
      (unsigned long long)c.limits_set, (unsigned long long)c.limits_cleared,
      (unsigned long long)c.lists, (unsigned long long)c.listed,
      (unsigned long long)c.seen_paused, (unsigned long long)c.seen_limited);
  std::printf(
      "[ harness  ] schedules: %llu created, %llu replaced, %llu unschedules, %llu "
      "pause_schedules, %llu resume_schedules, %llu occurrence jobs taken (reserve and ack); "
      "%llu schedules seen in %llu reopened stores (%llu paused, %llu occurrences counted as "
      "fired), %llu occurrence jobs listed in them; of those schedules %llu running with their "
      "next occurrence after the open, %llu reaching back to where they did before, %llu "
      "paused and unchanged\n",
      (unsigned long long)c.schedules_created, (unsigned long long)c.schedules_replaced,
      (unsigned long long)c.unschedules, (unsigned long long)c.schedule_pauses,
      (unsigned long long)c.schedule_resumes, (unsigned long long)c.occurrences_acked,
      (unsigned long long)c.seen_schedules, (unsigned long long)c.schedule_looks,
      (unsigned long long)c.seen_schedule_paused, (unsigned long long)c.seen_fired,
      (unsigned long long)c.seen_occurrences, (unsigned long long)c.caught_up,
      (unsigned long long)c.reach_checks, (unsigned long long)c.paused_unchanged);
}

// The calls of the load that must each have succeeded at least once, and what reopened stores
// must have shown at least once (dead letters, paused topics).
std::vector<uint64_t> load_calls(const Model::Counts& c) {
  return {c.batches,     c.acks,      c.nacks,          c.dead_letters, c.touches,  c.releases,
          c.cancels,     c.reschedules, c.requeues,     c.purges,       c.seen_dead, c.ack_batches,
          c.requeue_topics, c.pauses, c.resumes,        c.seen_paused,  c.consumed,
          c.early_deliveries};
}

bool every_call_seen(const Model::Counts& c) {
  for (uint64_t n : load_calls(c))
    if (n == 0) return false;
  return true;
}

// The schedule calls each returned, and reopened stores showed schedules with occurrences
// counted as fired, running ones caught up, and ones whose occurrences were checked all
// accounted for since an earlier look (or their creation).
bool schedules_seen(const Model::Counts& c) {
  return c.schedules_created > 0 && c.schedules_replaced > 0 && c.unschedules > 0 &&
         c.schedule_pauses > 0 && c.schedule_resumes > 0 && c.occurrences_acked > 0 &&
         c.seen_schedules > 0 && c.seen_fired > 0 && c.caught_up > 0 && c.reach_checks > 0;
}

// A harness whose workers never got going, or whose load skipped a call, proves nothing.
// `cycles`: those planned (a run extended past them on a slow machine is not held to more).
void expect_every_call(const Model::Counts& c, int cycles) {
  EXPECT_GE(c.opened, static_cast<uint64_t>(cycles / 2)) << "few workers opened the store";
  EXPECT_GE(c.pushes, static_cast<uint64_t>(cycles)) << "the workers pushed too little";
  EXPECT_GE(c.deliveries, static_cast<uint64_t>(cycles / 2)) << "too few deliveries";
  for (uint64_t n : load_calls(c))
    EXPECT_GT(n, 0u) << "a call of the load never succeeded (consume() and the consumer thread's "
                        "early reservations included), or no dead letter or paused topic was "
                        "ever seen in a reopened store";
}

// A slow machine (a sanitizer's build, a loaded host) answers fewer calls a cycle than the
// planned cycles assume, and where a kill lands moves with its timing. Rather than fail on a
// count that proves nothing about the store, a run goes on in chunks of a quarter of its planned
// cycles, up to three times as many cycles in all, until `enough` says the evidence its checks
// need is in; the checks then apply to the whole run. `more(first, n)` runs n more cycles
// numbered from `first`; `done` counts the cycles run.
void extend_until(int planned, const int& done, const Model& m, const std::function<bool()>& enough,
                  const std::function<void(int, int)>& more) {
  const int chunk = std::max(4, planned / 4);
  while (m.problems.empty() && done < 3 * planned && !enough()) more(done, chunk);
}

TEST(CrashHarness, SigkillsInEverySyncModeKeepEveryPromise) {
  const int cycles = static_cast<int>(env_u64("DELAYQ_CRASH_CYCLES", 4 * kKillCyclesPerMode));
  HarnessRun run("DELAYQ_CRASH_CYCLES", cycles);
  SCOPED_TRACE(run.replay);
  ASSERT_FALSE(run.dir.path().empty()) << "mkdtemp failed";
  Model& m = run.m;
  KillTally t;
  run_kill_cycles(m, cycles, run.seed, run.dir.path(), t);
  extend_until(
      cycles, t.done_cycles, m,
      [&] {
        const Model::Counts& c = m.counts;
        return every_call_seen(c) && schedules_seen(c) && c.limits_set > 0 &&
               c.limits_cleared > 0 && c.seen_limited > 0 && c.listed > 0 &&
               (kUnderTsan || t.mid_refill > 0);
      },
      [&](int first, int n) {
        run_kill_cycles(m, n, run.seed ^ mix(static_cast<uint64_t>(first)), run.dir.path(), t, {},
                        CycleChoices{.first = first});
      });
  run.finish(run.dir.path());

  const int opened = t.done_cycles - t.killed_before_open;
  std::printf(
      "[ harness  ] %s%d kill cycles (always %d, batch %d, periodic %d, none %d; %d with the disk "
      "tier) in %.1f s, %s\n"
      "[ harness  ] kills: %d before the store was open, %d with a call that writes in flight, "
      "%d during a RocksDB flush or compaction, %d during a disk-tier refill's write (of %llu "
      "refills); %d workers reopened a store a kill had left\n",
      kUnderAsan ? "ASan, " : "", t.done_cycles, t.per_mode[0], t.per_mode[1], t.per_mode[2],
      t.per_mode[3], t.tiered, run.secs, run.replay.c_str(), t.killed_before_open, t.mid_write,
      t.mid_background, t.mid_refill, (unsigned long long)m.counts.refills, t.worker_reopened);
  print_calls(m.counts);
  std::printf(
      "[ harness  ] the consumer thread reserved %llu jobs before their push returned; %llu "
      "pushes in flight at a kill were kept because such a reservation had returned; consume() "
      "handled %llu jobs\n",
      (unsigned long long)m.counts.early_deliveries,
      (unsigned long long)m.counts.kept_by_reservation, (unsigned long long)m.counts.consumed);
  std::printf("[ harness  ] drain: %llu of %zu owed jobs delivered\n",
              (unsigned long long)run.drained, run.owed);
  if (!m.problems.empty() || t.done_cycles < 20) return;
  expect_every_call(m.counts, cycles);
  // Limits are set and cleared in the kill cycles only (loop.cc), and seen in reopened stores.
  EXPECT_GT(m.counts.limits_set, 0u);
  EXPECT_GT(m.counts.limits_cleared, 0u);
  EXPECT_GT(m.counts.seen_limited, 0u) << "no reopened store showed a topic's limits";
  // So is browsing, and its pages list jobs (each checked in the worker, browse.cc).
  EXPECT_GT(m.counts.lists, 0u);
  EXPECT_GT(m.counts.listed, 0u) << "list_jobs never listed a job";
  EXPECT_TRUE(schedules_seen(m.counts)) << "a schedule call never returned, or no reopened store "
                                           "showed a schedule that had fired";
  EXPECT_GE(t.worker_reopened, t.done_cycles / 5) << "too few workers reopened a killed store";
  EXPECT_GE(t.tiered, t.done_cycles / 3) << "too few cycles with the disk tier";
  // The kills must land where they can do harm, in a good share of the cycles: during a call
  // that writes, during a flush or compaction, and (a third of the tiered cycles are killed as a
  // refill begins writing) before a refill's write is durable. Not under ThreadSanitizer: its
  // few (60) and slow cycles are there for the race detector, and where a kill lands is a matter
  // of timing it changes (one run there saw 1 kill during a flush where 60 cycles ask for 2);
  // the normal and AddressSanitizer builds require all three.
  if (!kUnderTsan) {
    EXPECT_GE(t.mid_write, opened / 5) << "too few kills landed during a call that writes";
    EXPECT_GE(t.mid_background, opened / 20)
        << "too few kills landed during a flush or compaction";
    // At least one: how many land there swings with the machine's load (1 to 16 in 80 cycles).
    EXPECT_GT(t.mid_refill, 0) << "no kill landed during a disk-tier refill";
  }
}

TEST(CrashHarness, PowerLossesLoseNoMoreThanEachSyncModePromises) {
  const int cycles = static_cast<int>(env_u64("DELAYQ_POWER_CYCLES", kDefaultPowerCycles));
  HarnessRun run("DELAYQ_POWER_CYCLES", cycles);
  SCOPED_TRACE(run.replay);
  ASSERT_FALSE(run.dir.path().empty()) << "mkdtemp failed";
  Model& m = run.m;
  PowerTally t;
  run_power_cycles(m, PowerPlan{cycles, run.seed, power_mode, power_mode, false}, run.dir.path(),
                   t);
  extend_until(
      cycles, t.done_cycles, m,
      [&] {
        return every_call_seen(m.counts) && schedules_seen(m.counts) &&
               t.batch_cycles_to_tell >= kBatchCyclesToTell && t.consumers_lost > 0 &&
               (kUnderTsan || (t.mid_background > 0 && t.mid_refill > 0));
      },
      [&](int first, int n) {
        run_power_cycles(m,
                         PowerPlan{n, run.seed ^ mix(static_cast<uint64_t>(first)), power_mode,
                                   power_mode, false, first},
                         run.dir.path(), t);
      });
  run.finish(run.dir.path() + "/store");

  std::printf("[ harness  ] %s%d power-loss cycles (%d with the disk tier) in %.1f s, %s\n",
              kUnderAsan ? "ASan, " : "", t.done_cycles, t.tiered, run.secs, run.replay.c_str());
  for (Sync s : kModes) {
    const size_t i = mode_index(s);
    std::printf(
        "[ harness  ]   Sync::%s: %d cycles, answered calls lost %llu (at most %llu at once), "
        "%d cycles kept calls answered in the cycle\n",
        to_string(s), t.cycles[i], (unsigned long long)t.lost[i], (unsigned long long)t.max_lost[i],
        t.kept_some[i]);
  }
  print_calls(m.counts);
  std::printf(
      "[ harness  ] power losses: %llu syncs recorded; %llu of %llu files cut, %llu bytes "
      "dropped; %llu unsynced tails partly kept; never-synced files: %llu deleted, %llu "
      "emptied; %d during a flush or compaction, %d during a disk-tier refill's write (of %llu "
      "refills), %d before the store was open\n"
      "[ harness  ] drain: %llu of %zu owed jobs delivered\n",
      (unsigned long long)t.syncs_recorded, (unsigned long long)t.fs.cut,
      (unsigned long long)t.fs.files, (unsigned long long)t.fs.bytes_dropped,
      (unsigned long long)t.fs.unsynced_tails_kept, (unsigned long long)t.fs.never_synced_deleted,
      (unsigned long long)t.fs.never_synced_emptied, t.mid_background, t.mid_refill,
      (unsigned long long)m.counts.refills, t.killed_before_open, (unsigned long long)run.drained,
      run.owed);
  std::printf(
      "[ harness  ] the consumer thread reserved %llu jobs before their push returned; consume() "
      "handled %llu jobs; power losses took %llu answered calls of the two; %d checks found a "
      "paused topic, %d a schedule; power losses took %llu answered schedule calls (occurrence "
      "acks included)\n",
      (unsigned long long)m.counts.early_deliveries, (unsigned long long)m.counts.consumed,
      (unsigned long long)t.consumers_lost, t.pauses_seen, t.schedules_seen,
      (unsigned long long)t.schedule_calls_lost);
  if (!m.problems.empty() || t.done_cycles < 20) return;
  // A simulation that never dropped a byte, or workers that never got going, would pass
  // without proving anything; and Sync::batch must not be Sync::always in disguise.
  EXPECT_GT(t.syncs_recorded, 0u) << "no sync was recorded: is the recording file system used?";
  EXPECT_GT(t.fs.bytes_dropped, 0u) << "no power loss dropped anything";
  expect_every_call(m.counts, cycles);
  // The consumers ran, raced the pushes, and lost calls to power losses, which the prefix
  // search had to place among the other threads' calls (prefix.h).
  EXPECT_GT(t.consumers_lost, 0u) << "no power loss took an answered call of the consumers";
  // Thread 0's schedule calls ran in the power-loss cycles too, and were checked against what
  // reopened stores showed of schedules that had fired (crash/power_schedules.cc).
  EXPECT_TRUE(schedules_seen(m.counts)) << "a schedule call never returned, or no store reopened "
                                           "after a power loss showed a schedule that had fired";
  // The batch check says nothing below kBatchCyclesToTell qualifying cycles: a run must reach it.
  EXPECT_GE(t.batch_cycles_to_tell, kBatchCyclesToTell)
      << "too few Sync::batch cycles answered enough calls to tell whether batch ever loses";
  const std::string batch = batch_that_never_lost(t);
  EXPECT_TRUE(batch.empty()) << batch;
  // Where the cuts landed: some while RocksDB flushed or compacted, some during a refill (not
  // under ThreadSanitizer, as in the kill cycles).
  if (!kUnderTsan) {
    EXPECT_GT(t.mid_background, 0) << "no power loss came during a flush or compaction";
    EXPECT_GT(t.mid_refill, 0) << "no power loss came during a disk-tier refill";
  }
  EXPECT_GE(t.tiered, t.done_cycles / 3) << "too few cycles with the disk tier";
}

// ---- the checks can fail -----------------------------------------------------------------------

// The checks after a power loss catch a store that does not sync: a worker running Sync::none,
// checked as if it ran Sync::always and then Sync::batch, loses answered calls, and the driver
// must say so within a few cycles.
TEST(CrashHarness, PowerLossChecksCatchAStoreThatDoesNotSync) {
  const uint64_t seed = random_seed();
  SCOPED_TRACE(replay_text(seed));
  for (const Sync promised : {Sync::always, Sync::batch}) {
    TempDir root;
    ASSERT_FALSE(root.path().empty()) << "mkdtemp failed";
    Model m = new_model(seed);
    PowerTally t;
    const PowerPlan plan{20, seed ^ mix(static_cast<uint64_t>(promised)),
                         [](int) { return Sync::none; }, [promised](int) { return promised; },
                         /*from_open_only=*/true};
    run_power_cycles(m, plan, root.path(), t);
    ASSERT_FALSE(m.problems.empty())
        << t.done_cycles
        << " power losses of a store that never syncs, checked as Sync::" << to_string(promised)
        << ", found nothing wrong";
    // The failure must be the lost calls, not something else that went wrong.
    const std::string& first = m.problems.front();
    EXPECT_NE(first.find("answered calls that changed the queue"), std::string::npos) << first;
    std::printf("[ harness  ] Sync::none checked as Sync::%s: caught in cycle %d: %s\n",
                to_string(promised), t.done_cycles - 1, first.substr(0, first.find('\n')).c_str());
  }
}

// The check that Sync::batch loses something catches a store that syncs every call: a worker
// running Sync::always, checked as Sync::batch, never loses an answered call.
TEST(CrashHarness, BatchCheckCatchesAStoreThatSyncsEveryCall) {
  HarnessRun run;
  SCOPED_TRACE(run.replay);
  ASSERT_FALSE(run.dir.path().empty()) << "mkdtemp failed";
  PowerTally t;
  const auto plan = [&](int first, int n) {
    return PowerPlan{n,
                     run.seed ^ mix(static_cast<uint64_t>(first)),
                     [](int) { return Sync::always; },
                     [](int) { return Sync::batch; },
                     /*from_open_only=*/true,
                     first};
  };
  run_power_cycles(run.m, plan(0, 16), run.dir.path(), t);
  // Cycles that answered too few calls cannot tell (kBatchCyclesToTell): more, as above.
  extend_until(
      16, t.done_cycles, run.m, [&] { return t.batch_cycles_to_tell >= kBatchCyclesToTell; },
      [&](int first, int n) { run_power_cycles(run.m, plan(first, n), run.dir.path(), t); });
  report_problems(run.m);
  const std::string caught = batch_that_never_lost(t);
  EXPECT_FALSE(caught.empty()) << t.done_cycles << " cycles (" << t.batch_cycles_to_tell
                               << " with enough calls): the check did not fire";
  std::printf("[ harness  ] Sync::always checked as Sync::batch: %s\n", caught.c_str());
}

}  // namespace
}  // namespace delayq::crash
