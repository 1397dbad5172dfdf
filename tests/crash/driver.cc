// The driver: workers forked, killed and looked at; the kill cycles (driver.h).
#include "driver.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <thread>

#include "check.h"
#include "wal/store_testing.h"

namespace delayq::crash {

using Steady = std::chrono::steady_clock;

constexpr int kMinRunMs = 10;
constexpr int kMaxRunMs = 80;

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 0);
  return (end != nullptr && *end == '\0') ? x : fallback;
}

uint64_t random_seed() {
  return env_u64("DELAYQ_CRASH_SEED",
                 (uint64_t{std::random_device()()} << 32) ^ std::random_device()());
}

Model new_model(uint64_t seed, size_t threads) {
  Model m;
  if (threads < 1 || threads > kMaxThreads)
    throw std::out_of_range("the crash harness runs 1 to " + std::to_string(kMaxThreads) +
                            " worker threads, not " + std::to_string(threads));
  m.threads = threads;
  m.salt = mix(seed ^ 0x5eed);
  m.origin = ns_of(wall_now());
  return m;
}

namespace {

// Reads whole records out of `buf` and applies them.
void apply_records(Model& m, std::string& buf) {
  size_t used = 0;
  while (buf.size() - used >= sizeof(Record)) {
    Record r;
    std::memcpy(&r, buf.data() + used, sizeof r);
    used += sizeof r;
    m.apply(r);
  }
  buf.erase(0, used);
}

}  // namespace

std::chrono::milliseconds run_time(std::mt19937_64& rng) {
  // Under ThreadSanitizer a worker's calls take 3 to 4 times as long: it runs 4 times as long, so
  // that a cycle answers about as many calls as elsewhere (the batch checks need 16 in a cycle).
  const int scale = kUnderTsan ? 4 : 1;
  return std::chrono::milliseconds(scale * (kMinRunMs + rng() % (kMaxRunMs - kMinRunMs + 1)));
}

RunOutcome run_worker(Model& m, const std::string& dir, uint64_t worker_seed,
                      const WorkerSetup& setup, std::chrono::milliseconds run, bool from_open,
                      bool at_refill) {
  RunOutcome out;
  int fds[2];
  if (pipe(fds) != 0) {
    m.problem(std::string("pipe: ") + std::strerror(errno));
    return out;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  m.background = 0;
  m.refilling = 0;
  m.pending = Observation{};  // what a worker killed while it looked had reported
  const uint64_t opened_before = m.counts.opened;
  const size_t problems_before = m.problems.size();
  if (const size_t n = stray_threads(); n > 0) {
    m.problem("the driver would fork a worker with " + std::to_string(n) +
              " threads of its own running (a store it opened left them?)");
    close(fds[0]);
    close(fds[1]);
    return out;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    m.problem(std::string("fork: ") + std::strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return out;
  }
  if (pid == 0) {
    close(fds[0]);
    worker_main(fds[1], m, worker_seed, dir, setup);
  }
  close(fds[1]);
  // A worker that takes this long to open the store is stuck: kill it anyway.
  const Steady::time_point open_limit = Steady::now() + 5s;
  Steady::time_point deadline = from_open ? open_limit : Steady::now() + run;
  std::string buf;
  char chunk[16 * sizeof(Record)];
  bool eof = false;
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Steady::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const ssize_t k = read(fds[0], chunk, sizeof chunk);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      eof = true;  // the worker ended before the kill
      break;
    }
    buf.append(chunk, static_cast<size_t>(k));
    apply_records(m, buf);
    if (from_open && deadline == open_limit && m.counts.opened != opened_before)
      deadline = Steady::now() + run;
    if (at_refill && m.refilling > 0) break;
  }
  kill(pid, SIGKILL);
  if (!eof) {
    // Records already in the pipe were reported before the kill: they count.
    for (;;) {
      const ssize_t k = read(fds[0], chunk, sizeof chunk);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;
      buf.append(chunk, static_cast<size_t>(k));
      apply_records(m, buf);
    }
  }
  close(fds[0]);
  if (!buf.empty()) m.problem("a partial record of " + std::to_string(buf.size()) + " bytes");
  m.report_violations();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.kill_hi = ns_of(wall_now());
  out.opened = m.counts.opened != opened_before;
  out.background = m.background;
  out.refilling = m.refilling;
  // Anything but our SIGKILL means the worker ended on its own (its records say why). Status 4
  // is a worker that ended itself on a record the rule book refused: that refusal, a problem
  // already, is the failure, not its end.
  const bool refused = m.problems.size() > problems_before;
  if (WIFEXITED(status) && !(WEXITSTATUS(status) == 4 && refused))
    m.problem("the worker exited by itself with status " + std::to_string(WEXITSTATUS(status)));
  else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
    m.problem("the worker died of signal " + std::to_string(WTERMSIG(status)) + " (" +
              strsignal(WTERMSIG(status)) + ")");
  return out;
}

