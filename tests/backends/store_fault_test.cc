// Write faults under the durable store (docs/durability.md, "Write faults"): RocksDB runs on a
// file system that fails appends to, or syncs of, its write-ahead log with ENOSPC or EIO on
// command (tests/support/fault_fs.*; a real disk that fills up is in store_disk_test.cc). Checked: every
// call whose change was not made durable answers io_error, naming the cause; nothing is handed out
// after the failure; the store reopened without the fault holds every answered change and nothing
// of a refused append, with states and attempts that match what the callers were told.
#include <gtest/gtest.h>
#include <rocksdb/env.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "delayq/store.h"
#include "fault_fs.h"
#include "store_files.h"
#include "wal/store_testing.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using faults::Fault;
using faults::Op;

struct Case {
  Sync sync;
  Op op;
  Fault fault;
};

std::string case_name(const ::testing::TestParamInfo<Case>& p) {
  return std::string(to_string(p.param.sync)) + "_" + faults::to_string(p.param.op) + "_" +
         faults::to_string(p.param.fault);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A call refused because of the fault: io_error, naming the injected cause.
void expect_fault(const Status& s, const std::string& what) {
  EXPECT_TRUE(s.is(Errc::io_error)) << what << ": " << s.to_string();
  EXPECT_TRUE(has(s.message(), "injected")) << what << ": the cause is named: " << s.message();
}

class StoreFault : public ::testing::TestWithParam<Case> {
 protected:
  std::unique_ptr<Engine> open(bool faulty) {
    StoreOptions o;
    o.dir = dir.sub("store");
    o.sync = faulty ? GetParam().sync : Sync::always;
    o.sync_batch_ops = 8;
    o.sync_interval = GetParam().sync == Sync::batch ? Duration(1h) : Duration(5ms);
    o.engine.limits.default_ttr = 1min;  // no lease runs out during a test
    o.engine.limits.default_retry = RetryPolicy::fixed(0ms, 1000);
    auto q = wal::open_store_on(o, faulty ? env.get() : nullptr);
    EXPECT_TRUE(q.ok()) << q.status().to_string();
    return q.ok() ? std::move(q).value() : nullptr;
  }

  std::shared_ptr<faults::FaultControl> control = std::make_shared<faults::FaultControl>();
  std::unique_ptr<rocksdb::Env> env = faults::fault_env(control);
  testing::TempDir dir;
};

// One write fails while several calls wait for it (group commit): the one whose write it is,
// the ones queued behind it, and a consumer blocked waiting for a job all answer io_error;
// every later call too.
TEST_P(StoreFault, EveryCallWaitingOnTheFailedWriteAnswersIoError) {
  auto q = open(true);
  ASSERT_TRUE(q);
  // Jobs due later: no call makes a job ready, so nothing but the failure wakes the waiters.
  auto job = [](std::string id) { return JobSpec{.topic = "t", .id = std::move(id), .delay = 1h}; };
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(q->push(job("before" + std::to_string(i))).ok());
  constexpr int kWaiting = 6;
  std::optional<Result<Delivery>> blocked;
  std::optional<Result<std::string>> lead;
  std::vector<std::optional<Result<std::string>>> waiting(kWaiting);
  std::jthread consumer, leader;
  std::vector<std::jthread> waiters;
  // Should a check fail half-way: nothing stays held and nobody waits, so that the threads join
  // (this runs first).
  struct Cleanup {
    faults::FaultControl& control;
    std::unique_ptr<Engine>& q;
    ~Cleanup() {
      control.clear();
      if (q) q->close();
    }
  } cleanup{*control, q};

  consumer = std::jthread([&] { blocked = q->reserve("empty", 60s); });
  auto async = std::make_shared<std::promise<Status>>();
  std::future<Status> async_result = async->get_future();
  q->reserve_async({"empty"}, 60s, [async](Result<Delivery> r) { async->set_value(r.status()); });

  control->hold_then_fail(GetParam().op, GetParam().fault);
  leader = std::jthread([&] { lead = q->push(job("lead")); });
  ASSERT_TRUE(control->held()) << "the write of 'lead' reached the log";
  for (int i = 0; i < kWaiting; ++i)
    waiters.emplace_back([&, i] { waiting[i] = q->push(job("w" + std::to_string(i))); });
  // Each waiter's change is applied (visible to get) before it waits for the held write.
  for (int i = 0; i < kWaiting; ++i)
    for (int tries = 0; !q->get("w" + std::to_string(i)).ok(); ++tries) {
      ASSERT_LT(tries, 3000) << "w" << i << " never queued";
      std::this_thread::sleep_for(10ms);
    }
  std::this_thread::sleep_for(50ms);  // let them reach the wait (not needed for the checks)
  control->release();
  leader.join();
  for (auto& t : waiters) t.join();
  consumer.join();

  expect_fault(lead->status(), "the call whose write failed");
  for (int i = 0; i < kWaiting; ++i) expect_fault(waiting[i]->status(), "w" + std::to_string(i));
  expect_fault(blocked->status(), "a consumer blocked in reserve");
  ASSERT_EQ(async_result.wait_for(30s), std::future_status::ready)
      << "a reserve_async waiter is answered before its wait runs out";
  expect_fault(async_result.get(), "a reserve_async waiter");
  expect_fault(q->reserve("t", 0ms).status(), "a reserve after the failure");
  expect_fault(q->push({.topic = "t", .id = "later"}).status(), "a push after the failure");
  expect_fault(q->get("before0").status(), "a get after the failure");

  q.reset();
  control->clear();
  q = open(false);
  ASSERT_TRUE(q);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(q->get("before" + std::to_string(i)).ok()) << i;
  for (int i = 0; i < kWaiting; ++i)
    EXPECT_TRUE(q->get("w" + std::to_string(i)).is(Errc::not_found))
        << "w" << i << " was never written";
  // A failed append wrote nothing; a failed sync came after the bytes were written, and they
  // may be read back.
  if (GetParam().op == Op::append) {
    EXPECT_TRUE(q->get("lead").is(Errc::not_found));
  }
  EXPECT_TRUE(q->get("later").is(Errc::not_found));
}

INSTANTIATE_TEST_SUITE_P(Always, StoreFault,
                         ::testing::Values(Case{Sync::always, Op::append, Fault::no_space},
                                           Case{Sync::always, Op::append, Fault::io_error},
                                           Case{Sync::always, Op::sync, Fault::no_space},
                                           Case{Sync::always, Op::sync, Fault::io_error}),
                         case_name);

// ---- a mixed load that meets the fault ------------------------------------------------------

// What the callers were told about one job.
struct JobLog {
  bool push_ok = false;
  uint32_t handed = 0;  // the highest attempt a reserve answered with
  uint32_t held = 0;    // the attempt handed out whose ack or nack has not answered success (or 0)
  bool acked = false;   // an ack answered success
  bool settle_failed = false;  // an ack or nack answered io_error
};

// Producers push (one by one and in batches of three) and consumers reserve, then ack or nack,
// until the fault stops the queue; every answer is logged.
class Load {
 public:
  explicit Load(Engine& q) : q_(q) {}

  void run(int producers, int consumers) {
    std::vector<std::thread> threads;
    for (int t = 0; t < consumers; ++t) threads.emplace_back([this, t] { consume(t); });
    for (int t = 0; t < producers; ++t) threads.emplace_back([this, t] { produce(t); });
    for (auto& t : threads) t.join();
  }

  std::map<std::string, JobLog> jobs;
  std::atomic<int> handed_after_failure{0};
  std::atomic<int> failures{0};
  std::string unexpected;  // the first answer that was neither success nor io_error

 private:
  // Returns false once the queue has failed.
  bool note(const Status& s, const std::string& what) {
    if (s.ok() || s.is(Errc::timeout)) return true;
    std::lock_guard l(mu_);
    if (s.is(Errc::io_error) && has(s.message(), "injected")) {
      failed_ = true;
      ++failures;
    } else if (unexpected.empty()) {
      unexpected = what + ": " + s.to_string();
    }
    return false;
  }
  void log(const std::string& id, const std::function<void(JobLog&)>& f) {
    std::lock_guard l(mu_);
    f(jobs[id]);
  }
  bool failed() {
    std::lock_guard l(mu_);
    return failed_;
  }

  void produce(int t) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;  // a bound, not a speed
    for (int k = 0; std::chrono::steady_clock::now() < deadline; ++k) {
      const std::string base = "p" + std::to_string(t) + "-" + std::to_string(k);
      std::vector<JobSpec> specs;
      for (int b = 0; b < (k % 4 == 3 ? 3 : 1); ++b)
        specs.push_back({.topic = "t", .id = base + "-" + std::to_string(b)});
      std::vector<Result<std::string>> got =
          specs.size() == 1 ? std::vector{q_.push(specs[0])} : q_.push_batch(specs);
      bool ok = true;
      for (size_t b = 0; b < specs.size(); ++b) {
        log(specs[b].id, [&](JobLog& j) { j.push_ok = got[b].ok(); });
        ok = note(got[b].status(), "push " + specs[b].id) && ok;
      }
      if (!ok) return;
      std::this_thread::sleep_for(50us);  // leave the consumers room on a loaded machine
    }
  }

  void consume(int t) {
    std::mt19937 rng(static_cast<uint32_t>(t));
    for (int refused = 0; refused < 3;) {
      const bool after_failure = failed();
      Result<Delivery> d = q_.reserve("t", 20ms);
      if (!note(d.status(), "reserve")) {
        ++refused;
        continue;
      }
      if (!d.ok()) {
        if (after_failure || stop_) return;
        continue;
      }
      if (after_failure) ++handed_after_failure;
      log(d->id, [&](JobLog& j) {
        j.handed = std::max(j.handed, d->attempt);
        j.held = std::max(j.held, d->attempt);  // a later delivery replaces an earlier one
      });
      const bool ack = rng() % 3 != 0;
      const Status s = ack ? q_.ack(d->token) : q_.nack(d->token, 0ms);
      log(d->id, [&](JobLog& j) {
        if (s.ok() && j.held == d->attempt) j.held = 0;
        j.acked = j.acked || (ack && s.ok());
        j.settle_failed = j.settle_failed || !s.ok();
      });
      note(s, ack ? "ack" : "nack");
    }
  }

  Engine& q_;
  std::mutex mu_;
  bool failed_ = false;
  std::atomic<bool> stop_{false};
};

