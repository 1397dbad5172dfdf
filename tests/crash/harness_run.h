// What the crash harness's gtest front ends (crash_harness_test.cc, planted_loss_test.cc) share:
// the start of a run, its replay line, and its problems reported as failures.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "crash/check.h"
#include "crash/driver.h"

namespace delayq::crash {

using Steady = std::chrono::steady_clock;

// How to run the current test again with the same choices: its seed, and its number of cycles
// where `cycles_var` sets one.
inline std::string replay_text(uint64_t seed, const char* cycles_var = "", int cycles = 0) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  return "seed " + std::to_string(seed) + " (replay: DELAYQ_CRASH_SEED=" + std::to_string(seed) +
         (cycles > 0 ? std::string(" ") + cycles_var + "=" + std::to_string(cycles) : "") +
         " --gtest_filter=" + test->test_suite_name() + "." + test->name() + ")";
}

inline void report_problems(const Model& m) {
  for (size_t i = 0; i < m.problems.size() && i < 20; ++i) ADD_FAILURE() << m.problems[i];
  if (m.problems.size() > 20) ADD_FAILURE() << "... and " << (m.problems.size() - 20) << " more";
}

// What a harness test starts from: a seed (DELAYQ_CRASH_SEED, or a random one), the line that
// replays the test, a temporary directory (empty if it could not be made), a fresh model.
struct HarnessRun {
  explicit HarnessRun(const char* cycles_var = "", int cycles = 0)
      : replay(replay_text(seed, cycles_var, cycles)) {}

  // After the last cycle: drains the store in `store_dir` (every job still owed must be
  // delivered), then reports the model's problems as failures.
  void finish(const std::string& store_dir) {
    if (m.problems.empty()) {
      m.cycle += 1;  // problems of the drain count as the cycle after the last
      DriverStore q = open_for_check(m, store_dir);
      if (q) drain(m, *q, &owed, &drained);
    }
    secs = std::chrono::duration<double>(Steady::now() - t0).count();
    report_problems(m);
  }

  const uint64_t seed = random_seed();
  const std::string replay;
  TempDir dir{"delayq-crash"};
  Model m = new_model(seed);
  const Steady::time_point t0 = Steady::now();
  // Set by finish(): jobs the drain delivered of those owed, and the seconds since t0.
  uint64_t drained = 0;
  size_t owed = 0;
  double secs = 0;
};

}  // namespace delayq::crash
