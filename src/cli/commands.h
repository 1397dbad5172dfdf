// The delayq command-line tool: argument parsing, the commands, and their output (tables for
// people, one JSON document with --json). main() is a thin wrapper around run(), so that the
// whole tool can also be driven from a test without a process.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace delayq::cli {

// Exit codes.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the call failed; stderr names the Errc and why
inline constexpr int kExitUsage = 2;   // bad usage; stderr names the argument and the usage line

// Runs the tool on `args` (argv without argv[0]). Reads a body from `in` for --body-file -.
int run(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
        std::ostream& err);

}  // namespace delayq::cli
