// delayq-crashtest: the crash and power-loss harness of tests/crash as a program run on the
// volume a store will live on (docs/durability.md, "Test your own disk").
#include <cstdio>
#include <random>

#include "crashtest/options.h"
#include "crashtest/report.h"
#include "crashtest/run.h"

int main(int argc, char** argv) {
  using namespace delayq::crashtest;
  Options o;
  if (const std::string err = parse_options(argc, argv, o); !err.empty()) {
    std::fprintf(stderr, "delayq-crashtest: %s\n", err.c_str());
    return 2;
  }
  if (o.help) {
    std::fputs(help_text(), stdout);
    return 0;
  }
  if (!o.seed_given) o.seed = (uint64_t{std::random_device()()} << 32) ^ std::random_device()();
  bool made = false;
  if (const std::string err = claim_dir(o.dir, made); !err.empty()) {
    std::fprintf(stderr, "delayq-crashtest: %s\n", err.c_str());
    return 2;
  }
  const RunResult r = run_cycles(o);
  cleanup(o.dir, made);
  return print_report(o, r);
}
