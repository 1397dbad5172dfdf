// The durable store's workloads of delayq-bench (bench/README.md): rocksdb-raw (the baseline of
// W1's write path), recovery and reopen. The disk-tier workloads are capacity.cc and
// disk_churn.cc.
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "delayq/store.h"
#include "delayq_bench.h"
#include "report.h"

namespace delayq::bench {

using namespace std::chrono_literals;

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

}  // namespace delayq::bench