std::string horizon_label(Duration horizon) {
  if (horizon == Duration::max()) return "";
  return ", disk tier (horizon " +
         std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(horizon).count()) +
         " ms)";
}

size_t stray_threads() {
  const size_t own = kUnderTsan ? 2 : 1;
  size_t n = threads_in_process();
  // A thread just joined may stay listed for a moment after its join returned (the kernel
  // wakes the joiner as the thread exits, before it is gone): up to 100 ms for it to go.
  for (int i = 0; i < 100 && n > own; ++i) {
    std::this_thread::sleep_for(1ms);
    n = threads_in_process();
  }
  return n > own ? n - own : 0;
}

Result<DriverStore> open_in_driver(const StoreOptions& o) {
  std::unique_ptr<rocksdb::Env> env = fork_safe_env(rocksdb::Env::Default());
  const int64_t open_began = ns_of(wall_now());
  Result<std::unique_ptr<Engine>> q = wal::open_store_on(o, env.get());
  if (!q) return q.status();
  return DriverStore(std::move(env), std::move(q).value(), open_began);
}

DriverStore open_for_check(Model& m, const std::string& dir, Duration horizon) {
  StoreOptions o;
  o.dir = dir;
  o.sync = Sync::always;
  o.horizon = horizon;
  Result<DriverStore> q = open_in_driver(o);
  if (!q) {
    m.problem("the driver could not reopen the store: " + q.status().to_string());
    return {};
  }
  return std::move(q).value();
}

void run_kill_cycles(Model& m, int cycles, uint64_t seed, const std::string& dir, KillTally& t,
                     const std::function<void(Model&, const std::string&)>& plant,
                     const CycleChoices& choices) {
  std::mt19937_64 rng(seed);
  m.consumer = true;  // a consumer thread in every worker (load.h)
  for (int i = 0; i < cycles && m.problems.empty(); ++i) {
    const int cycle = choices.first + i;
    const bool last = i + 1 == cycles;
    m.cycle = cycle;  // every problem names its cycle
    const Sync sync =
        choices.sync ? choices.sync(cycle) : kModes[static_cast<size_t>(cycle) % kModes.size()];
    const size_t shards = (cycle / 4) % 2 == 0 ? 1 : 2;
    const Duration horizon = choices.horizon ? choices.horizon(cycle) : horizon_of(cycle);
    m.cycle_label = std::string("kill, Sync::") + to_string(sync) + ", " + std::to_string(shards) +
                    (shards == 1 ? " shard" : " shards") + horizon_label(horizon);
    // Most kills land in the load; one cycle in four counts from the fork, so that some land
    // while the worker is still opening (replaying, recovering) the store.
    const auto run = run_time(rng);
    const bool from_open = rng() % 4 != 0;
    const bool at_refill = kill_at_refill(horizon, rng);
    WorkerSetup setup;
    setup.sync = sync;
    setup.shards = shards;
    setup.observe = m.unchecked;  // the last worker's store, as its kill left it
    setup.horizon = horizon;
    setup.fault = choices.worker_fault;
    t.tiered += horizon != Duration::max();
    const RunOutcome out = run_worker(m, dir, seed ^ mix(static_cast<uint64_t>(cycle) + 1), setup,
                                      run, from_open, at_refill);
    t.killed_before_open += !out.opened;
    t.worker_reopened += setup.observe && out.opened;
    t.mid_background += out.background > 0;
    t.mid_refill += out.refilling > 0;
    t.mid_write += m.settle_in_flight(out.kill_hi);
    ++t.per_mode[mode_index(sync)];
    ++t.done_cycles;
    if (!m.problems.empty()) break;
    if (plant) plant(m, dir);
    // About half the time the driver looks (its own open replays the log); otherwise the next
    // worker does. The last cycle's store is always looked at, and so is every planted one.
    if (!plant && !last && rng() % 2 == 0) continue;
    DriverStore q = open_for_check(m, dir, horizon);
    if (!q) break;
    check_observation(m, observe(*q, m, q.open_began()));
    if (last) sweep_forgotten(*q, m);
  }  // the driver's store is closed before the next worker starts
  m.cycle_label.clear();
}

}  // namespace delayq::crash
