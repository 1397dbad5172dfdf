// The worker process (worker.h): its store and its report pipe; the load is in loop.cc.
#include "worker.h"

#include <rocksdb/db.h>
#include <rocksdb/listener.h>
#include <rocksdb/options.h>

#include <sys/resource.h>

#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

#include "check.h"
#include "engine/test_hooks.h"
#include "fork_safe_env.h"
#include "power_loss_fs.h"
#include "wal/store_testing.h"
#include "worker_process.h"

namespace delayq::crash {

namespace {

// Reports RocksDB's flushes and compactions, so that the driver knows whether one was running
// when it killed the worker.
class BackgroundReporter final : public rocksdb::EventListener {
 public:
  explicit BackgroundReporter(WorkerProcess& w) : w_(w) {}
  void OnFlushBegin(rocksdb::DB*, const rocksdb::FlushJobInfo&) override {
    send(Kind::bg_begin, 0);
  }
  void OnFlushCompleted(rocksdb::DB*, const rocksdb::FlushJobInfo&) override {
    send(Kind::bg_end, 0);
  }
  void OnCompactionBegin(rocksdb::DB*, const rocksdb::CompactionJobInfo&) override {
    send(Kind::bg_begin, 1);
  }
  void OnCompactionCompleted(rocksdb::DB*, const rocksdb::CompactionJobInfo&) override {
    send(Kind::bg_end, 1);
  }

 private:
  void send(Kind k, uint64_t what) {
    Record r = make_record(k);
    r.n = what;
    w_.emit(r);
  }
  WorkerProcess& w_;
};

// Write buffers of 64 KiB (RocksDB's smallest) and compactions from two level-0 files: a worker
// writes a few hundred KiB per cycle, so most cycles flush and many compact.
wal::RocksDbTuning small_buffers(WorkerProcess& w) {
  return [&w](rocksdb::DBOptions& db, std::vector<rocksdb::ColumnFamilyDescriptor>& families) {
    db.listeners.push_back(std::make_shared<BackgroundReporter>(w));
    for (rocksdb::ColumnFamilyDescriptor& f : families) {
      f.options.write_buffer_size = 64 << 10;
      f.options.level0_file_num_compaction_trigger = 2;
      f.options.target_file_size_base = 256 << 10;
      f.options.max_bytes_for_level_base = 1 << 20;
    }
  };
}

// The worker's process reports the disk tier's refills (engine/test_hooks.h) through it.
WorkerProcess* refill_reporter = nullptr;

void report_refill(bool begin) {
  refill_reporter->emit(make_record(begin ? Kind::refill_begin : Kind::refill_end));
}

}  // namespace

void WorkerProcess::run(const std::string& dir, const WorkerSetup& setup, uint64_t seed) {
  StoreOptions o;
  o.dir = dir;
  o.sync = setup.sync;
  o.sync_batch_ops = setup.sync_batch_ops;
  o.sync_interval = setup.sync_interval;
  o.engine.shards = setup.shards;
  o.horizon = setup.horizon;
  rocksdb::Env* base = rocksdb::Env::Default();
  power_loss_ = !setup.sync_log.empty();
  if (power_loss_) {
    std::string error;
    recording_env_ = power_loss::sync_recording_env(setup.sync_log, &error);
    if (!recording_env_) fail_with("power-loss file system: " + error, 3);
    base = recording_env_.get();
  }
  env_ = fork_safe_env(base);
  refill_reporter = this;
  engine::set_refill_observer(report_refill);
  const int64_t open_began = ns_of(wall_now());
  Result<std::unique_ptr<Engine>> opened =
      wal::open_store_on(o, env_.get(), setup.small_buffers ? small_buffers(*this) : nullptr);
  if (!opened) fail_with("open_store: " + opened.status().to_string(), 3);
  q_ = std::move(opened).value();
  if (setup.observe)
    for (const Record& r : observation_records(observe(*q_, m_, open_began))) emit(r);
  plant_early_ = setup.fault == WorkerFault::early_delivery;
  emit(make_record(Kind::opened));
  if (m_.consumer) start_consume();
  std::vector<std::thread> others;
  std::vector<size_t> threads;  // besides this one, thread 0
  for (size_t t = 1; t < m_.threads; ++t) threads.push_back(t);
  if (m_.consumer) threads.push_back(kConsumer);
  for (size_t t : threads)
    others.emplace_back([this, t, seed] {
      try {
        run_loop(*this, t, seed);
      } catch (const std::exception& e) {
        fail_with(std::string("exception: ") + e.what(), 70);
      }
    });
  if (setup.fault == WorkerFault::dies) {
    std::this_thread::sleep_for(2ms);
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    std::abort();
  }
  run_loop(*this, 0, seed);  // never returns: the driver's SIGKILL ends the process
}

void WorkerProcess::report_delivery(const Delivery& d, size_t thread, int64_t t0, int64_t t1) {
  const std::vector<std::string> wrong = delivery_static_problems(d, m_);
  const uint64_t job = parse_job_id(d.id).value_or(0);
  bool kept;
  {
    std::lock_guard lock(mu_);
    Record rec = delivery_record(d, job, static_cast<uint8_t>(thread), t0, t1);
    if (std::exchange(plant_early_, false))
      rec.due += std::chrono::duration_cast<Duration>(std::chrono::hours(1)).count();
    send(rec);
    kept = m_.apply(rec);
    for (const std::string& v : wrong) {
      Record e = make_record(Kind::violation, job);
      e.thread = static_cast<uint8_t>(thread);
      set_text(e, v);
      send(e);
    }
  }
  if (!kept || !wrong.empty()) _exit(4);
}

void worker_main(int fd, Model& model, uint64_t seed, const std::string& dir,
                 const WorkerSetup& setup) {
  // Never back into gtest: every way out of here is _exit(). A worker the driver forgot would
  // end on its own.
  alarm(120);
  model.keep_cycle_records = false;
  WorkerProcess w(fd, model);
  try {
    w.run(dir, setup, seed);
  } catch (const std::exception& e) {
    w.fail_with(std::string("exception: ") + e.what(), 70);
  } catch (...) {
  }
  _exit(70);
}

}  // namespace delayq::crash
