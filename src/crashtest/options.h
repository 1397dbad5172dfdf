// delayq-crashtest's command line: what a run is asked to do, parsed and range-checked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "crash/load.h"
#include "delayq/store.h"

namespace delayq::crashtest {

enum class Modes { kill, power, both };
enum class Tier { mixed, off, on };  // the disk tier: in half the cycles, never, always

struct Options {
  std::string dir;
  std::optional<Sync> sync;  // empty: every mode in turn
  Tier tier = Tier::mixed;
  Duration horizon{};  // Tier::on: the horizon asked for; mixed: the harness's own (30 ms)
  int cycles = 0;      // per mode; 0 with duration_s
  size_t threads = crash::kDefaultThreads;  // racing worker threads, 1 to crash::kMaxThreads
  int64_t duration_s = 0;
  uint64_t seed = 0;
  bool seed_given = false;
  Modes modes = Modes::both;
  bool json = false;
  bool progress = true;
  // Hidden: --plant-fault NAME (the program's own tests): a fault planted in the run (run.cc),
  // one of kPlantable, "" for none.
  std::string plant;
  bool help = false;
};

// The faults --plant-fault can plant (run.cc), each breaking one promise of the report; planted
// in the kill cycles, or (power) in the power-loss cycles.
struct Plantable {
  const char* name;
  bool power;
};
inline constexpr Plantable kPlantable[] = {
    {"drop-answered-write", false}, {"resurrect-gone-job", false}, {"move-due-time", false},
    {"deliver-early", false},       {"worker-dies", false},        {"batch-without-sync", true}};

constexpr int kDefaultCycles = 50;
constexpr int kMaxCycles = 1'000'000;
constexpr int64_t kMaxDurationS = 7 * 24 * 3600;
constexpr int64_t kMaxHorizonMs = 3'600'000;

// Parses the arguments (argv[1..]). On a bad one: the message to print (exit 2), else empty.
std::string parse_options(int argc, char** argv, Options& o);

const char* help_text();
const char* modes_text(Modes m);
std::string sync_text(const std::optional<Sync>& s);  // "batch", or "every mode in turn"
std::string tier_text(const Options& o);
// The flags that run the same choices again (with `cycles` cycles, if > 0).
std::string replay_flags(const Options& o, Modes modes, int cycles);

}  // namespace delayq::crashtest
