// delayq-bench: the workload driver of docs/benchmarks.md (W1, W2, ...). One JSON line per run on stdout;
// notes on stderr.
//
//   delayq-bench --workload W1 --backend memory --jobs 100000 --delay-max 5
//   delayq-bench --workload W2 --jobs 1000000 --delay-max 5
//   delayq-bench --workload W1|W2 --backend heap|asio ...   (the baselines, w2.h)
//   delayq-bench --workload W1 --backend redis --redis unix:///tmp/redis.sock --consumers 4
//   delayq-bench --workload redis-memory --redis unix:///tmp/redis.sock --jobs 100000
//   delayq-bench --workload wheel-vs-zset --redis unix:///tmp/redis.sock --jobs 20000
// The redis workloads use a server the caller started (bench/redis.sh starts a private one);
// each run uses a queue of its own and deletes its keys at the end.
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
#include "delayq/redis.h"
#include "delayq/store.h"
#include "delayq/timer_service.h"
#include "delayq/timing_wheel.h"
#include "redis/connection.h"
#include "capacity.h"
#include "report.h"
#include "w2.h"

namespace {

using namespace std::chrono_literals;
using delayq::Duration;
using Steady = std::chrono::steady_clock;
using delayq::bench::num;
using delayq::bench::rss_bytes;
using delayq::bench::seconds;
using delayq::bench::summary_json;

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
  double horizon_s = 3600;  // capacity, disk-churn: StoreOptions::horizon in seconds (0: none)
  size_t rounds = 60;       // disk-churn: rounds of half a day each
  std::string redis;  // redis: the server's url
  uint32_t connections = 0;  // redis: connections per client (0: consumers + producers + 1)
  uint32_t claim_batch = 1;  // redis: RedisOptions::claim_batch
  bool consume = false;      // W1: the consumers are one Queue::consume() (else reserve/ack loops)
  size_t expected_jobs = 0;  // memory, rocksdb: EngineOptions::expected_jobs
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "delayq-bench: " << why << "\n"
            << "usage: delayq-bench [--workload W1|W2] [--backend memory|asio|heap|...] [--jobs N]\n"
               "                    [--delay-max SECONDS] [--consumers N] [--shards N]\n"
               "                    [--batch N] [--tick-ms MS] [--slack-us US] [--producers N]\n"
               "                    [--sync always|batch|periodic|none] [--dir DIR]\n"
               "                    [--sync-batch-ops N] [--sync-interval-ms MS]\n"
               "                    [--time-limit SECONDS] [--seed N] [--horizon-s S]\n"
               "                    [--redis URL] [--connections N] [--claim-batch N]  (--backend redis)\n"
               "                    [--consume 0|1]  (W1: consumers as one Queue::consume())\n"
               "                    [--expected-jobs N]  (EngineOptions::expected_jobs)\n"
               "                    [--rounds N]  (disk-churn)\n"
               "       workloads: W1 W2 recovery reopen capacity disk-churn redis-memory\n"
               "       wheel-vs-zset\n"
               "       backends: memory (W2: TimerService) rocksdb redis; baselines asio (one\n"
               "       steady_timer per job, W1 W2), heap (priority_queue + mutex + timer thread,\n"
               "       W1 W2), rocksdb-raw (W1)\n";
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
    // Checked before any conversion: at most 1e9 (seconds, milliseconds, counts), so that no
    // cast to an integer overflows and no duration in ns passes int64; a seed up to 2^53.
    auto need_num = [&](double lo, double hi = 1e9) {
      if (!is_num || !(num >= lo && num <= hi)) {
        std::ostringstream range;
        range << lo << " to " << hi;
        usage("bad value for " + k + ": '" + v + "' (a number from " + range.str() + ")");
      }
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
    else if (k == "--seed") a.seed = static_cast<uint64_t>(need_num(0, 9007199254740992.0));
    else if (k == "--horizon-s") a.horizon_s = need_num(0);
    else if (k == "--redis") a.redis = v;
    else if (k == "--connections") a.connections = static_cast<uint32_t>(need_num(1));
    else if (k == "--claim-batch") a.claim_batch = static_cast<uint32_t>(need_num(1));
    else if (k == "--consume") a.consume = need_num(0) != 0;
    else if (k == "--expected-jobs") a.expected_jobs = static_cast<size_t>(need_num(0));
    else if (k == "--rounds") a.rounds = static_cast<size_t>(need_num(1));
    else usage("unknown option " + k);
  }
  if (a.workload != "W1" && a.workload != "W2" && a.workload != "recovery" &&
      a.workload != "reopen" && a.workload != "capacity" && a.workload != "disk-churn" &&
      a.workload != "redis-memory" &&
      a.workload != "wheel-vs-zset")
    usage("unknown workload " + a.workload);
  if (a.workload == "capacity" || a.workload == "disk-churn") a.backend = "rocksdb";
  if (a.workload == "redis-memory" || a.workload == "wheel-vs-zset") a.backend = "redis";
  if (a.backend != "memory" && a.backend != "asio" && a.backend != "heap" &&
      a.backend != "rocksdb" && a.backend != "rocksdb-raw" && a.backend != "redis")
    usage("backend '" + a.backend + "' is not built yet (memory, rocksdb, redis; baselines asio, heap, rocksdb-raw)");
  if (a.workload == "W2" && a.backend != "memory" && a.backend != "asio" && a.backend != "heap")
    usage("W2 runs on memory (TimerService), asio or heap, not " + a.backend);
  if (a.backend == "redis" && a.redis.empty())
    usage("--backend redis needs --redis URL (unix:///path/redis.sock or redis://host:port)");
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


// A run against the caller's Redis server: a queue of its own (a name no other run uses, so runs
// never see each other's jobs), raw connections for INFO and the baselines, and clean-up of the
// queue's keys at the end.
class RedisRun {
 public:
  RedisRun(const Args& a, const std::string& what) : a_(a) {
    queue_ = "bench-" + what + "-" + std::to_string(getpid()) + "-" +
             std::to_string(Steady::now().time_since_epoch().count() % 1000000007);
    conns_ = a.connections ? a.connections
                           : static_cast<uint32_t>(std::min<size_t>(64, a.consumers + a.producers + 1));
  }
  const std::string& queue() const { return queue_; }
  uint32_t connections() const { return conns_; }

