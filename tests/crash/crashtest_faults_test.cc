// delayq-crashtest's --threads and the verdicts its other tests do not reach: an early delivery,
// Sync::batch's loss bound and a worker that dies, each planted by the hidden --plant-fault
// (src/crashtest/run.cc), each failing the run with that promise named and a replay line.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "crash/crashtest_run.h"
#include "crash/load.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
using delayq::crash::kMaxThreads;
using delayq::crashtest_testing::broken_promises;
using delayq::crashtest_testing::crashtest;
using delayq::crashtest_testing::line_with;
using delayq::crashtest_testing::Ran;

// The count after `name ` in the report's "calls by thread:" line, or -1 if it is not there.
long calls_of_thread(const std::string& line, const std::string& name) {
  const std::string key = " " + name + " ";
  const size_t at = line.find(key);
  return at == std::string::npos ? -1 : std::atol(line.c_str() + at + key.size());
}

// One worker thread and the most there may be: each run says how many, every one of its worker
// threads made calls (and no other did), and every promise held.
TEST(CrashtestProgram, OneThreadAndTheMostRunAndReportSo) {
  delayq::testing::TempDir tmp("delayq-crashtest");
  ASSERT_FALSE(tmp.path().empty());
  for (const size_t threads : {size_t{1}, kMaxThreads}) {
    const std::string n = std::to_string(threads);
    const Ran r =
        crashtest("--dir " + tmp.sub("t" + n) + " --threads " + n + " --cycles 8 --no-progress");
    EXPECT_EQ(r.status, 0) << r.out;
    const std::string head = line_with(r.out, "delayq-crashtest on ");
    EXPECT_NE(head.find(threads == 1 ? ", 1 worker thread, " : ", " + n + " worker threads, "),
              std::string::npos)
        << r.out;
    const std::string by = line_with(r.out, "calls by thread:");
    for (size_t t = 0; t < kMaxThreads; ++t) {
      const long calls = calls_of_thread(by, "thread " + std::to_string(t));
      if (t < threads)
        EXPECT_GT(calls, 0) << "thread " << t << " of " << threads << ": " << by;
      else
        EXPECT_EQ(calls, -1) << "thread " << t << " of " << threads << ": " << by;
    }
    EXPECT_GT(calls_of_thread(by, "consumer"), 0) << by;
    EXPECT_NE(r.out.find("verdict: every promise held"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("planted fault"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(tmp.sub("t" + n)));
  }
  const Ran j = crashtest("--dir " + tmp.sub("j") + " --threads 3 --mode kill --cycles 2 --json");
  EXPECT_EQ(j.status, 0) << j.out;
  EXPECT_NE(j.out.find(",\"threads\":3,"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"calls_by_thread\":{\"thread 0\":"), std::string::npos) << j.out;
}

// A run with the fault planted: exit 1, `promise` the one promise BROKEN, and a replay line that
// carries the seed and every setting of the run. Returns the run and its replay line.
struct Failed {
  Ran ran;
  std::string replay;
};
Failed run_fault(const std::string& dir, const std::string& args, const std::string& fault,
                 const std::string& promise) {
  const Ran r = crashtest("--dir " + dir + " " + args + " --cycles 16 --seed 4242 --no-progress" +
                          " --plant-fault " + fault);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(line_with(r.out, "planted fault: ").size(), 0u) << r.out;
  EXPECT_EQ(line_with(r.out, promise).find("BROKEN"), 2u) << promise << "\n" << r.out;
  EXPECT_EQ(broken_promises(r.out), 1u) << r.out;
  EXPECT_NE(r.out.find("verdict: a promise broke"), std::string::npos) << r.out;
  const std::string replay = line_with(r.out, "replay: delayq-crashtest ");
  for (const std::string& flag :
       {"--dir " + dir, std::string(" --horizon mixed"), std::string(" --cycles 16"),
        std::string(" --seed 4242"), " --plant-fault " + fault})
    EXPECT_NE(replay.find(flag), std::string::npos) << flag << "\n" << r.out;
  EXPECT_FALSE(fs::exists(dir));
  return Failed{r, replay};
}

TEST(CrashtestProgram, APlantedEarlyDeliveryIsCaughtAndItsReplayFailsAgain) {
  delayq::testing::TempDir tmp("delayq-crashtest");
  ASSERT_FALSE(tmp.path().empty());
  const Failed f = run_fault(tmp.sub("x"), "--mode kill --threads 3", "deliver-early",
                             "no delivery before the job's due time");
  EXPECT_NE(f.ran.out.find("but it was reserved before its due time"), std::string::npos)
      << f.ran.out;
  EXPECT_NE(f.replay.find(" --mode kill"), std::string::npos) << f.replay;
  EXPECT_NE(f.replay.find(" --threads 3"), std::string::npos) << f.replay;
  // The replay line, run as printed, breaks the same promise.
  const Ran again = crashtest(f.replay.substr(f.replay.find("--dir")) + " --no-progress");
  EXPECT_EQ(again.status, 1) << again.out;
  EXPECT_EQ(line_with(again.out, "no delivery before").find("BROKEN"), 2u) << again.out;
  EXPECT_NE(line_with(again.out, "delayq-crashtest on ").find(", 3 worker threads, "),
            std::string::npos)
      << again.out;
}

TEST(CrashtestProgram, APlantedWorkerDeathIsCaught) {
  delayq::testing::TempDir tmp("delayq-crashtest");
  ASSERT_FALSE(tmp.path().empty());
  const Failed f = run_fault(tmp.sub("x"), "--mode kill", "worker-dies",
                             "no call failed and no worker died on its own");
  EXPECT_NE(f.ran.out.find(": the worker died of signal 6"), std::string::npos) << f.ran.out;
  EXPECT_NE(f.replay.find(" --threads 2"), std::string::npos) << f.replay;
}

TEST(CrashtestProgram, APlantedBatchStoreThatNeverSyncsBreaksTheBatchBound) {
  delayq::testing::TempDir tmp("delayq-crashtest");
  ASSERT_FALSE(tmp.path().empty());
  const Failed f = run_fault(tmp.sub("x"), "--mode power --sync batch", "batch-without-sync",
                             "a power loss takes at most sync_batch_ops - 1");
  EXPECT_NE(f.ran.out.find("the worker ran Sync::none"), std::string::npos) << f.ran.out;
  EXPECT_NE(f.ran.out.find("; Sync::batch allows 7. Lost:"), std::string::npos) << f.ran.out;
  EXPECT_NE(f.replay.find(" --mode power --sync batch"), std::string::npos) << f.replay;
}

}  // namespace
