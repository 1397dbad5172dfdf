// delayq-bench: the workload driver of ../shared/workloads.md. One JSON line per run on stdout;
// notes on stderr.
//
//   delayq-bench --workload W1 --backend memory --jobs 100000 --delay-max 5
//   delayq-bench --workload W2 --jobs 1000000 --delay-max 5
#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <queue>
#include <atomic>
#include <filesystem>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "delayq/engine.h"
#include "delayq/store.h"
#include "delayq/timer_service.h"

namespace {

using namespace std::chrono_literals;
using delayq::Duration;
using Steady = std::chrono::steady_clock;

struct Args {
  std::string workload = "W1";
  std::string backend = "memory";
  size_t jobs = 100000;
  double delay_max_s = 5;
  size_t consumers = 2;
  size_t producers = 1;
  std::string sync = "always";  // rocksdb: always | batch | periodic | none
  uint32_t sync_batch_ops = 1000;  // rocksdb, --sync batch
  double sync_interval_ms = 10;    // rocksdb, --sync batch|periodic
  std::string dir;              // rocksdb: the store (default: a fresh temp dir, removed after)
  size_t shards = 1;
  size_t batch = 0;  // 0: one push() per job; else push_batch() of this many
  int tick_ms = 1;
  double slack_us = -1;  // -1: the engine's default
  double time_limit_s = 0;  // 0: delay_max + 30 s
  uint64_t seed = 1;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "delayq-bench: " << why << "\n"
            << "usage: delayq-bench [--workload W1|W2] [--backend memory] [--jobs N]\n"
               "                    [--delay-max SECONDS] [--consumers N] [--shards N]\n"
               "                    [--batch N] [--tick-ms MS] [--slack-us US] [--producers N]\n"
               "                    [--sync always|batch|periodic|none] [--dir DIR]\n"
               "                    [--sync-batch-ops N] [--sync-interval-ms MS]\n"
               "                    [--time-limit SECONDS] [--seed N]\n";
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") usage("help");
    if (i + 1 >= argc) usage("missing value after " + k);
    const std::string v = argv[++i];
    char* end = nullptr;
    const double num = std::strtod(v.c_str(), &end);
    const bool is_num = end && *end == '\0' && !v.empty();
    auto need_num = [&](double lo) {
      if (!is_num || num < lo) usage("bad value for " + k + ": '" + v + "'");
      return num;
    };
    if (k == "--workload") a.workload = v;
    else if (k == "--backend") a.backend = v;
    else if (k == "--jobs") a.jobs = static_cast<size_t>(need_num(1));
    else if (k == "--delay-max") a.delay_max_s = need_num(0);
    else if (k == "--consumers") a.consumers = static_cast<size_t>(need_num(1));
    else if (k == "--producers") a.producers = static_cast<size_t>(need_num(1));
    else if (k == "--sync") a.sync = v;
    else if (k == "--sync-batch-ops") a.sync_batch_ops = static_cast<uint32_t>(need_num(1));
    else if (k == "--sync-interval-ms") a.sync_interval_ms = need_num(0.001);
    else if (k == "--dir") a.dir = v;
    else if (k == "--shards") a.shards = static_cast<size_t>(need_num(1));
    else if (k == "--batch") a.batch = static_cast<size_t>(need_num(0));
    else if (k == "--tick-ms") a.tick_ms = static_cast<int>(need_num(1));
    else if (k == "--slack-us") a.slack_us = need_num(0);
    else if (k == "--time-limit") a.time_limit_s = need_num(0);
    else if (k == "--seed") a.seed = static_cast<uint64_t>(need_num(0));
    else usage("unknown option " + k);
  }
  if (a.workload != "W1" && a.workload != "W2" && a.workload != "recovery" &&
      a.workload != "reopen")
    usage("unknown workload " + a.workload);
  if (a.backend != "memory" && a.backend != "asio" && a.backend != "rocksdb" &&
      a.backend != "rocksdb-raw")
    usage("backend '" + a.backend + "' is not built yet (memory, rocksdb; baselines asio, rocksdb-raw)");
  if (!delayq::parse_sync(a.sync)) usage(delayq::parse_sync(a.sync).status().message());
  if (a.time_limit_s == 0) a.time_limit_s = a.delay_max_s + 30;
  return a;
}

