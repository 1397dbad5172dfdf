#include "common/format.h"

#include <cstdint>

namespace delayq {

std::string format_duration(Duration d) {
  using namespace std::chrono;
  std::string sign;
  int64_t ns = d.count();
  if (ns < 0) {
    sign = "-";
    ns = ns == INT64_MIN ? INT64_MAX : -ns;
  }
  if (ns % 1000000 != 0) return sign + std::to_string(ns) + "ns";
  const int64_t ms = ns / 1000000;
  if (ms < 1000 || ms % 1000 != 0) return sign + std::to_string(ms) + "ms";
  int64_t s = ms / 1000;
  const int64_t days = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60;
  s %= 60;
  std::string out = sign;
  if (days) out += std::to_string(days) + "d";
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  if (s || out == sign) out += std::to_string(s) + "s";
  return out;
}

std::string to_base36(uint64_t n) {
  char buf[16];
  char* p = buf + sizeof buf;
  do {
    *--p = "0123456789abcdefghijklmnopqrstuvwxyz"[n % 36];
    n /= 36;
  } while (n);
  return std::string(p, buf + sizeof buf);
}

}  // namespace delayq
