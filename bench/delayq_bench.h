// What delayq-bench's workloads share (bench/README.md describes each workload and its JSON
// line): the command line as parsed (Args), the run's delays, the store directory of a rocksdb
// run, the sync fields of a line, and the workload entry points, one file per family:
//   delayq_bench.cc     the command line, main(), W2 and the capacity workloads' dispatch;
//   w1.cc               W1 on a queue (memory, rocksdb, redis) and on the Asio baseline;
//   store_workloads.cc  rocksdb-raw (W1's write-path baseline), recovery, reopen;
//   redis_workloads.cc  redis-memory, wheel-vs-zset (redis_run.h: a run against the server);
//   schedules.cc        schedules (many schedules firing every minute);
//   w2.*, heap_scheduler.*, capacity.*, disk_churn.cc: as their own first comments say.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "delayq/clock.h"
#include "delayq/engine.h"
#include "flow.h"

namespace delayq::bench {

using Steady = std::chrono::steady_clock;

// delayq-bench's options, as parse() read them (every number range-checked there).
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
  uint32_t replicas_to_ack = 0;  // redis: RedisOptions::replicas_to_ack (0 to 16)
  bool consume = false;      // W1: the consumers are one Queue::consume() (else reserve/ack loops)
  size_t expected_jobs = 0;  // memory, rocksdb: EngineOptions::expected_jobs
  uint32_t priorities = 0;   // W1: spread the jobs over this many priorities (0: the default)
  double rate = 1000;        // rate: the topic's limit, hand-outs per second
  uint32_t burst = 100;      // rate: the bucket's burst
  bool server_profile = false;  // redis: the server's time per script too (server_meter.h)
  size_t schedules = 10000;  // schedules: how many, each "every 1m"
  bool same_second = false;  // schedules: every first occurrence at one instant (else spread)
};

// Prints `why` and the usage text on stderr and exits with code 2.
[[noreturn]] void usage(const std::string& why);

// The delays of a run: whole milliseconds, uniform over [0, delay_max], from the run's seed.
std::vector<Duration> random_delays(const Args& a);

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

// The sync interval of --sync-interval-ms.
Duration sync_interval(const Args& a);
// The params fields of a rocksdb line that describe its sync mode (starting with a comma).
std::string sync_params(const Args& a);

// w1.cc
class RedisRun;
EngineOptions engine_options(const Args& a);
// The queue of a run on --backend memory, rocksdb (in `dir`) or redis (`redis` set, its queue
// named after `what`).
Result<std::unique_ptr<Queue>> open_run_queue(const Args& a, const std::string& dir,
                                              std::unique_ptr<RedisRun>& redis,
                                              const std::string& what);
// The same, with the reason it could not be opened on stderr (null then).
std::unique_ptr<Queue> open_run_queue_or_say(const Args& a, const std::string& dir,
                                             std::unique_ptr<RedisRun>& redis,
                                             const std::string& what);
int run_w1(const Args& a);
int run_w1_asio(const Args& a);
// store_workloads.cc
int run_rocksdb_raw(const Args& a);
int run_recovery(const Args& a);
int run_reopen(const Args& a);
// redis_workloads.cc
int run_redis_memory(const Args& a);
int run_wheel_vs_zset(const Args& a);
// schedules.cc
int run_schedules(const Args& a);

}  // namespace delayq::bench
