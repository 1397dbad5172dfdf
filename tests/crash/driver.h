// The driver's side of the crash harness: forking workers, killing them, looking at what they
// left (a SIGKILL, or a power loss after it), and the cycles of both harnesses.
#pragma once

#include <rocksdb/env.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>

#include "delayq/store.h"
#include "fork_safe_env.h"
#include "model.h"
#include "power_loss_fs.h"
#include "temp_dir.h"
#include "worker.h"

#if defined(__SANITIZE_ADDRESS__)
#define DELAYQ_CRASH_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DELAYQ_CRASH_UNDER_ASAN 1
#endif
#endif
#ifndef DELAYQ_CRASH_UNDER_ASAN
#define DELAYQ_CRASH_UNDER_ASAN 0
#endif
#if defined(__SANITIZE_THREAD__)
#define DELAYQ_CRASH_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DELAYQ_CRASH_UNDER_TSAN 1
#endif
#endif
#ifndef DELAYQ_CRASH_UNDER_TSAN
#define DELAYQ_CRASH_UNDER_TSAN 0
#endif

namespace delayq::crash {

constexpr bool kUnderAsan = DELAYQ_CRASH_UNDER_ASAN != 0;
constexpr bool kUnderTsan = DELAYQ_CRASH_UNDER_TSAN != 0;
constexpr std::array<Sync, 4> kModes = {Sync::always, Sync::batch, Sync::periodic, Sync::none};
inline size_t mode_index(Sync s) {
  return static_cast<size_t>(s) % 4;
}

using testing::TempDir;

uint64_t env_u64(const char* name, uint64_t fallback);
uint64_t random_seed();  // DELAYQ_CRASH_SEED, or a random one

// A fresh model for a run with `seed` and `threads` worker threads (1 to kMaxThreads; the
// front ends check it).
Model new_model(uint64_t seed, size_t threads = kDefaultThreads);

// What one worker's run came to.
struct RunOutcome {
  bool opened = false;  // it reported its store open (the load started)
  int64_t kill_hi = 0;  // the clock once it was dead: it made no call after this
  int background = 0;   // RocksDB flushes and compactions running when it was killed
  int refilling = 0;    // disk-tier refills writing when it was killed
};

// How long a worker runs before the SIGKILL, counted from its report that the store is open (or,
// one cycle in four, from its fork): 10 to 80 ms (under ThreadSanitizer 40 to 320 ms).
std::chrono::milliseconds run_time(std::mt19937_64& rng);

// Forks a worker, lets it run for `run` (counted from the fork, or from its report that the
// store is open), kills it with SIGKILL and applies everything it reported. `at_refill`: kills
// it sooner, as soon as it reports a disk-tier refill writing (so that kills land in refills).
RunOutcome run_worker(Model& m, const std::string& dir, uint64_t worker_seed,
                      const WorkerSetup& setup, std::chrono::milliseconds run, bool from_open,
                      bool at_refill = false);

// Whether a cycle with the disk tier kills at the worker's first refill (one in three).
inline bool kill_at_refill(Duration horizon, std::mt19937_64& rng) {
  return horizon != Duration::max() && rng() % 3 == 0;
}

// A store the driver opened. Its RocksDB runs its background jobs on threads of its own
// (fork_safe_env.h), joined when it closes: the driver forks its workers with no thread but its
// own running (run_worker() checks), so that a worker starts as a whole process. (Under
// ThreadSanitizer a child of a process with several threads runs unchecked, and dies when it
// starts a thread.)
class DriverStore {
 public:
  DriverStore() = default;
  DriverStore(std::unique_ptr<rocksdb::Env> env, std::unique_ptr<Engine> q, int64_t open_began)
      : env_(std::move(env)), q_(std::move(q)), open_began_(open_began) {}
  explicit operator bool() const { return q_ != nullptr; }
  Engine& operator*() const { return *q_; }
  Engine* operator->() const { return q_.get(); }
  int64_t open_began() const { return open_began_; }  // the wall clock just before the open

