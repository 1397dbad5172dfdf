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

size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return n;
}

size_t invalid_utf8_at(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
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
