// delayq-crashtest's run: the directory it may use, and the harness's kill and power-loss cycles
// (tests/crash/driver.h) run in chunks, with a progress line, until the cycles or the time are
// used up or a promise breaks.
#pragma once

#include <string>

#include "crash/driver.h"
#include "crashtest/options.h"

namespace delayq::crashtest {

// The cycles of one mode (kill or power) and what they came to.
struct ModeRun {
  bool asked = false;
  crash::Model m;
  crash::KillTally kill;    // kill cycles
  crash::PowerTally power;  // power-loss cycles
  int cycles = 0;
  double secs = 0;
  uint64_t drained = 0;  // jobs the final drain delivered, of `owed`
  size_t owed = 0;
};

struct RunResult {
  ModeRun kill, power;
  std::string planted;  // --plant-fault: what was dropped ("" if nothing could be)
};

// The marker that says a directory is delayq-crashtest's own.
inline constexpr const char* kMarker = ".delayq-crashtest";

// Takes `dir` for the run: makes it if it does not exist (its parent must), or accepts it if it
// is empty or holds the marker; writes the marker. The message on refusal, else empty.
// `made`: whether it made the directory (cleanup() then removes it too).
std::string claim_dir(const std::string& dir, bool& made);
// Removes what the run made in `dir` (its stores, the marker), and `dir` itself if `made`.
void cleanup(const std::string& dir, bool made);

// Runs the cycles `o` asks for in `dir` (claimed).
RunResult run_cycles(const Options& o);

}  // namespace delayq::crashtest
