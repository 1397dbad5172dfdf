// delayq-crashtest's command line (options.h).
#include "crashtest/options.h"

#include <charconv>
#include <cstring>
#include <string_view>

namespace delayq::crashtest {

namespace {

// A whole decimal number from `lo` to `hi`, or an error naming the flag and the range.
std::string whole(std::string_view flag, std::string_view text, int64_t lo, int64_t hi,
                  int64_t& out) {
  const std::string range = std::string(flag) + " takes a whole number from " +
                            std::to_string(lo) + " to " + std::to_string(hi);
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != text.npos)
    return range + ", not '" + std::string(text) + "'";
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
    return range + ", not " + std::string(text);
  out = v;
  return "";
}

}  // namespace

// The text below names kMaxThreads.
static_assert(crash::kMaxThreads == 8, "--help says --threads goes up to 8");

const char* help_text() {
  return R"(usage: delayq-crashtest --dir DIR [options]

Runs delayq's crash and power-loss harness on the volume that holds DIR: worker processes run a
mixed load on a durable store there (every call of the Queue, from several threads, a consumer
and a consume() loop) and are killed with SIGKILL at random moments; after each kill a check
compares every job's state, due time, attempts and lease with what the answered calls allow.

  --dir DIR         where the stores live (required). DIR must be new, empty, or left by an
                    earlier delayq-crashtest (it writes a marker file, .delayq-crashtest, there);
                    anything else is refused. Everything made there is removed at the end.
  --sync MODE       always, batch, periodic or none: every cycle runs that sync mode. Default:
                    every mode in turn.
  --horizon H       the disk tier: off (every job in memory), a horizon in milliseconds from 1
                    to 3600000 (on in every cycle), or mixed (default: on in half the cycles,
                    with a 30 ms horizon).
  --cycles N        cycles per mode, from 1 to 1000000 (default 50).
  --duration S      run for S seconds (1 to 604800) instead of a number of cycles.
  --threads N       racing worker threads in each worker process, from 1 to 8 (default 2).
                    Each pushes and calls on jobs of two topics of its own; a consumer thread
                    and a consume() loop run beside them (with 1, no thread feeds the loop).
  --mode M          kill (SIGKILL only), power (a simulated power loss after each kill: every
                    file cut back to what was synced), or both (default).
  --seed S          the seed of the run's choices (0 to 18446744073709551615; default random).
                    A seed replays the same call mix; thread interleaving and kill instants
                    may differ, so a rerun may break the promise in another cycle, or not at
                    all. A failed run prints the seed and every flag that reruns it with the
                    same settings.
  --json            the final report as one JSON object instead of text.
  --no-progress     no progress line on standard error while the run goes.
  --help            this text.

Exit status: 0 every promise held; 1 a promise was broken, or the run could not test (the first
violations and a replay line are printed); 2 bad usage or a refused DIR.
)";
}

