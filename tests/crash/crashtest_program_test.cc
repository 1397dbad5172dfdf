// delayq-crashtest (src/crashtest/) as a user runs it: a short run on a fresh directory passes
// and reports; a planted fault (an answered write dropped) fails with a replay line that fails
// again; bad flags and directories it did not make are refused.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "crash/crashtest_run.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;

using delayq::crashtest_testing::broken_promises;
using delayq::crashtest_testing::crashtest;
using delayq::crashtest_testing::line_with;
using delayq::crashtest_testing::Ran;

TEST(CrashtestProgram, AShortRunPassesReportsAndCleansUp) {
  delayq::testing::TempDir tmp("delayq-crashtest");
  ASSERT_FALSE(tmp.path().empty());
  const std::string dir = tmp.sub("x");
  const Ran r = crashtest("--dir " + dir + " --sync batch --cycles 8 --no-progress");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("kill cycles: 8 in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("power-loss cycles: 8 in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("batch 8"), std::string::npos) << r.out;
  EXPECT_NE(line_with(r.out, "calls made: push ").size(), 0u) << r.out;
  for (const char* promise :
       {"no answered call lost", "no job back after it was gone", "no delivery before",
        "every job's state", "answered calls of Sync::batch"})
    EXPECT_EQ(line_with(r.out, promise).find("held"), 2u) << promise << "\n" << r.out;
  EXPECT_NE(r.out.find("verdict: every promise held"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir)) << "the run left " << dir << " behind";

  // The same as JSON, kill cycles only, no disk tier; in a directory that exists and holds what
  // an interrupted run left (its marker, a store), which the run clears and leaves empty.
  fs::create_directories(tmp.sub("kill"));
  std::ofstream(tmp.sub("kill/CURRENT")) << "MANIFEST-of-an-interrupted-run\n";
  std::ofstream(tmp.sub(".delayq-crashtest")) << "";
  const Ran j = crashtest("--dir " + tmp.path() + " --mode kill --horizon off --cycles 4 --json");
  EXPECT_EQ(j.status, 0) << j.out;
  EXPECT_EQ(j.out.rfind("{\"dir\":", 0), 0u) << j.out;
  EXPECT_NE(j.out.find("\"kill\":{\"cycles\":4,"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"answered_calls_lost\":{\"held\":true"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"ok\":true"), std::string::npos) << j.out;
  EXPECT_EQ(j.out.find("\"power\":"), std::string::npos) << j.out;
  EXPECT_TRUE(fs::exists(tmp.path()));
  EXPECT_TRUE(fs::is_empty(tmp.path()));
}

// A planted fault (--plant-fault, a hidden flag) breaks the promise the report names, and no
// other; the run exits 1 with the violation and a replay line.
Ran run_planted(const std::string& dir, const std::string& fault, const std::string& promise) {
  const Ran r = crashtest("--dir " + dir + " --mode kill --cycles 16 --seed 4242 --no-progress" +
                          " --plant-fault " + fault);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(line_with(r.out, "planted fault: ").find(" job-"), std::string::npos) << r.out;
  EXPECT_EQ(line_with(r.out, promise).find("BROKEN"), 2u) << promise << "\n" << r.out;
  EXPECT_EQ(broken_promises(r.out), 1u) << r.out;
  EXPECT_NE(r.out.find("verdict: a promise broke"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": a reopened store shows it "), std::string::npos) << r.out;
  EXPECT_NE(line_with(r.out, "replay: delayq-crashtest ").find(" --seed 4242"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir));
  return r;
}

TEST(CrashtestProgram, APlantedLostWriteFailsWithASeedThatReplaysIt) {
  delayq::testing::TempDir tmp("delayq-crashtest");
  ASSERT_FALSE(tmp.path().empty());
  const Ran r = run_planted(tmp.sub("x"), "drop-answered-write", "no answered call lost");
  EXPECT_NE(r.out.find("a reopened store shows it absent"), std::string::npos) << r.out;
  const std::string replay = line_with(r.out, "replay: delayq-crashtest ");
  ASSERT_NE(replay.find(" --seed 4242"), std::string::npos) << r.out;
  ASSERT_NE(replay.find(" --plant-fault drop-answered-write"), std::string::npos) << replay;

  // The replay line, run as printed, finds the same broken promise.
  const Ran again = crashtest(replay.substr(replay.find("--dir")) + " --no-progress");
  EXPECT_EQ(again.status, 1) << again.out;
  EXPECT_EQ(line_with(again.out, "no answered call lost").find("BROKEN"), 2u) << again.out;
}

TEST(CrashtestProgram, APlantedResurrectionAndAMovedDueTimeBreakTheirPromises) {
  delayq::testing::TempDir tmp("delayq-crashtest");
  ASSERT_FALSE(tmp.path().empty());
  Ran r = run_planted(tmp.sub("x"), "resurrect-gone-job", "no job back after it was gone");
  EXPECT_NE(r.out.find("although the reports have it gone"), std::string::npos) << r.out;
  r = run_planted(tmp.sub("y"), "move-due-time", "every job's state, due time");
  EXPECT_NE(r.out.find("which the reports do not allow"), std::string::npos) << r.out;
}

