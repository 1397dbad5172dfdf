// The number formats of the benchmark drivers' JSON lines (docs/benchmarks.md reads them), shared so
// that every driver prints the same fields the same way.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace delayq::bench {

// Resident memory of this process, in bytes.
inline uint64_t rss_bytes() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

inline double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// A number for a JSON line: one decimal from 1000 up, four below.
inline std::string num(double v) {
  std::ostringstream o;
  o.precision(v >= 1000 ? 1 : 4);
  o << std::fixed << v;
  return o.str();
}

// {"p50","p99","max","min","mean"} of a set of milliseconds, p50/p99 by nearest rank; "null"
// when empty. Sorts `ms`.
inline std::string summary_json(std::vector<double>& ms) {
  if (ms.empty()) return "null";
  std::sort(ms.begin(), ms.end());
  auto rank = [&](double p) {
    const size_t r = static_cast<size_t>(std::ceil(p * ms.size()));
    return ms[std::clamp<size_t>(r, 1, ms.size()) - 1];
  };
  double sum = 0;
  for (double v : ms) sum += v;
  return "{\"p50\":" + num(rank(0.50)) + ",\"p99\":" + num(rank(0.99)) + ",\"max\":" +
         num(ms.back()) + ",\"min\":" + num(ms.front()) + ",\"mean\":" + num(sum / ms.size()) +
         "}";
}

}  // namespace delayq::bench