std::string parse_options(int argc, char** argv, Options& o) {
  bool cycles_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&](std::string_view& v) -> std::string {
      if (i + 1 >= argc) return std::string(a) + " needs a value";
      v = argv[++i];
      return "";
    };
    std::string_view v;
    std::string err;
    if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--no-progress") {
      o.progress = false;
    } else if (a == "--dir") {
      if (err = value(v); err.empty()) {
        if (v.empty()) err = "--dir needs a directory, not an empty string";
        o.dir = v;
      }
    } else if (a == "--sync") {
      if (err = value(v); err.empty()) {
        if (Result<Sync> s = parse_sync(v); s) o.sync = *s;
        else err = "--sync takes always, batch, periodic or none, not '" + std::string(v) + "'";
      }
    } else if (a == "--horizon") {
      if (err = value(v); err.empty()) {
        int64_t ms = 0;
        if (v == "off") o.tier = Tier::off;
        else if (v == "mixed") o.tier = Tier::mixed;
        else if (err = whole("--horizon (off, mixed, or milliseconds)", v, 1, kMaxHorizonMs, ms);
                 err.empty()) {
          o.tier = Tier::on;
          o.horizon = std::chrono::milliseconds(ms);
        }
      }
    } else if (a == "--cycles") {
      int64_t n = 0;
      if (err = value(v); err.empty() && (err = whole(a, v, 1, kMaxCycles, n)).empty()) {
        o.cycles = static_cast<int>(n);
        cycles_given = true;
      }
    } else if (a == "--threads") {
      int64_t n = 0;
      const int64_t most = static_cast<int64_t>(crash::kMaxThreads);
      if (err = value(v); err.empty() && (err = whole(a, v, 1, most, n)).empty())
        o.threads = static_cast<size_t>(n);
    } else if (a == "--duration") {
      if (err = value(v); err.empty()) err = whole(a, v, 1, kMaxDurationS, o.duration_s);
    } else if (a == "--mode") {
      if (err = value(v); err.empty()) {
        if (v == "kill") o.modes = Modes::kill;
        else if (v == "power") o.modes = Modes::power;
        else if (v == "both") o.modes = Modes::both;
        else err = "--mode takes kill, power or both, not '" + std::string(v) + "'";
      }
    } else if (a == "--seed") {
      if (err = value(v); err.empty()) {
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), o.seed);
        if (v.empty() || v.find_first_not_of("0123456789") != v.npos || ec != std::errc() ||
            end != v.data() + v.size())
          err = "--seed takes a whole number from 0 to 18446744073709551615, not '" +
                std::string(v) + "'";
        o.seed_given = true;
      }
    } else if (a == "--plant-fault") {  // the program's own test; not in --help
      if (err = value(v); err.empty()) {
        for (const Plantable& f : kPlantable)
          if (v == f.name) o.plant = f.name;
        if (o.plant.empty())
          err = "--plant-fault takes drop-answered-write, resurrect-gone-job, move-due-time, "
                "deliver-early, worker-dies or batch-without-sync, not '" + std::string(v) + "'";
      }
    } else {
      err = "unknown argument '" + std::string(a) + "' (--help lists the flags)";
    }
    if (!err.empty()) return err;
  }
  if (o.help) return "";
  if (o.dir.empty()) return "--dir DIR is required: a directory on the volume to test";
  if (cycles_given && o.duration_s > 0) return "give --cycles or --duration, not both";
  if (!cycles_given && o.duration_s == 0) o.cycles = kDefaultCycles;
  for (const Plantable& f : kPlantable) {
    if (o.plant != f.name) continue;
    if (!f.power && o.modes == Modes::power)
      return "--plant-fault " + o.plant + " needs the kill cycles (--mode kill or both)";
    if (f.power && o.modes == Modes::kill)
      return "--plant-fault " + o.plant + " needs the power-loss cycles (--mode power or both)";
    if (f.power && o.sync && *o.sync != Sync::batch)
      return "--plant-fault " + o.plant + " needs Sync::batch cycles (--sync batch, or none)";
  }
  return "";
}

const char* modes_text(Modes m) {
  return m == Modes::kill ? "kill" : m == Modes::power ? "power" : "both";
}

std::string sync_text(const std::optional<Sync>& s) {
  return s ? to_string(*s) : "every mode in turn";
}

std::string tier_text(const Options& o) {
  switch (o.tier) {
    case Tier::off:
      return "off";
    case Tier::on:
      return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(o.horizon).count());
    case Tier::mixed:
      break;
  }
  return "mixed";
}

std::string replay_flags(const Options& o, Modes modes, int cycles) {
  std::string s = "--dir " + o.dir + " --mode " + modes_text(modes);
  if (o.sync) s += std::string(" --sync ") + to_string(*o.sync);
  s += " --horizon " + tier_text(o);
  s += cycles > 0 ? " --cycles " + std::to_string(cycles)
                  : " --duration " + std::to_string(o.duration_s);
  s += " --threads " + std::to_string(o.threads) + " --seed " + std::to_string(o.seed);
  if (!o.plant.empty()) s += " --plant-fault " + o.plant;
  return s;
}

}  // namespace delayq::crashtest