TEST(CrashtestProgram, ADurationRunStopsOnTime) {
  delayq::testing::TempDir tmp("delayq-crashtest");
  ASSERT_FALSE(tmp.path().empty());
  const auto t0 = std::chrono::steady_clock::now();
  const Ran r = crashtest("--dir " + tmp.sub("x") + " --duration 1 --mode kill --horizon 50");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("disk tier on (horizon 50 ms)"), std::string::npos) << r.out;
  // Whole chunks of 8 cycles, as many as began within the second.
  const std::string line = line_with(r.out, "kill cycles: ");
  const int cycles = line.empty() ? 0 : std::atoi(line.c_str() + 13);
  EXPECT_TRUE(cycles >= 8 && cycles % 8 == 0) << r.out;
  EXPECT_LT(secs, 60) << r.out;
}

TEST(CrashtestProgram, BadFlagsAreRefusedWithExit2) {
  delayq::testing::TempDir tmp("delayq-crashtest");
  ASSERT_FALSE(tmp.path().empty());
  const std::string d = " --dir " + tmp.sub("x");
  const std::pair<std::string, std::string> bad[] = {
      {d + " --cycles 0", "--cycles takes a whole number from 1 to 1000000"},
      {d + " --cycles 1000001", "not 1000001"},
      {d + " --cycles -3", "not '-3'"},
      {d + " --cycles 99999999999999999999", "--cycles takes"},
      {d + " --cycles", "--cycles needs a value"},
      {d + " --duration 0", "--duration takes a whole number from 1 to 604800"},
      {d + " --duration 604801", "not 604801"},
      {d + " --cycles 5 --duration 5", "not both"},
      {d + " --sync sometimes", "--sync takes always, batch, periodic or none"},
      {d + " --horizon 0", "--horizon (off, mixed, or milliseconds) takes"},
      {d + " --horizon 3600001", "not 3600001"},
      {d + " --mode crash", "--mode takes kill, power or both"},
      {d + " --seed 18446744073709551616", "--seed takes a whole number"},
      {d + " --seed x1", "--seed takes"},
      {d + " --threads 0", "--threads takes a whole number from 1 to 8, not 0"},
      {d + " --threads 9", "--threads takes a whole number from 1 to 8, not 9"},
      {d + " --threads two", "not 'two'"},
      {d + " --plant-fault other", "--plant-fault takes drop-answered-write"},
      {d + " --mode power --plant-fault drop-answered-write", "needs the kill cycles"},
      {d + " --mode power --plant-fault worker-dies", "needs the kill cycles"},
      {d + " --mode kill --plant-fault batch-without-sync", "needs the power-loss cycles"},
      {d + " --sync always --plant-fault batch-without-sync", "needs Sync::batch cycles"},
      {d + " --frobnicate", "unknown argument '--frobnicate'"},
      {"--cycles 3", "--dir DIR is required"},
  };
  for (const auto& [args, message] : bad) {
    const Ran r = crashtest(args, true);
    EXPECT_EQ(r.status, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find("delayq-crashtest: "), std::string::npos) << args << ": " << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << args << ": " << r.out;
  }
  EXPECT_FALSE(fs::exists(tmp.sub("x"))) << "a refused run made its directory";
}

TEST(CrashtestProgram, ADirectoryItDidNotMakeIsRefused) {
  delayq::testing::TempDir tmp("delayq-crashtest");
  ASSERT_FALSE(tmp.path().empty());
  std::ofstream(tmp.sub("precious")) << "a user's data\n";
  Ran r = crashtest("--dir " + tmp.path() + " --cycles 1", true);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("holds files delayq-crashtest did not make (precious)"), std::string::npos)
      << r.out;
  EXPECT_TRUE(fs::exists(tmp.sub("precious")));
  EXPECT_FALSE(fs::exists(tmp.sub(".delayq-crashtest")));
  r = crashtest("--dir " + tmp.sub("precious") + " --cycles 1", true);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("is not a directory"), std::string::npos) << r.out;
  r = crashtest("--dir " + tmp.sub("no/such/parent") + " --cycles 1", true);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("its parent must exist"), std::string::npos) << r.out;
}

TEST(CrashtestProgram, HelpDocumentsEveryFlag) {
  const Ran r = crashtest("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* flag :
       {"--dir DIR", "--sync MODE", "--horizon H", "--cycles N", "--duration S", "--threads N",
        "--mode M", "--seed S", "--json", "--no-progress", "--help"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  // What a seed does and does not replay.
  EXPECT_NE(r.out.find("A seed replays the same call mix; thread interleaving and kill instants\n"
                       "                    may differ"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("--plant-fault"), std::string::npos) << "a hidden flag in --help";
}

}  // namespace