// The delays of a run: whole milliseconds, uniform over [0, delay_max], from the run's seed.
std::vector<Duration> random_delays(const Args& a) {
  std::mt19937_64 rng(a.seed);
  const int64_t max_ms = static_cast<int64_t>(a.delay_max_s * 1000);
  std::vector<Duration> delay(a.jobs);
  for (auto& d : delay)
    d = std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(0, max_ms)(rng));
  return delay;
}

// The store directory of a rocksdb run: --dir, or a fresh temp dir removed at the end.
class StoreDir {
 public:
  explicit StoreDir(const std::string& given) : path_(given) {
    if (!path_.empty()) return;
    std::string tmpl = (std::filesystem::temp_directory_path() / "delayq-bench-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
    owned_ = true;
  }
  ~StoreDir() {
    if (owned_) std::filesystem::remove_all(path_);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool owned_ = false;
};

double seconds(Steady::duration d) { return std::chrono::duration<double>(d).count(); }

Duration sync_interval(const Args& a) {
  return std::chrono::nanoseconds(static_cast<int64_t>(a.sync_interval_ms * 1e6));
}

// The params of a rocksdb line that describe its sync mode.
std::string sync_params(const Args& a) {
  std::string out = ",\"sync\":\"" + a.sync + "\"";
  if (a.sync == "batch") out += ",\"sync_batch_ops\":" + std::to_string(a.sync_batch_ops);
  if (a.sync == "batch" || a.sync == "periodic") {
    std::ostringstream o;
    o << a.sync_interval_ms;
    out += ",\"sync_interval_ms\":" + o.str();
  }
  return out;
}

std::string num(double v) {
  std::ostringstream o;
  o.precision(v >= 1000 ? 1 : 4);
  o << std::fixed << v;
  return o.str();
}

// Lateness summary in ms: p50/p99 by nearest rank.
std::string lateness_json(std::vector<double>& ms) {
  if (ms.empty()) return "null";
  std::sort(ms.begin(), ms.end());
  auto rank = [&](double p) {
    const size_t r = static_cast<size_t>(std::ceil(p * ms.size()));
    return ms[std::clamp<size_t>(r, 1, ms.size()) - 1];
  };
  double sum = 0;
  for (double v : ms) sum += v;
  return "{\"p50\":" + num(rank(0.50)) + ",\"p99\":" + num(rank(0.99)) +
         ",\"max\":" + num(ms.back()) + ",\"min\":" + num(ms.front()) +
         ",\"mean\":" + num(sum / ms.size()) + "}";
}

int run_w1(const Args& a) {
  delayq::EngineOptions opt;
  opt.tick = std::chrono::milliseconds(a.tick_ms);
  opt.shards = a.shards;
  opt.seed = a.seed;
  if (a.slack_us >= 0) opt.timer_slack = std::chrono::nanoseconds(static_cast<int64_t>(a.slack_us * 1000));
  const StoreDir dir(a.backend == "rocksdb" ? a.dir : "/");
  delayq::Result<std::unique_ptr<delayq::Engine>> q = delayq::Status(delayq::Errc::invalid_argument, "");
  if (a.backend == "rocksdb") {
    delayq::StoreOptions so;
    so.dir = dir.path();
    so.sync = *delayq::parse_sync(a.sync);
    so.sync_batch_ops = a.sync_batch_ops;
    so.sync_interval = sync_interval(a);
    so.engine = opt;
    q = delayq::open_store(so);
  } else {
    q = delayq::Engine::open(opt);
  }
  if (!q) {
    std::cerr << q.status().to_string() << "\n";
    return 2;
  }
  delayq::Engine& engine = **q;
  const size_t n = a.jobs;
  const std::vector<Duration> delay = random_delays(a);
  std::vector<delayq::TimePoint> pushed_at(n);
  std::vector<double> lateness_ms(n, 0);
  std::vector<std::atomic<uint8_t>> got(n);
  std::atomic<size_t> received{0}, duplicates{0};
  std::atomic<bool> stop{false};
  const std::string body(64, 'x');
  const std::string topic = "w1";
  auto& sys = delayq::SystemClock::instance();

  std::atomic<int64_t> last_ack_ns{0};
  std::vector<std::thread> consumers;
  for (size_t c = 0; c < a.consumers; ++c) {
    consumers.emplace_back([&] {
      while (!stop.load()) {
        delayq::Result<delayq::Delivery> d = engine.reserve(topic, 100ms);
        if (!d) continue;
        const delayq::TimePoint now = sys.now();
        const size_t i = std::stoul(d->id);
        lateness_ms[i] = std::chrono::duration<double, std::milli>(now - (pushed_at[i] + delay[i])).count();
        if (got[i].exchange(1)) duplicates.fetch_add(1);
        if (!engine.ack(d->token).ok()) continue;
        last_ack_ns.store(Steady::now().time_since_epoch().count());
        if (received.fetch_add(1) + 1 == n) stop.store(true);
      }
    });
  }

  const Steady::time_point start = Steady::now();
  if (a.batch == 0) {
    std::atomic<bool> failed{false};
    auto produce = [&](size_t first, size_t step) {
      for (size_t i = first; i < n && !failed.load(); i += step) {
        pushed_at[i] = sys.now();
        delayq::Result<std::string> r =
            engine.push({.topic = topic, .id = std::to_string(i), .delay = delay[i], .body = body});
        if (!r) {
          std::cerr << "push failed: " << r.status().to_string() << "\n";
          failed.store(true);
        }
      }
    };
    std::vector<std::thread> producers;
    for (size_t p = 1; p < a.producers; ++p) producers.emplace_back(produce, p, a.producers);
    produce(0, a.producers);
    for (auto& t : producers) t.join();
    if (failed.load()) return 1;
  } else {
    for (size_t i = 0; i < n;) {
      std::vector<delayq::JobSpec> specs;
      const size_t end = std::min(n, i + a.batch);
      const delayq::TimePoint t = sys.now();
      for (size_t k = i; k < end; ++k) {
        pushed_at[k] = t;
        specs.push_back({.topic = topic, .id = std::to_string(k), .delay = delay[k], .body = body});
      }
      for (auto& r : engine.push_batch(std::move(specs)))
        if (!r) {
          std::cerr << "push failed: " << r.status().to_string() << "\n";
          return 1;
        }
      i = end;
    }
  }
  const double push_s = seconds(Steady::now() - start);

  const Steady::time_point limit = start + std::chrono::duration_cast<Steady::duration>(
                                               std::chrono::duration<double>(a.time_limit_s));
  while (!stop.load() && Steady::now() < limit) std::this_thread::sleep_for(5ms);
  stop.store(true);
  for (auto& t : consumers) t.join();
  const size_t got_n = received.load();
  const double e2e = got_n ? seconds(Steady::time_point(Steady::duration(last_ack_ns.load())) - start) : 0;
  std::vector<double> lat;
  lat.reserve(got_n);
  for (size_t i = 0; i < n; ++i)
    if (got[i].load()) lat.push_back(lateness_ms[i]);

  std::cout << "{\"peer\":\"delayq-" << a.backend << "\",\"workload\":\"W1\",\"jobs\":" << n
            << ",\"push_per_s\":" << num(n / push_s) << ",\"end_to_end_s\":" << num(e2e)
            << ",\"lateness_ms\":" << lateness_json(lat) << ",\"received\":" << got_n
            << ",\"duplicates\":" << duplicates.load() << ",\"params\":{\"delay_max_s\":"
            << num(a.delay_max_s) << ",\"consumers\":" << a.consumers << ",\"producers\":"
            << a.producers << (a.backend == "rocksdb" ? sync_params(a) : ",\"sync\":\"none\"")
            << ",\"tick_ms\":" << a.tick_ms << ",\"shards\":" << a.shards
            << ",\"batch\":" << a.batch << ",\"timer_slack_us\":"
            << std::chrono::duration<double, std::micro>(opt.timer_slack).count() << "}}" << std::endl;
  if (got_n != n) {
    std::cerr << "time limit: received " << got_n << " of " << n << "\n";
    return 1;
  }
  return 0;
}

// The baseline for W1 lateness: no queue at all, each job one boost::asio::steady_timer on one
// io_context run by `consumers` threads; a job is "received" when its handler runs. Whatever
// lateness this shows is the machine's own (timer wake-ups, scheduling, VM stalls).
int run_w1_asio(const Args& a) {
  namespace asio = boost::asio;
  const size_t n = a.jobs;
  const std::vector<Duration> delay = random_delays(a);
  std::vector<delayq::TimePoint> pushed_at(n);
  std::vector<double> lateness_ms(n, 0);
  std::vector<std::unique_ptr<asio::steady_timer>> timers(n);
  std::atomic<size_t> received{0};
  std::atomic<int64_t> last_ns{0};
  auto& sys = delayq::SystemClock::instance();
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (size_t c = 0; c < a.consumers; ++c) threads.emplace_back([&] { io.run(); });

  const Steady::time_point start = Steady::now();
  for (size_t i = 0; i < n; ++i) {
    pushed_at[i] = sys.now();
    timers[i] = std::make_unique<asio::steady_timer>(io, delay[i]);
    timers[i]->async_wait([&, i](const boost::system::error_code& ec) {
      if (ec) return;
      lateness_ms[i] =
          std::chrono::duration<double, std::milli>(sys.now() - (pushed_at[i] + delay[i])).count();
      last_ns.store(Steady::now().time_since_epoch().count());
      received.fetch_add(1);
    });
  }
  const double push_s = seconds(Steady::now() - start);
  const Steady::time_point limit = start + std::chrono::duration_cast<Steady::duration>(
                                               std::chrono::duration<double>(a.time_limit_s));
  while (received.load() < n && Steady::now() < limit) std::this_thread::sleep_for(5ms);
  work.reset();
  io.stop();
  for (auto& t : threads) t.join();
  const size_t got = received.load();
  std::vector<double> lat(lateness_ms.begin(), lateness_ms.end());
  std::cout << "{\"peer\":\"asio-steady-timer\",\"workload\":\"W1\",\"jobs\":" << n
            << ",\"push_per_s\":" << num(n / push_s) << ",\"end_to_end_s\":"
            << num(seconds(Steady::time_point(Steady::duration(last_ns.load())) - start))
            << ",\"lateness_ms\":" << lateness_json(lat) << ",\"received\":" << got
            << ",\"params\":{\"delay_max_s\":" << num(a.delay_max_s)
            << ",\"threads\":" << a.consumers << "}}" << std::endl;
  return got == n ? 0 : 1;
}

// The baseline for the store's write path: raw RocksDB doing the writes a W1 job costs delayq,
// at the same moments, with the same sync setting and threads. Producers Put a ~100-byte value
// under an 8-byte key in push order (the push); once the job's delay has passed, a consumer
// thread Puts it again (the reservation, which delayq journals before handing a job out) and
// Deletes it (the ack). Each write is its own RocksDB write, synced as --sync says: always
// syncs every write; batch syncs every --sync-batch-ops-th write and, like periodic, a
// background thread syncs the log every --sync-interval-ms; none never syncs. No timer
// structure, no index, no encoding: what is left of delayq's cost is the queue itself.
int run_rocksdb_raw(const Args& a) {
  const StoreDir dir(a.dir);
  rocksdb::Options o;
  o.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(o, dir.path(), &raw);
  if (!s.ok()) {
    std::cerr << "rocksdb: " << s.ToString() << "\n";
    return 2;
  }
  std::unique_ptr<rocksdb::DB> db(raw);
  const delayq::Sync mode = *delayq::parse_sync(a.sync);
  std::atomic<uint64_t> writes{0};
  std::atomic<bool> failed{false};
  auto write = [&](auto&& op) {
    rocksdb::WriteOptions wo;
    const uint64_t n = writes.fetch_add(1) + 1;
    wo.sync = mode == delayq::Sync::always ||
              (mode == delayq::Sync::batch && n % a.sync_batch_ops == 0);
    if (!op(wo).ok()) failed.store(true);
  };
  std::atomic<bool> stop{false};
  std::thread syncer;
  if (mode == delayq::Sync::batch || mode == delayq::Sync::periodic)
    syncer = std::thread([&] {
      while (!stop.load()) {
        std::this_thread::sleep_for(sync_interval(a));
        if (!db->FlushWAL(/*sync=*/true).ok()) failed.store(true);
      }
    });

  const size_t n = a.jobs;
  const std::vector<Duration> delay = random_delays(a);
  const std::string value(100, 'v');
  // Jobs pushed and not yet consumed, by due time (the consumers' stand-in for a timer).
  std::mutex mu;
  std::condition_variable cv;
  std::priority_queue<std::pair<Steady::time_point, uint64_t>,
                      std::vector<std::pair<Steady::time_point, uint64_t>>, std::greater<>>
      due;
  std::atomic<size_t> consumed{0};
  std::atomic<uint64_t> seq{0};
  std::atomic<int64_t> last_ns{0};
  auto key_of = [](uint64_t k) {
    const uint64_t be = __builtin_bswap64(k);
    return std::string(reinterpret_cast<const char*>(&be), 8);
  };
  std::vector<std::thread> consumers;
  for (size_t c = 0; c < a.consumers; ++c)
    consumers.emplace_back([&] {
      std::unique_lock l(mu);
      while (!stop.load()) {
        if (due.empty() || due.top().first > Steady::now()) {
          if (due.empty()) cv.wait_for(l, 100ms);
          else cv.wait_until(l, due.top().first);
          continue;
        }
        const uint64_t k = due.top().second;
        due.pop();
        l.unlock();
        const std::string key = key_of(k);
        write([&](const rocksdb::WriteOptions& wo) { return db->Put(wo, key, value); });
        write([&](const rocksdb::WriteOptions& wo) { return db->Delete(wo, key); });
        last_ns.store(Steady::now().time_since_epoch().count());
        if (consumed.fetch_add(1) + 1 == n) stop.store(true);
        l.lock();
      }
    });
  auto produce = [&](size_t count) {
    for (size_t i = 0; i < count && !failed.load(); ++i) {
      const uint64_t k = seq.fetch_add(1) + 1;
      const Steady::time_point at = Steady::now() + delay[k - 1];
      const std::string key = key_of(k);
      write([&](const rocksdb::WriteOptions& wo) { return db->Put(wo, key, value); });
      {
        std::lock_guard l(mu);
        due.push({at, k});
      }
      cv.notify_one();
    }
  };
  const Steady::time_point start = Steady::now();
  std::vector<std::thread> producers;
  for (size_t p = 0; p < a.producers; ++p)
    producers.emplace_back(produce, n / a.producers + (p < n % a.producers));
  for (auto& t : producers) t.join();
  const double push_s = seconds(Steady::now() - start);
  const Steady::time_point limit = start + std::chrono::duration_cast<Steady::duration>(
                                               std::chrono::duration<double>(a.time_limit_s));
  while (!stop.load() && !failed.load() && Steady::now() < limit) std::this_thread::sleep_for(5ms);
  stop.store(true);
  cv.notify_all();
  for (auto& t : consumers) t.join();
  if (syncer.joinable()) syncer.join();
  (void)db->Close();
  const double e2e = seconds(Steady::time_point(Steady::duration(last_ns.load())) - start);
  std::cout << "{\"peer\":\"rocksdb-raw\",\"workload\":\"W1-writes\",\"jobs\":" << n
            << ",\"push_per_s\":" << num(n / push_s) << ",\"end_to_end_s\":" << num(e2e)
            << ",\"received\":" << consumed.load() << ",\"params\":{\"delay_max_s\":"
            << num(a.delay_max_s) << ",\"consumers\":" << a.consumers
            << ",\"producers\":" << a.producers << sync_params(a)
            << ",\"value_bytes\":100,\"writes_per_job\":3}}" << std::endl;
  return failed.load() || consumed.load() != n ? 1 : 0;
}

// Resident memory of this process, in bytes.
uint64_t rss_bytes() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// recovery: fill a store with N pending jobs (due in an hour, 64-byte bodies) in a child
// process, which then closes the store cleanly or is killed (SIGKILL) right after its last push;
// then time open_store() in a fresh child, which reports the time until its queue is back
// (RocksDB's own log replay included) and its memory.
int run_recovery(const Args& a) {
  const StoreDir dir(a.dir);
  const std::string body(64, 'x');
  auto fill_then = [&](bool clean) {
    const pid_t pid = fork();
    if (pid == 0) {
      delayq::StoreOptions so;
      so.dir = dir.path();
      so.sync = delayq::Sync::none;
      auto q = delayq::open_store(so);
      if (!q) _exit(2);
      for (size_t i = 0; i < a.jobs; i += 1000) {
        std::vector<delayq::JobSpec> specs;
        for (size_t k = i; k < std::min(a.jobs, i + 1000); ++k)
          specs.push_back({.topic = "r", .id = std::to_string(k), .delay = 1h, .body = body});
        for (auto& r : (*q)->push_batch(std::move(specs)))
          if (!r) _exit(3);
      }
      if (!clean) raise(SIGKILL);
      q->reset();
      _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
  };
  auto measure = [&](const char* how) -> bool {
    int fds[2];
    if (pipe(fds) != 0) return false;
    const pid_t pid = fork();
    if (pid == 0) {
      delayq::StoreOptions so;
      so.dir = dir.path();
      const Steady::time_point t0 = Steady::now();
      auto q = delayq::open_store(so);
      const double open_s = seconds(Steady::now() - t0);
      double out[3] = {open_s, q ? static_cast<double>((*q)->stats().topics["r"].delayed) : -1.0,
                       static_cast<double>(rss_bytes())};
      if (write(fds[1], out, sizeof out) != sizeof out) _exit(4);
      _exit(0);
    }
    close(fds[1]);
    double in[3] = {0, 0, 0};
    const bool ok = read(fds[0], in, sizeof in) == sizeof in;
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    std::cout << "{\"peer\":\"delayq-rocksdb\",\"workload\":\"recovery\",\"jobs\":" << a.jobs
              << ",\"after\":\"" << how << "\",\"open_s\":" << num(in[0])
              << ",\"recovered\":" << static_cast<uint64_t>(in[1])
              << ",\"rss_mib\":" << num(in[2] / (1 << 20)) << "}" << std::endl;
    return ok && static_cast<size_t>(in[1]) == a.jobs;
  };
  fill_then(/*clean=*/true);
  bool ok = measure("clean close");
  std::filesystem::remove_all(dir.path());
  std::filesystem::create_directories(dir.path());
  fill_then(/*clean=*/false);
  ok = measure("kill -9") && ok;
  return ok ? 0 : 1;
}

// reopen: times open_store() of an existing --dir (for profiling recovery by itself).
int run_reopen(const Args& a) {
  if (a.dir.empty()) usage("--workload reopen needs --dir");
  delayq::StoreOptions so;
  so.dir = a.dir;
  so.engine.shards = a.shards;
  const Steady::time_point t0 = Steady::now();
  auto q = delayq::open_store(so);
  const double open_s = seconds(Steady::now() - t0);
  if (!q) {
    std::cerr << q.status().to_string() << "\n";
    return 2;
  }
  uint64_t pending = 0;
  for (const auto& [topic, t] : (*q)->stats().topics) pending += t.delayed + t.ready + t.reserved;
  std::cout << "{\"peer\":\"delayq-rocksdb\",\"workload\":\"reopen\",\"open_s\":" << num(open_s)
            << ",\"recovered\":" << pending << ",\"rss_mib\":" << num(rss_bytes() / double(1 << 20))
            << ",\"params\":{\"shards\":" << a.shards << "}}" << std::endl;
  return 0;
}

int run_w2(const Args& a) {
  delayq::TimerService timers(std::chrono::milliseconds(a.tick_ms));
  const size_t n = a.jobs;
  const std::vector<Duration> delay = random_delays(a);
  std::vector<delayq::TimerService::Handle> handles(n);
  std::atomic<size_t> fired{0};

  const Steady::time_point t0 = Steady::now();
  for (size_t i = 0; i < n; ++i) handles[i] = timers.schedule_after(delay[i], [&fired] { fired.fetch_add(1, std::memory_order_relaxed); });
  const double schedule_s = seconds(Steady::now() - t0);

  size_t cancelled = 0;
  const Steady::time_point t1 = Steady::now();
  for (size_t i = 0; i < n; i += 2) cancelled += timers.cancel(handles[i]);
  const double cancel_s = seconds(Steady::now() - t1);
  const size_t cancel_calls = (n + 1) / 2;

  // Check the service kept its word: every entry not cancelled fires.
  const Steady::time_point limit = Steady::now() + std::chrono::duration_cast<Steady::duration>(
                                                       std::chrono::duration<double>(a.time_limit_s));
  while (fired.load() + cancelled < n && Steady::now() < limit) std::this_thread::sleep_for(5ms);
  timers.stop();

  std::cout << "{\"peer\":\"delayq-memory\",\"workload\":\"W2\",\"jobs\":" << n
            << ",\"schedule_per_s\":" << num(n / schedule_s)
            << ",\"cancel_per_s\":" << num(cancel_calls / cancel_s) << ",\"cancelled\":" << cancelled
            << ",\"fired\":" << fired.load() << ",\"params\":{\"delay_max_s\":" << num(a.delay_max_s)
            << ",\"tick_ms\":" << a.tick_ms << "}}" << std::endl;
  return fired.load() + cancelled == n ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  std::cerr << "delayq-bench: " << a.workload << " on " << a.backend << ", " << a.jobs
            << " jobs, delays up to " << a.delay_max_s << " s\n";
  if (a.workload == "W2") return run_w2(a);
  if (a.workload == "recovery") return run_recovery(a);
  if (a.workload == "reopen") return run_reopen(a);
  if (a.backend == "asio") return run_w1_asio(a);
  if (a.backend == "rocksdb-raw") return run_rocksdb_raw(a);
  return run_w1(a);
}