  delayq::Result<std::unique_ptr<delayq::Queue>> open(uint32_t shards = 0) const {
    delayq::RedisOptions o;
    o.url = a_.redis;
    o.queue = queue_;
    o.shards = shards ? shards : static_cast<uint32_t>(a_.shards);
    o.connections = conns_;
    o.claim_batch = a_.claim_batch;
    o.seed = a_.seed;
    auto q = delayq::open_redis(o);
    if (!q) return q.status();
    return std::move(*q);
  }

  // A connection of its own; exits on failure (a benchmark without its server is no run).
  std::unique_ptr<delayq::redis::Connection> connect() const {
    auto ep = delayq::redis::parse_url(a_.redis);
    if (!ep) die(ep.status().to_string());
    auto c = delayq::redis::Connection::open(*ep, 5s, 60s);
    if (!c) die(c.status().to_string());
    return std::move(*c);
  }
  delayq::redis::Reply cmd(const std::vector<std::string_view>& argv) const {
    auto r = connect()->call(argv);
    if (!r) die(r.status().to_string());
    return std::move(*r);
  }

  // One "field:value" of INFO <section>, as a number.
  double info(const char* section, const std::string& field) const {
    const std::string text = cmd({"INFO", section}).str;
    const size_t at = text.find("\n" + field + ":");
    return at == std::string::npos ? -1 : std::strtod(text.c_str() + at + field.size() + 2, nullptr);
  }
  std::string config(const char* name) const {
    const delayq::redis::Reply r = cmd({"CONFIG", "GET", name});
    return r.elements.size() == 2 ? r.elements[1].str : "?";
  }
  // The server settings that shape a run, as params fields.
  std::string server_params() const {
    return ",\"appendonly\":\"" + config("appendonly") + "\",\"appendfsync\":\"" +
           config("appendfsync") + "\",\"redis_version\":\"" + version() + "\"";
  }
  std::string version() const {
    const std::string text = cmd({"INFO", "server"}).str;
    const size_t at = text.find("redis_version:");
    return at == std::string::npos ? "?" : text.substr(at + 14, text.find('\r', at) - at - 14);
  }