 private:
  std::unique_ptr<rocksdb::Env> env_;  // outlives q_
  std::unique_ptr<Engine> q_;
  int64_t open_began_ = 0;
};
Result<DriverStore> open_in_driver(const StoreOptions& o);

// The threads running in this process besides the calling one (and, under ThreadSanitizer,
// the sanitizer's own background thread): a fork now would leave them behind, with whatever
// locks they hold, in a child that believes they exist. 0 if it cannot tell.
size_t stray_threads();

// Opens the store in the driver, as a check does, with the disk tier's horizon of the cycle.
DriverStore open_for_check(Model& m, const std::string& dir, Duration horizon = Duration::max());

// Whether a cycle's worker (and the driver's check) run with the disk tier: half the cycles, in
// runs of 8 (every sync mode, on 1 and 2 shards), so that stores pass from one to the other.
inline Duration horizon_of(int cycle) {
  return (cycle / 8) % 2 == 1 ? kTinyHorizon : Duration::max();
}
std::string horizon_label(Duration horizon);

// ---- kill cycles -------------------------------------------------------------------------------

struct KillTally {
  int done_cycles = 0;
  int killed_before_open = 0;
  int mid_write = 0;        // kills with a call that writes in flight
  int mid_background = 0;   // kills while RocksDB flushed or compacted
  int mid_refill = 0;       // kills while a disk-tier refill wrote
  int worker_reopened = 0;  // cycles whose worker opened the store the last one left
  int tiered = 0;           // cycles with the disk tier
  std::array<int, 4> per_mode{};
};

// What a front end may choose about the cycles (the tests take the defaults; delayq-crashtest
// sets them from its flags, src/crashtest/).
struct CycleChoices {
  // The number of the first cycle: a run made of several calls goes on numbering its cycles,
  // turning its sync modes, shards and disk tier as one call would.
  int first = 0;
  std::function<Sync(int)> sync;         // a cycle's sync mode; empty: the harness's own choice
  std::function<Duration(int)> horizon;  // a cycle's disk tier; empty: horizon_of()
  WorkerFault worker_fault = WorkerFault::none;  // every worker's (delayq-crashtest's tests)
};

// `cycles` kill cycles, in turn in every sync mode, on 1 and 2 shards; after about half of them
// the driver reopens the store and checks it, after the others the next worker does (and
// reports what it sees before its load starts). `plant`: called after each kill, before the
// check (the self-tests edit the store there).
void run_kill_cycles(Model& m, int cycles, uint64_t seed, const std::string& dir, KillTally& t,
                     const std::function<void(Model&, const std::string&)>& plant = {},
                     const CycleChoices& choices = {});

// ---- power-loss cycles -------------------------------------------------------------------------

struct PowerPlan {
  int cycles = 0;
  uint64_t seed = 0;
  // The mode a cycle's worker runs in, and the mode whose promise the driver checks: the same,
  // but for the tests of the checks themselves.
  std::function<Sync(int)> run_mode;
  std::function<Sync(int)> checked_mode;
  bool from_open_only = false;           // count every run from the worker's report that it opened
  int first = 0;                         // as in CycleChoices
  std::function<Duration(int)> horizon;  // as in CycleChoices
  // Called after each power loss, before the check (the self-tests edit the store there).
  std::function<void(Model&, const std::string&)> plant;
};

struct PowerTally {
  int done_cycles = 0;
  int tiered = 0;  // cycles with the disk tier
  int killed_before_open = 0;
  std::array<int, 4> cycles{};         // per mode (checked)
  std::array<uint64_t, 4> max_lost{};  // the most answered calls one power loss took, per mode
  std::array<uint64_t, 4> lost{};      // all of them, per mode
  std::array<int, 4> kept_some{};      // cycles in which calls answered in the cycle survived
  int batch_cycles_to_tell = 0;        // batch cycles with 2 * kPowerBatchOps answered calls
  uint64_t consumers_lost = 0;         // answered calls of the consumers a power loss took
  int pauses_seen = 0;                 // checks that found a paused topic
  int schedules_seen = 0;              // checks that found a schedule there
  uint64_t schedule_calls_lost = 0;    // answered schedule calls (and occurrence acks) lost
  uint64_t syncs_recorded = 0;
  int mid_background = 0;
  int mid_refill = 0;
  power_loss::PowerLossStats fs;
};

constexpr uint32_t kPowerBatchOps = 8;  // small, so that Sync::batch's bound bites
// Batch cycles with enough answered calls (2 * kPowerBatchOps) to expect some loss among them.
constexpr int kBatchCyclesToTell = 6;
// How many answered calls a power loss may take in a mode; nullopt: any number (the latest).
std::optional<uint64_t> allowed_loss(Sync s);
Sync power_mode(int cycle);

void run_power_cycles(Model& m, const PowerPlan& plan, const std::string& root, PowerTally& t);

// The promise that Sync::batch is not Sync::always: across a run with enough batch cycles, some
// power loss took answered calls. Empty when kept (or too few cycles to tell), else why not.
std::string batch_that_never_lost(const PowerTally& t);

}  // namespace delayq::crash
