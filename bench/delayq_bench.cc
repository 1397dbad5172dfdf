// delayq-bench: the workload driver of docs/benchmarks.md (W1, W2, ...; bench/README.md defines
// each workload and its JSON line). One JSON line per run on stdout; notes on stderr.
//
//   delayq-bench --workload W1 --backend memory --jobs 100000 --delay-max 5
//   delayq-bench --workload W2 --jobs 1000000 --delay-max 5
//   delayq-bench --workload W1|W2 --backend heap|asio ...   (the baselines, w2.h)
//   delayq-bench --workload W1 --backend redis --redis unix:///tmp/redis.sock --consumers 4
//   delayq-bench --workload redis-memory --redis unix:///tmp/redis.sock --jobs 100000
//   delayq-bench --workload wheel-vs-zset --redis unix:///tmp/redis.sock --jobs 20000
// The redis workloads use a server the caller started (bench/redis.sh starts a private one);
// each run uses a queue of its own and deletes its keys at the end.
//
// This file: the command line (parse(), usage()), what the workloads share (delayq_bench.h) and
// main(), which hands each workload to its file (delayq_bench.h lists them).
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "capacity.h"
#include "delayq/store.h"
#include "delayq_bench.h"
#include "report.h"
#include "w2.h"

namespace delayq::bench {

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "delayq-bench: " << why << "\n"
            << "usage: delayq-bench [--workload W1|W2] [--backend memory|asio|heap|...] [--jobs N]\n"
               "                    [--delay-max SECONDS] [--consumers N] [--shards N]\n"
               "                    [--batch N] [--tick-ms MS] [--slack-us US] [--producers N]\n"
               "                    [--sync always|batch|periodic|none] [--dir DIR]\n"
               "                    [--sync-batch-ops N] [--sync-interval-ms MS]\n"
               "                    [--time-limit SECONDS] [--seed N] [--horizon-s S]\n"
               "                    [--redis URL] [--connections N] [--claim-batch N]  (--backend redis)\n"
               "                    [--replicas-to-ack 0..16]  (--backend redis: WAIT for that\n"
               "                    many replicas after every writing call)\n"
               "                    [--server-profile 0|1]  (--backend redis: the servers' time\n"
               "                    per script, from a slow log of every command)\n"
               "                    [--consume 0|1]  (W1: consumers as one Queue::consume())\n"
               "                    [--expected-jobs N]  (EngineOptions::expected_jobs)\n"
               "                    [--rounds N]  (disk-churn)\n"
               "                    [--priorities N]  (W1: jobs over N priorities, 0..1024;\n"
               "                    the hand-out order is checked)\n"
               "                    [--rate PER_S] [--burst N]  (rate: the topic's limit)\n"
               "                    [--schedules N] [--same-second 0|1]  (schedules: N of\n"
               "                    them every minute, first occurrences at one second or spread)\n"
               "       workloads: W1 W2 recovery reopen capacity disk-churn redis-memory\n"
               "       wheel-vs-zset rate schedules\n"
               "       backends: memory (W2: TimerService) rocksdb redis; baselines asio (one\n"
               "       steady_timer per job, W1 W2), heap (priority_queue + mutex + timer thread,\n"
               "       W1 W2), rocksdb-raw (W1)\n";
  std::exit(2);
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

namespace {

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
    else if (k == "--replicas-to-ack") a.replicas_to_ack = static_cast<uint32_t>(need_num(0, 16));
    else if (k == "--consume") a.consume = need_num(0) != 0;
    else if (k == "--server-profile") a.server_profile = need_num(0, 1) != 0;
    else if (k == "--expected-jobs") a.expected_jobs = static_cast<size_t>(need_num(0));
    else if (k == "--rounds") a.rounds = static_cast<size_t>(need_num(1));
    else if (k == "--priorities") a.priorities = static_cast<uint32_t>(need_num(0, 1024));
    else if (k == "--rate") a.rate = std::floor(need_num(1, 1e6));
    else if (k == "--burst") a.burst = static_cast<uint32_t>(need_num(1, 1e6));
    else if (k == "--schedules") a.schedules = static_cast<size_t>(need_num(1, 1e7));
    else if (k == "--same-second") a.same_second = need_num(0, 1) != 0;
    else usage("unknown option " + k);
  }
  if (a.workload != "W1" && a.workload != "W2" && a.workload != "recovery" &&
      a.workload != "reopen" && a.workload != "capacity" && a.workload != "disk-churn" &&
      a.workload != "redis-memory" && a.workload != "rate" && a.workload != "schedules" &&
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
  // schedules: --time-limit is its window of firing, a minute unless given.
  if (a.time_limit_s == 0) a.time_limit_s = a.workload == "schedules" ? 60 : a.delay_max_s + 30;
  return a;
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
}  // namespace delayq::bench

int main(int argc, char** argv) {
  using namespace delayq::bench;
  const Args a = parse(argc, argv);
  std::cerr << "delayq-bench: " << a.workload << " on " << a.backend << ", "
            << (a.workload == "schedules" ? a.schedules : a.jobs)
            << (a.workload == "schedules" ? " schedules" : " jobs");
  if (a.workload == "W1" || a.workload == "W2") std::cerr << ", delays up to " << a.delay_max_s << " s";
  std::cerr << "\n";
  if (a.workload == "W2") return run_w2(a);
  if (a.workload == "recovery") return run_recovery(a);
  if (a.workload == "reopen") return run_reopen(a);
  if (a.workload == "capacity" || a.workload == "disk-churn") return run_capacity_of(a);
  if (a.workload == "redis-memory") return run_redis_memory(a);
  if (a.workload == "wheel-vs-zset") return run_wheel_vs_zset(a);
  if (a.workload == "rate") return run_rate(a);
  if (a.workload == "schedules") return run_schedules(a);
  if (a.backend == "asio") return run_w1_asio(a);
  if (a.backend == "heap") return delayq::bench::run_w1_heap(timer_run(a));
  if (a.backend == "rocksdb-raw") return run_rocksdb_raw(a);
  return run_w1(a);
}
