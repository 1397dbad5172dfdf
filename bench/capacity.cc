// The `capacity` workload (capacity.h). Phases, each in a child process of its own:
//
//  1. fill: open the store; while a near stream runs (a job due in [0, 2] s pushed every 5 ms,
//     consumed and acked by another thread, its lateness recorded), push N far jobs with 64-byte
//     bodies due uniformly over the next 30 days (push_batch of --batch, or one push() each),
//     timed: push_per_s. Then rss_bytes (after 2 s), then near_push_per_s: M jobs due within the
//     horizon (M = N / 100, between 1000 and 100000) pushed the same way and timed, then
//     cancelled. Then 100 probe jobs due at once, left for the next open; then a clean close.
//  2. reopen after the clean close: open() timed (reopen_s), then reserve() of a probe: the
//     first overdue job handed out, counted from open()'s start (first_delivery_s). The far
//     jobs and the near jobs left pending are counted: none may be lost.
//  3. open again, push N / 100 (at most 1 M) more far jobs and 100 probes, SIGKILL.
//  4. reopen after the kill, measured as in 2.
//
// disk_bytes is the store directory's size after phase 1.
#include "capacity.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "report.h"

namespace delayq::bench {

namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

constexpr size_t kProbes = 100;
constexpr Duration kSpread = std::chrono::hours(24 * 30);
const std::string kBody(64, 'x');

// Runs fn() in a child process, which sends back N numbers through a pipe; nullopt if it did not.
template <size_t N, class F>
std::optional<std::array<double, N>> in_child(F&& fn) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const std::optional<std::array<double, N>> out = fn();
    if (out && write(fds[1], out->data(), sizeof(double) * N) != sizeof(double) * N) _exit(4);
    _exit(out ? 0 : 3);
  }
  close(fds[1]);
  std::array<double, N> in{};
  const bool ok = read(fds[0], in.data(), sizeof(double) * N) == sizeof(double) * N;
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!ok) return std::nullopt;
  return in;
}

// Pushes `specs` in batches of a.batch (or one push() each); false if any push failed.
bool push_all(Engine& q, std::vector<JobSpec>& specs, size_t batch, std::vector<std::string>* ids) {
  auto keep = [&](const Result<std::string>& r) {
    if (!r) std::cerr << "capacity: push: " << r.status().to_string() << "\n";
    if (r && ids) ids->push_back(*r);
    return r.ok();
  };
  if (batch == 0) {
    for (JobSpec& s : specs)
      if (!keep(q.push(std::move(s)))) return false;
    return true;
  }
  for (size_t i = 0; i < specs.size(); i += batch) {
    std::vector<JobSpec> part(
        std::make_move_iterator(specs.begin() + i),
        std::make_move_iterator(specs.begin() + std::min(i + batch, specs.size())));
    for (const auto& r : q.push_batch(std::move(part)))
      if (!keep(r)) return false;
  }
  return true;
}

// Near jobs pushed every 5 ms, due in [0, 2] s, consumed and acked by a second thread.
class NearStream {
 public:
  explicit NearStream(Engine& q) : q_(q) {
    producer_ = std::thread([this] { produce(); });
    consumer_ = std::thread([this] { consume(); });
  }
  // Stops pushing, then consuming; returns the lateness of every delivery, in ms.
  std::vector<double> stop() {
    stop_ = true;
    producer_.join();
    consumer_.join();
    return late_ms_;
  }
  uint64_t pushed() const { return pushed_; }
  uint64_t received() const { return seen_.size(); }
  uint64_t early_or_twice() const { return bad_; }

 private:
  void produce() {
    std::mt19937_64 rng(7);
    for (auto next = Steady::now(); !stop_; next += 5ms) {
      std::this_thread::sleep_until(next);
      const Duration delay = std::chrono::milliseconds(rng() % 2001);
      if (q_.push({.topic = "near", .delay = delay, .ttr = 1h, .body = kBody})) ++pushed_;
    }
  }
  void consume() {
    while (!stop_) {
      Result<Delivery> d = q_.reserve("near", 100ms);
      if (!d) continue;
      const double late =
          std::chrono::duration<double, std::milli>(SystemClock::instance().now() - d->due).count();
      late_ms_.push_back(late);
      if (late < 0 || !seen_.insert(d->id).second) ++bad_;
      (void)q_.ack(d->token);
    }
  }
  Engine& q_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> pushed_{0};
  std::vector<double> late_ms_;
  std::set<std::string> seen_;
  uint64_t bad_ = 0;
  std::thread producer_, consumer_;
};

