// Running delayq-crashtest (src/crashtest/) from its tests, as a user would from a shell.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace delayq::crashtest_testing {

struct Ran {
  int status = -1;  // the exit status, or -1
  std::string out;
};

// Runs delayq-crashtest with `args` (a shell word list); stdout, and stderr with `with_stderr`.
inline Ran crashtest(const std::string& args, bool with_stderr = false) {
  const std::string cmd =
      std::string(DELAYQ_CRASHTEST_PATH) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  Ran r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  if (WIFEXITED(st)) r.status = WEXITSTATUS(st);
  return r;
}

// The line of `out` that holds `part`, or "".
inline std::string line_with(const std::string& out, const std::string& part) {
  const size_t at = out.find(part);
  if (at == std::string::npos) return "";
  const size_t begin = out.rfind('\n', at) == std::string::npos ? 0 : out.rfind('\n', at) + 1;
  return out.substr(begin, out.find('\n', at) - begin);
}

// How many of the report's promises it calls BROKEN.
inline size_t broken_promises(const std::string& out) {
  size_t broken = 0;
  for (size_t at = out.find("  BROKEN "); at != std::string::npos;
       at = out.find("  BROKEN ", at + 1))
    ++broken;
  return broken;
}

}  // namespace delayq::crashtest_testing