class StoreFaultLoad : public StoreFault {};

// Checks the reopened store against what the callers were told. A failed append wrote nothing;
// a failed sync leaves its write in doubt (readable after the reopen or not), so the change of
// a call refused because of it may be there.
void check_reopened(Engine& q, const std::map<std::string, JobLog>& jobs, bool in_doubt) {
  uint64_t found = 0;
  for (const auto& [id, j] : jobs) {
    const Result<JobInfo> info = q.get(id);
    ASSERT_TRUE(info.ok() || info.is(Errc::not_found)) << id << ": " << info.status().to_string();
    const bool unsure = j.settle_failed && in_doubt;
    // Must be there, must not be there: answered pushes and acks, refused pushes.
    EXPECT_FALSE(j.acked && info.ok()) << id << ": acked, and back";
    EXPECT_FALSE(j.push_ok && !j.acked && !unsure && !info.ok())
        << id << ": an answered push is lost";
    EXPECT_FALSE(!j.push_ok && j.handed > 0) << id << ": handed out, yet its push was refused";
    EXPECT_FALSE(!j.push_ok && !in_doubt && info.ok()) << id << ": a refused push was written";
    if (!info.ok()) continue;
    ++found;
    // Attempts count every delivery handed out, and at most one more (a reserve in doubt).
    EXPECT_GE(info->attempts, j.handed) << id << ": a delivery handed out was not counted";
    EXPECT_LE(info->attempts, j.handed + (in_doubt ? 1 : 0)) << id << ": attempts from nowhere";
    const bool reserved = info->state == JobState::reserved;
    EXPECT_FALSE(reserved && j.held == 0 && info->attempts == j.handed)
        << id << ": reserved by nobody";
    EXPECT_FALSE(j.held != 0 && !unsure && !reserved) << id << ": a held delivery was released";
  }
  uint64_t stored = 0;
  for (const auto& [topic, c] : q.stats().topics)
    stored += c.delayed + c.ready + c.reserved + c.dead;
  EXPECT_EQ(stored, found) << "jobs that no caller pushed";
}