void push_probes(Engine& q) {
  std::vector<JobSpec> probes(kProbes, JobSpec{.topic = "probe", .body = kBody});
  (void)push_all(q, probes, kProbes, nullptr);
}

// Phase 1. Numbers: push_per_s, near_push_per_s, rss_bytes, near pushed, near received, early or
// twice, lateness p50, p99, max, min, mean.
std::optional<std::array<double, 11>> fill(const CapacityArgs& a, const std::string& dir) {
  StoreOptions o = store_options(a);
  o.dir = dir;
  auto q = open_store(o);
  if (!q) return std::cerr << "capacity: " << q.status().to_string() << "\n", std::nullopt;
  NearStream near(**q);
  std::mt19937_64 rng(a.seed);
  Steady::time_point t0 = Steady::now();
  if (!push_far(**q, a.jobs, rng, Duration::zero(), kSpread, a.batch)) return std::nullopt;
  const double push_s = seconds(Steady::now() - t0);
  std::this_thread::sleep_for(2s);
  const double rss = static_cast<double>(rss_bytes());
  // Near pushes in the same run: due within the horizon, so in memory.
  const size_t m = std::clamp<size_t>(a.jobs / 100, 1000, 100000);
  const Duration within =
      a.horizon_s > 0
          ? std::chrono::duration_cast<Duration>(std::chrono::duration<double>(a.horizon_s / 4))
          : Duration(15min);
  std::vector<JobSpec> fill(m, JobSpec{.topic = "near-fill", .delay = within, .body = kBody});
  std::vector<std::string> ids;
  t0 = Steady::now();
  if (!push_all(**q, fill, a.batch, &ids)) return std::nullopt;
  const double near_s = seconds(Steady::now() - t0);
  for (const std::string& id : ids) (void)(*q)->cancel(id);
  push_probes(**q);
  std::vector<double> late = near.stop();
  std::array<double, 11> out{a.jobs / push_s,
                             m / near_s,
                             rss,
                             static_cast<double>(near.pushed()),
                             static_cast<double>(near.received()),
                             static_cast<double>(near.early_or_twice())};
  if (!late.empty()) {
    std::sort(late.begin(), late.end());
    auto rank = [&](double p) {
      return late[std::clamp<size_t>(static_cast<size_t>(std::ceil(p * late.size())), 1,
                                     late.size()) -
                  1];
    };
    double sum = 0;
    for (double v : late) sum += v;
    out[6] = rank(0.5), out[7] = rank(0.99), out[8] = late.back(), out[9] = late.front();
    out[10] = sum / late.size();
  }
  return out;
}

// Phases 2 and 4. Numbers: reopen_s, first_delivery_s, far jobs pending, near jobs pending.
std::optional<std::array<double, 4>> reopen(const CapacityArgs& a, const std::string& dir) {
  StoreOptions o = store_options(a);
  o.dir = dir;
  const Steady::time_point t0 = Steady::now();
  auto q = open_store(o);
  const double open_s = seconds(Steady::now() - t0);
  if (!q) return std::cerr << "capacity: " << q.status().to_string() << "\n", std::nullopt;
  Result<Delivery> d = (*q)->reserve("probe", 30s);
  if (!d)
    return std::cerr << "capacity: no probe: " << d.status().to_string() << "\n", std::nullopt;
  const double first_s = seconds(Steady::now() - t0);
  Stats st = (*q)->stats();
  auto pending = [&](const char* topic) {
    const TopicStats& t = st.topics[topic];
    return static_cast<double>(t.delayed + t.ready + t.reserved);
  };
  return std::array<double, 4>{open_s, first_s, pending("far"), pending("near")};
}

size_t more_far_jobs(const CapacityArgs& a) {
  return std::min<size_t>(a.jobs / 100 + 1, 1000000);
}