  // Deletes every key of the run's queue.
  void cleanup() const {
    auto c = connect();
    const std::string match = "{dq:" + queue_ + ":*";
    std::string cursor = "0";
    do {
      auto r = c->call({"SCAN", cursor, "MATCH", match, "COUNT", "1000"});
      if (!r || r->elements.size() != 2) return;
      cursor = r->elements[0].str;
      // DEL, not UNLINK: memory figures taken next must not see a background free in progress.
      std::vector<std::string_view> del{"DEL"};
      for (const auto& k : r->elements[1].elements) del.push_back(k.str);
      if (del.size() > 1) (void)c->call(del);
    } while (cursor != "0");
  }

  [[noreturn]] static void die(const std::string& why) {
    std::cerr << "delayq-bench: redis: " << why << "\n";
    std::exit(2);
  }

 private:
  const Args& a_;
  std::string queue_;
  uint32_t conns_;
};

int run_w1(const Args& a) {
  delayq::EngineOptions opt;
  opt.tick = std::chrono::milliseconds(a.tick_ms);
  opt.shards = a.shards;
  opt.seed = a.seed;
  opt.expected_jobs = a.expected_jobs;
  if (a.slack_us >= 0) opt.timer_slack = std::chrono::nanoseconds(static_cast<int64_t>(a.slack_us * 1000));
  const StoreDir dir(a.backend == "rocksdb" ? a.dir : "/");
  delayq::Result<std::unique_ptr<delayq::Queue>> q = delayq::Status(delayq::Errc::invalid_argument, "");
  std::unique_ptr<RedisRun> redis;
  if (a.backend == "redis") {
    redis = std::make_unique<RedisRun>(a, "w1");
    q = redis->open();
  } else if (a.backend == "rocksdb") {
    delayq::StoreOptions so;
    so.dir = dir.path();
    so.sync = *delayq::parse_sync(a.sync);
    so.sync_batch_ops = a.sync_batch_ops;
    so.sync_interval = sync_interval(a);
    so.engine = opt;
    auto e = delayq::open_store(so);
    if (e) q = std::unique_ptr<delayq::Queue>(std::move(*e)); else q = e.status();
  } else {
    auto e = delayq::Engine::open(opt);
    if (e) q = std::unique_ptr<delayq::Queue>(std::move(*e)); else q = e.status();
  }
  if (!q) {
    std::cerr << q.status().to_string() << "\n";
    return 2;
  }
  delayq::Queue& engine = **q;
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
  // A delivery received: its lateness, and whether it came before.
  auto receive = [&](const delayq::Delivery& d) {
    const delayq::TimePoint now = sys.now();
    const size_t i = std::stoul(d.id);
    lateness_ms[i] = std::chrono::duration<double, std::milli>(now - (pushed_at[i] + delay[i])).count();
    if (got[i].exchange(1)) duplicates.fetch_add(1);
  };
  auto acked = [&] {
    last_ack_ns.store(Steady::now().time_since_epoch().count());
    if (received.fetch_add(1) + 1 == n) stop.store(true);
  };
  std::vector<std::thread> consumers;
  delayq::Consumer consumer;
  if (a.consume) {
    // consume() with its default batching; a job counts as acknowledged when its handler returns
    // ack (consume() sends the acks of a batch together, at most about a millisecond later).
    consumer = engine.consume(topic, [&](const delayq::Delivery& d) {
      receive(d);
      acked();
      return delayq::HandlerResult::ack();
    }, a.consumers);
  }
  for (size_t c = 0; c < (a.consume ? 0 : a.consumers); ++c) {
    consumers.emplace_back([&] {
      while (!stop.load()) {
        delayq::Result<delayq::Delivery> d = engine.reserve(topic, 100ms);
        if (!d) continue;
        receive(*d);
        if (!engine.ack(d->token).ok()) continue;
        acked();
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
  consumer.stop();
  const size_t got_n = received.load();
  const double e2e = got_n ? seconds(Steady::time_point(Steady::duration(last_ack_ns.load())) - start) : 0;
  std::vector<double> lat;
  lat.reserve(got_n);
  for (size_t i = 0; i < n; ++i)
    if (got[i].load()) lat.push_back(lateness_ms[i]);

  std::cout << "{\"peer\":\"delayq-" << a.backend << "\",\"workload\":\"W1\",\"jobs\":" << n
            << ",\"push_per_s\":" << num(n / push_s) << ",\"end_to_end_s\":" << num(e2e)
            << ",\"lateness_ms\":" << summary_json(lat) << ",\"received\":" << got_n
            << ",\"duplicates\":" << duplicates.load() << ",\"params\":{\"delay_max_s\":"
            << num(a.delay_max_s) << ",\"consumers\":" << a.consumers << ",\"producers\":"
            << a.producers;
  if (redis) {
    std::cout << ",\"shards\":" << a.shards << ",\"batch\":" << a.batch
              << ",\"connections\":" << redis->connections() << ",\"claim_batch\":"
              << a.claim_batch << ",\"consume\":" << a.consume << redis->server_params() << "}}"
              << std::endl;
  } else {
    std::cout << (a.backend == "rocksdb" ? sync_params(a) : ",\"sync\":\"none\"")
              << ",\"tick_ms\":" << a.tick_ms << ",\"shards\":" << a.shards
              << ",\"batch\":" << a.batch << ",\"timer_slack_us\":"
              << std::chrono::duration<double, std::micro>(opt.timer_slack).count()
              << ",\"expected_jobs\":" << a.expected_jobs << "}}" << std::endl;
  }
  q->reset();
  if (redis) redis->cleanup();
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
            << ",\"lateness_ms\":" << summary_json(lat) << ",\"received\":" << got
            << ",\"params\":{\"delay_max_s\":" << num(a.delay_max_s)
            << ",\"threads\":" << a.consumers << "}}" << std::endl;
  return got == n ? 0 : 1;
}

// The baseline for the store's write path: raw RocksDB doing the writes a W1 job costs delayq,
// at the same moments, with the same sync setting and threads. Producers Put a ~100-byte value
// under an 8-byte key in push order (the push); once the job's delay has passed, a consumer
// thread Puts it again (the reservation, which delayq journals before handing a job out) and
// Deletes it (the ack). Each write is its own RocksDB write (with --batch N, the pushes go N to
// a write, as push_batch does), synced as --sync says: always
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
  // Pushes: one Put per write, or with --batch N, N Puts per write (what push_batch costs).
  auto produce = [&](size_t count) {
    const size_t per_write = std::max<size_t>(1, a.batch);
    for (size_t i = 0; i < count && !failed.load(); i += per_write) {
      const size_t m = std::min(per_write, count - i);
      const uint64_t first = seq.fetch_add(m) + 1;
      const Steady::time_point now = Steady::now();
      rocksdb::WriteBatch batch;
      for (uint64_t k = first; k < first + m; ++k) (void)batch.Put(key_of(k), value);
      write([&](const rocksdb::WriteOptions& wo) { return db->Write(wo, &batch); });
      {
        std::lock_guard l(mu);
        for (uint64_t k = first; k < first + m; ++k) due.push({now + delay[k - 1], k});
      }
      cv.notify_all();
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
            << ",\"batch\":" << a.batch << ",\"value_bytes\":100,\"writes_per_job\":3}}"
            << std::endl;
  return failed.load() || consumed.load() != n ? 1 : 0;
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

// capacity: far-future jobs pending, with the disk tier or without (capacity.h).
int run_capacity_of(const Args& a) {
  delayq::bench::CapacityArgs c;
  c.jobs = a.jobs;
  c.dir = a.dir;
  c.sync = delayq::parse_sync(a.sync).value();
  c.sync_params = sync_params(a);
  c.sync_batch_ops = a.sync_batch_ops;
  c.sync_interval = sync_interval(a);
  c.batch = a.batch;
  c.shards = a.shards;
  c.horizon_s = a.horizon_s;
  c.seed = a.seed;
  return a.workload == "disk-churn" ? delayq::bench::run_disk_churn(c, a.rounds)
                                    : delayq::bench::run_capacity(c);
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


// redis-memory: what a pending job costs the server. used_memory (INFO memory) before and after
// pushing N jobs due in an hour (64-byte bodies, 6-byte ids, one topic), divided by N. Beside
// it, the same N ids as bare members of one sorted set (ZADD id score): the floor any
// ZSET-based delay queue pays.
int run_redis_memory(const Args& a) {
  RedisRun run(a, "mem");
  auto q = run.open();
  if (!q) RedisRun::die(q.status().to_string());
  const std::string body(64, 'x');
  auto ids = [&](size_t i) {
    std::string id = std::to_string(i);
    return std::string(6 - std::min<size_t>(6, id.size()), '0') + id;
  };
  const double before = run.info("memory", "used_memory");
  for (size_t i = 0; i < a.jobs; i += 1000) {
    std::vector<delayq::JobSpec> specs;
    for (size_t k = i; k < std::min(a.jobs, i + 1000); ++k)
      specs.push_back({.topic = "mem", .id = ids(k), .delay = 1h, .body = body});
    for (auto& r : (*q)->push_batch(std::move(specs)))
      if (!r) RedisRun::die(r.status().to_string());
  }
  const double after = run.info("memory", "used_memory");
  q->reset();
  run.cleanup();

  auto c = run.connect();
  const std::string zkey = "{dq:" + run.queue() + ":zset}";
  const double zbefore = run.info("memory", "used_memory");
  std::vector<std::string> hold;
  for (size_t i = 0; i < a.jobs; i += 1000) {
    std::vector<std::vector<std::string_view>> cmds;
    hold.clear();
    for (size_t k = i; k < std::min(a.jobs, i + 1000); ++k) {
      hold.push_back(std::to_string(1700000000000000 + k * 997));
      hold.push_back(ids(k));
    }
    for (size_t h = 0; h < hold.size(); h += 2) cmds.push_back({"ZADD", zkey, hold[h], hold[h + 1]});
    if (!c->call_many(cmds)) RedisRun::die("ZADD failed");
  }
  const double zafter = run.info("memory", "used_memory");
  (void)c->call({"DEL", zkey});
  std::cout << "{\"peer\":\"delayq-redis\",\"workload\":\"redis-memory\",\"jobs\":" << a.jobs
            << ",\"used_memory_before\":" << static_cast<uint64_t>(before)
            << ",\"used_memory_after\":" << static_cast<uint64_t>(after)
            << ",\"bytes_per_job\":" << num((after - before) / a.jobs)
            << ",\"zset_bytes_per_entry\":" << num((zafter - zbefore) / a.jobs)
            << ",\"params\":{\"body_bytes\":64,\"id_bytes\":6,\"shards\":" << a.shards
            << run.server_params() << "}}" << std::endl;
  return 0;
}

// wheel-vs-zset: the cost of one schedule and one claim, in-process against Redis.
//   wheel_schedule / wheel_fire: delayq::TimingWheel, N entries due uniformly over 5000 ticks,
//     then advance() over all of them (cost per fired entry). One thread, no locks.
//   ping: one round trip, the floor under every Redis figure below.
//   zadd / zpopmin: a bare sorted set, one command per round trip; *_pipelined: 100 per round
//     trip (mostly the server's own cost).
//   push_script: Queue::push of a job due in a moment (the push script: a ZADD plus the job's
//     record, body, counters); push_script_batch100: push_batch of 100.
//   claim_script: Queue::reserve of a due job (the claim script, which also moves due jobs from
//     the delayed set to the ready line); ack_script: Queue::ack.
// All Redis calls from one client thread on one connection.
int run_wheel_vs_zset(const Args& a) {
  const size_t n = a.jobs;
  std::map<std::string, double> ns;
  auto per_op = [&](const char* name, size_t ops, auto&& body) {
    const Steady::time_point t0 = Steady::now();
    body();
    ns[name] = std::chrono::duration<double, std::nano>(Steady::now() - t0).count() / ops;
  };

  {
    std::mt19937_64 rng(a.seed);
    std::vector<uint64_t> due(n);
    for (auto& d : due) d = 1 + rng() % 5000;
    delayq::TimingWheel wheel(0);
    per_op("wheel_schedule", n, [&] {
      for (size_t i = 0; i < n; ++i) wheel.schedule(due[i], i);
    });
    uint64_t sum = 0;
    per_op("wheel_fire", n, [&] {
      wheel.advance(5001, [&](uint64_t payload, uint64_t) { sum += payload; });
    });
    if (sum != n * (n - 1) / 2) RedisRun::die("the wheel lost entries");
  }

  RedisRun run(a, "zset");
  auto c = run.connect();
  auto must = [](auto&& r) {
    if (!r) RedisRun::die(r.status().to_string());
    return std::move(*r);
  };
  const std::string zkey = "{dq:" + run.queue() + ":zset}";
  std::vector<std::string> score(n), member(n);
  std::mt19937_64 rng(a.seed);
  for (size_t i = 0; i < n; ++i) {
    score[i] = std::to_string(1700000000000000 + rng() % 5000000);
    member[i] = std::to_string(i);
  }
  per_op("ping", n, [&] {
    for (size_t i = 0; i < n; ++i) must(c->call({"PING"}));
  });
  per_op("zadd", n, [&] {
    for (size_t i = 0; i < n; ++i) must(c->call({"ZADD", zkey, score[i], member[i]}));
  });
  per_op("zpopmin", n, [&] {
    for (size_t i = 0; i < n; ++i) must(c->call({"ZPOPMIN", zkey}));
  });
  per_op("zadd_pipelined", n, [&] {
    for (size_t i = 0; i < n; i += 100) {
      std::vector<std::vector<std::string_view>> cmds;
      for (size_t k = i; k < std::min(n, i + 100); ++k) cmds.push_back({"ZADD", zkey, score[k], member[k]});
      must(c->call_many(cmds));
    }
  });
  per_op("zpopmin_pipelined", n, [&] {
    for (size_t i = 0; i < n; i += 100) {
      std::vector<std::vector<std::string_view>> cmds(std::min<size_t>(100, n - i), {"ZPOPMIN", zkey});
      must(c->call_many(cmds));
    }
  });
  (void)c->call({"UNLINK", zkey});

  Args one = a;
  one.consumers = 1;
  one.producers = 1;
  one.connections = 1;
  RedisRun qrun(one, "zsetq");
  auto q = must(qrun.open(1));
  const std::string body(64, 'x');
  // Every job is due 2 s after the first push: by the time the claims start, all are due.
  const delayq::TimePoint due = delayq::SystemClock::instance().now() + 2s;
  per_op("push_script", n, [&] {
    for (size_t i = 0; i < n; ++i)
      must(q->push({.topic = "z", .id = "a" + member[i], .due_at = due, .body = body}));
  });
  per_op("push_script_batch100", n, [&] {
    for (size_t i = 0; i < n; i += 100) {
      std::vector<delayq::JobSpec> specs;
      for (size_t k = i; k < std::min(n, i + 100); ++k)
        specs.push_back({.topic = "z", .id = "b" + member[k], .due_at = due, .body = body});
      for (auto& r : q->push_batch(std::move(specs))) must(r);
    }
  });
  while (delayq::SystemClock::instance().now() < due + 10ms) std::this_thread::sleep_for(10ms);
  std::vector<delayq::Token> tokens;
  tokens.reserve(2 * n);
  per_op("claim_script", 2 * n, [&] {
    for (size_t i = 0; i < 2 * n; ++i) tokens.push_back(must(q->reserve("z", 0ms)).token);
  });
  per_op("ack_script", 2 * n, [&] {
    for (const auto& t : tokens)
      if (auto s = q->ack(t); !s.ok()) RedisRun::die(s.to_string());
  });
  q.reset();
  qrun.cleanup();

  std::cout << "{\"peer\":\"delayq-redis\",\"workload\":\"wheel-vs-zset\",\"jobs\":" << n
            << ",\"ns_per_op\":{";
  bool first = true;
  for (const char* k : {"wheel_schedule", "wheel_fire", "ping", "zadd", "zpopmin",
                        "zadd_pipelined", "zpopmin_pipelined", "push_script",
                        "push_script_batch100", "claim_script", "ack_script"}) {
    std::cout << (first ? "" : ",") << "\"" << k << "\":" << num(ns[k]);
    first = false;
  }
  std::cout << "},\"ratios\":{\"push_script_vs_zadd\":" << num(ns["push_script"] / ns["zadd"])
            << ",\"claim_script_vs_zpopmin\":" << num(ns["claim_script"] / ns["zpopmin"])
            << ",\"zadd_vs_wheel_schedule\":" << num(ns["zadd"] / ns["wheel_schedule"])
            << ",\"zpopmin_vs_wheel_fire\":" << num(ns["zpopmin"] / ns["wheel_fire"])
            << ",\"push_script_vs_wheel_schedule\":" << num(ns["push_script"] / ns["wheel_schedule"])
            << ",\"claim_script_vs_wheel_fire\":" << num(ns["claim_script"] / ns["wheel_fire"])
            << "},\"params\":{\"body_bytes\":64,\"wheel_span_ticks\":5000,\"pipeline\":100"
            << run.server_params() << "}}" << std::endl;
  return 0;
}

// The timer workloads' view of the options (w2.h).
delayq::bench::TimerRun timer_run(const Args& a) {
  return {.jobs = a.jobs, .delay = random_delays(a), .consumers = a.consumers,
          .producers = a.producers, .delay_max_s = a.delay_max_s,
          .time_limit_s = a.time_limit_s, .tick_ms = a.tick_ms};
}

int run_w2(const Args& a) {
  const delayq::bench::TimerRun r = timer_run(a);
  if (a.backend == "heap") return delayq::bench::run_w2_heap(r);
  if (a.backend == "asio") return delayq::bench::run_w2_asio(r);
  return delayq::bench::run_w2_timer_service(r);
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  std::cerr << "delayq-bench: " << a.workload << " on " << a.backend << ", " << a.jobs << " jobs";
  if (a.workload == "W1" || a.workload == "W2") std::cerr << ", delays up to " << a.delay_max_s << " s";
  std::cerr << "\n";
  if (a.workload == "W2") return run_w2(a);
  if (a.workload == "recovery") return run_recovery(a);
  if (a.workload == "reopen") return run_reopen(a);
  if (a.workload == "capacity" || a.workload == "disk-churn") return run_capacity_of(a);
  if (a.workload == "redis-memory") return run_redis_memory(a);
  if (a.workload == "wheel-vs-zset") return run_wheel_vs_zset(a);
  if (a.backend == "asio") return run_w1_asio(a);
  if (a.backend == "heap") return delayq::bench::run_w1_heap(timer_run(a));
  if (a.backend == "rocksdb-raw") return run_rocksdb_raw(a);
  return run_w1(a);
}