TEST_P(StoreFaultLoad, EveryAnswerHoldsAfterTheReopen) {
  auto q = open(true);
  ASSERT_TRUE(q);
  // Far enough in that hundreds of calls were answered first: every write appends (fewer, larger
  // ones in always, where calls wait for the disk together) and, in always, syncs; batch syncs
  // every 8 calls, periodic every 5 ms.
  const Case c = GetParam();
  uint64_t ok_first = c.sync == Sync::always ? 150 : 500;
  if (c.op == Op::sync && c.sync != Sync::always) ok_first = c.sync == Sync::batch ? 40 : 10;
  control->fail_after(c.op, c.fault, ok_first);
  Load load(*q);
  load.run(3, 2);
  ASSERT_GT(control->failures(), 0u) << "the fault was never met";
  int pushed = 0, handed = 0, acked = 0;
  for (const auto& [id, j] : load.jobs) {
    pushed += j.push_ok;
    handed += j.handed > 0;
    acked += j.acked;
  }
  std::printf("[ load     ] before the fault: %d pushes answered, %d jobs handed out, %d acked\n",
              pushed, handed, acked);
  EXPECT_GT(pushed, 0);
  EXPECT_GT(load.failures.load(), 0) << "no caller was told of the fault";
  EXPECT_TRUE(load.unexpected.empty()) << load.unexpected;
  EXPECT_EQ(load.handed_after_failure.load(), 0) << "deliveries handed out after the failure";
  EXPECT_TRUE(q->reserve("t", 0ms).is(Errc::io_error));
  q.reset();
  control->clear();
  q = open(false);
  ASSERT_TRUE(q);
  check_reopened(*q, load.jobs, GetParam().op == Op::sync);
}

std::vector<Case> every_case() {
  std::vector<Case> out;
  for (Sync s : {Sync::always, Sync::batch, Sync::periodic})
    for (Op op : {Op::append, Op::sync})
      for (Fault f : {Fault::no_space, Fault::io_error}) out.push_back({s, op, f});
  return out;
}
INSTANTIATE_TEST_SUITE_P(Modes, StoreFaultLoad, ::testing::ValuesIn(every_case()), case_name);

}  // namespace
}  // namespace delayq