// Phase 3: more far jobs and probes, then SIGKILL (so nothing comes back through the pipe).
std::optional<std::array<double, 1>> fill_then_kill(const CapacityArgs& a, const std::string& dir) {
  StoreOptions o = store_options(a);
  o.dir = dir;
  auto q = open_store(o);
  if (!q) return std::nullopt;
  std::mt19937_64 rng(a.seed + 1);
  if (!push_far(**q, more_far_jobs(a), rng, Duration::zero(), kSpread, a.batch))
    return std::nullopt;
  push_probes(**q);
  raise(SIGKILL);
  return std::nullopt;
}

std::string phase_json(const std::array<double, 4>& r) {
  return "{\"reopen_s\":" + num(r[0]) + ",\"first_delivery_s\":" + num(r[1]) + "}";
}

}  // namespace

StoreOptions store_options(const CapacityArgs& a) {
  StoreOptions o;
  o.sync = a.sync;
  o.sync_batch_ops = a.sync_batch_ops;
  o.sync_interval = a.sync_interval;
  o.engine.shards = a.shards;
  o.horizon = a.horizon_s > 0 ? std::optional<Duration>(std::chrono::duration_cast<Duration>(
                                    std::chrono::duration<double>(a.horizon_s)))
                              : std::optional<Duration>(Duration::max());
  return o;
}

bool push_far(Engine& q, size_t n, std::mt19937_64& rng, Duration from, Duration span,
              size_t batch) {
  const size_t chunk = batch == 0 ? 1000 : batch;
  for (size_t done = 0; done < n;) {
    std::vector<JobSpec> part(std::min(chunk, n - done));
    for (JobSpec& s : part) {
      s.topic = "far";
      s.delay = from + Duration(static_cast<int64_t>(rng() % static_cast<uint64_t>(span.count())));
      s.body = kBody;
    }
    done += part.size();
    if (!push_all(q, part, batch, nullptr)) return false;
  }
  return true;
}

uint64_t disk_bytes(const std::string& dir) {
  uint64_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

int run_capacity(const CapacityArgs& a) {
  std::string dir = a.dir;
  const bool owned = dir.empty();
  if (owned) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "delayq-capacity-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
  }
  auto filled = in_child<11>([&] { return fill(a, dir); });
  if (!filled) return std::cerr << "capacity: the fill failed\n", 1;
  const uint64_t disk = disk_bytes(dir);
  auto closed = in_child<4>([&] { return reopen(a, dir); });
  (void)in_child<1>([&] { return fill_then_kill(a, dir); });
  auto killed = in_child<4>([&] { return reopen(a, dir); });
  if (owned) std::filesystem::remove_all(dir);
  if (!closed || !killed) return std::cerr << "capacity: a reopen failed\n", 1;

  const auto& f = *filled;
  const double far_after_kill = static_cast<double>(a.jobs + more_far_jobs(a));
  const bool none_lost = (*closed)[2] == static_cast<double>(a.jobs) &&
                         (*killed)[2] == far_after_kill && f[3] == f[4] + (*closed)[3] && f[5] == 0;
  std::cout << "{\"peer\":\"delayq-rocksdb\",\"workload\":\"capacity\",\"jobs\":" << a.jobs
            << ",\"push_per_s\":" << num(f[0]) << ",\"near_push_per_s\":" << num(f[1])
            << ",\"rss_bytes\":" << static_cast<uint64_t>(f[2]) << ",\"disk_bytes\":" << disk
            << ",\"after_close\":" << phase_json(*closed)
            << ",\"after_kill\":" << phase_json(*killed) << ",\"near_lateness_ms\":"
            << (f[4] > 0 ? "{\"p50\":" + num(f[6]) + ",\"p99\":" + num(f[7]) + ",\"max\":" +
                               num(f[8]) + ",\"min\":" + num(f[9]) + ",\"mean\":" + num(f[10]) + "}"
                         : std::string("null"))
            << ",\"near_pushed\":" << static_cast<uint64_t>(f[3])
            << ",\"near_received\":" << static_cast<uint64_t>(f[4])
            << ",\"none_lost\":" << (none_lost ? "true" : "false") << ",\"params\":{"
            << a.sync_params.substr(1) << ",\"batch\":" << a.batch << ",\"shards\":" << a.shards
            << ",\"horizon_s\":" << num(a.horizon_s) << ",\"spread_days\":30,\"body_bytes\":64}}"
            << std::endl;
  return none_lost ? 0 : 1;
}

}  // namespace delayq::bench
