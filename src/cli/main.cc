// delayq: the command-line tool. Everything but argv handling lives in commands.cc (run()), so
// that tests and main() share it; docs/cli.md describes the commands.
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const int rc = delayq::cli::run(args, std::cin, std::cout, std::cerr);
  std::cout.flush();
  // A closed stdout (delayq ... | head -0) must not pass for success.
  if (!std::cout && rc == delayq::cli::kExitOk) return delayq::cli::kExitFailed;
  return rc;
}
