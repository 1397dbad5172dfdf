// Reading what people type into the delayq command-line tool (see parse.h): durations, times,
// retry policies, counts, each range-checked with a message that names the limit. No argument
// library would take this over (CLI11 converts numbers, not "1h30m" or "2026-11-27T17:50Z");
// invocation.cc says why flags are matched by hand too.
#include "cli/parse.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <limits>
#include <vector>

#include "common/bad_input.h"
#include "common/format.h"

namespace delayq::cli {

namespace {

using namespace std::chrono;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Reads the digits at `pos` as a number; false when there are none or it overflows.
bool read_uint(std::string_view s, size_t& pos, uint64_t& out) {
  const size_t start = pos;
  while (pos < s.size() && is_digit(s[pos])) ++pos;
  if (pos == start) return false;
  const auto [p, ec] = std::from_chars(s.data() + start, s.data() + pos, out);
  return ec == std::errc() && p == s.data() + pos;
}

// Exactly `n` digits at `pos`.
bool read_fixed(std::string_view s, size_t& pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!is_digit(s[pos + i])) return false;
    out = out * 10 + (s[pos + i] - '0');
  }
  pos += n;
  return true;
}

// ".123456789" at `pos` (the dot already checked by the caller): nanoseconds, at most 9 digits.
bool read_fraction(std::string_view s, size_t& pos, int64_t& ns) {
  ++pos;  // the '.'
  const size_t start = pos;
  ns = 0;
  int64_t scale = 100'000'000;
  while (pos < s.size() && is_digit(s[pos])) {
    if (pos - start >= 9) return false;
    ns += (s[pos] - '0') * scale;
    scale /= 10;
    ++pos;
  }
  return pos > start;
}

std::string quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

}  // namespace

namespace {

// The units a duration takes, with the spellings people type: "5min", "90sec", "2hrs", "3days".
// Lower case only ("M" could be months). A number may have a fraction ("1.5h", "0.5s").
struct Unit {
  std::string_view name;
  int64_t ns;
};
constexpr int64_t kSecondNs = 1'000'000'000;
constexpr Unit kUnits[] = {
    {"ms", 1'000'000},           {"msec", 1'000'000},
    {"msecs", 1'000'000},        {"s", kSecondNs},
    {"sec", kSecondNs},          {"secs", kSecondNs},
    {"second", kSecondNs},       {"seconds", kSecondNs},
    {"m", 60 * kSecondNs},       {"min", 60 * kSecondNs},
    {"mins", 60 * kSecondNs},    {"minute", 60 * kSecondNs},
    {"minutes", 60 * kSecondNs}, {"h", 3600 * kSecondNs},
    {"hr", 3600 * kSecondNs},    {"hrs", 3600 * kSecondNs},
    {"hour", 3600 * kSecondNs},  {"hours", 3600 * kSecondNs},
    {"d", 86400 * kSecondNs},    {"day", 86400 * kSecondNs},
    {"days", 86400 * kSecondNs},
};
constexpr std::string_view kUnitList =
    "units: ms, s (sec), m (min), h (hr), d (day); e.g. 90s, 1.5h, 5min, 2h30m, 3d";
// At most 9 digits after the point: a billionth of a unit.
constexpr size_t kMaxFractionDigits = 9;

// The fraction digits after a '.' at `pos` (the point already checked by the caller), as a
// numerator over 10^digits; false when there are none or more than kMaxFractionDigits.
bool read_fraction_digits(std::string_view s, size_t& pos, uint64_t& numerator, uint64_t& scale) {
  ++pos;  // the '.'
  const size_t start = pos;
  numerator = 0;
  scale = 1;
  while (pos < s.size() && is_digit(s[pos])) {
    if (pos - start >= kMaxFractionDigits) return false;
    numerator = numerator * 10 + static_cast<uint64_t>(s[pos] - '0');
    scale *= 10;
    ++pos;
  }
  return pos > start;
}

}  // namespace

Result<Duration> parse_duration(std::string_view text) {
  if (text == "0") return Duration(0);
  if (text.empty()) return bad("a duration is empty; give e.g. 90s, 30m, 1500ms, 2h or 3d");
  if (text[0] == '-')
    return bad("bad duration " + quoted(text) + ": it is negative; durations count forward " +
               "from now, 0 is the least");
  // Far beyond any max_delay, and far from int64 nanoseconds (~292 years).
  constexpr int64_t kMaxNs = int64_t{36500} * 86400 * kSecondNs;
  const auto too_long = [&] { return bad("bad duration " + quoted(text) + ": longer than 36500 days"); };
  int64_t total = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t number_start = pos;
    uint64_t n = 0;
    if (!read_uint(text, pos, n))
      return bad("bad duration " + quoted(text) + ": expected a number at " +
                 quoted(text.substr(pos)) + " (" + std::string(kUnitList) + ")");
    uint64_t numerator = 0, scale = 1;
    if (pos < text.size() && text[pos] == '.' &&
        !read_fraction_digits(text, pos, numerator, scale))
      return bad("bad duration " + quoted(text) + ": " +
                 quoted(text.substr(number_start, pos - number_start)) +
                 " needs 1 to 9 digits after the point (e.g. 1.5h, 0.25s)");
    const std::string_view number = text.substr(number_start, pos - number_start);
    const size_t unit_start = pos;
    while (pos < text.size() && !is_digit(text[pos]) && text[pos] != '.') ++pos;
    const std::string_view unit = text.substr(unit_start, pos - unit_start);
    if (unit.empty())
      return bad("bad duration " + quoted(text) + ": the number " + std::string(number) +
                 " has no unit (" + std::string(kUnitList) + ")");
    const Unit* u = std::find_if(std::begin(kUnits), std::end(kUnits),
                                 [&](const Unit& k) { return k.name == unit; });
    if (u == std::end(kUnits))
      return bad("bad duration " + quoted(text) + ": unknown unit " + quoted(unit) + " (" +
                 std::string(kUnitList) + ")");
    // Range-checked before anything is multiplied: the whole part against the limit, then the
    // fraction of one unit (below u->ns, so below 10^14: no overflow in 128 bits, nor after).
    if (n > static_cast<uint64_t>(kMaxNs / u->ns)) return too_long();
    const int64_t whole = static_cast<int64_t>(n) * u->ns;
    const auto part = static_cast<int64_t>(static_cast<unsigned __int128>(numerator) *
                                           static_cast<uint64_t>(u->ns) / scale);
    if (whole > kMaxNs - total || part > kMaxNs - total - whole) return too_long();
    if (numerator != 0 && part == 0)
      return bad("bad duration " + quoted(text) + ": " + std::string(number) + std::string(unit) +
                 " is less than a nanosecond");
    total += whole + part;
  }
  return Duration(total);
}

namespace {

// The last instant parse_time() takes, in unix seconds (2255-03-14T16:00:00Z): due times are
// nanoseconds in 64 bits, which end in April 2262, and every later computation (now + a delay,
// the milliseconds sent to delayqd) must stay inside them. A queue's max_delay refuses far
// less than this anyway (the default is 3650 days).
constexpr int64_t kLastUnixSecond = 9'000'000'000;

Status beyond_last_time(std::string_view text) {
  return bad("bad time " + quoted(text) +
             ": after 2255-03-14T16:00:00Z, the last time delayq takes (a queue refuses due "
             "times beyond its max_delay, 3650 days by default, anyway)");
}

// A point in time from unix seconds and nanoseconds, range-checked before it is converted: a time
// before 1970 is in the past, which means now, and becomes 1970 (far older years would not fit).
Result<TimePoint> from_unix(std::string_view text, int64_t secs, int64_t ns) {
  if (secs > kLastUnixSecond) return beyond_last_time(text);
  if (secs < 0) return TimePoint(Duration(0));
  return TimePoint(seconds(secs) + nanoseconds(ns));
}

}  // namespace

Result<TimePoint> parse_time(std::string_view text) {
  const auto fail = [&](std::string why) {
    return bad("bad time " + quoted(text) + ": " + why +
               " (give RFC 3339, e.g. 2026-11-21T14:03:05Z or 2026-11-21T15:03:05+01:00, or "
               "unix seconds)");
  };
  if (text.empty()) return fail("it is empty");
  size_t pos = 0;
  // Unix seconds: digits only, with an optional fraction.
  if (text.find_first_not_of("0123456789.") == std::string_view::npos) {
    uint64_t secs = 0;
    int64_t ns = 0;
    const bool digits = read_uint(text, pos, secs);
    if (pos == 0) return fail("expected unix seconds before the '.'");
    if (!digits || secs > static_cast<uint64_t>(kLastUnixSecond)) return beyond_last_time(text);
    if (pos < text.size() && (text[pos] != '.' || !read_fraction(text, pos, ns)))
      return fail("bad fraction");
    if (pos != text.size()) return fail("unexpected " + quoted(text.substr(pos)));
    return from_unix(text, static_cast<int64_t>(secs), ns);
  }
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  const auto expect = [&](char c) {
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  };
  if (!read_fixed(text, pos, 4, y) || !expect('-') || !read_fixed(text, pos, 2, mo) ||
      !expect('-') || !read_fixed(text, pos, 2, d))
    return fail("expected a date YYYY-MM-DD");
  if (!(expect('T') || expect('t') || expect(' ')))
    return fail("expected 'T' and a time of day after the date");
  if (!read_fixed(text, pos, 2, h) || !expect(':') || !read_fixed(text, pos, 2, mi) ||
      !expect(':') || !read_fixed(text, pos, 2, s))
    return fail("expected a time of day hh:mm:ss");
  int64_t ns = 0;
  if (pos < text.size() && text[pos] == '.' && !read_fraction(text, pos, ns))
    return fail("bad fraction of a second");
  int offset_min = 0;
  if (expect('Z') || expect('z')) {
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos++] == '-' ? -1 : 1;
    int oh = 0, om = 0;
    if (!read_fixed(text, pos, 2, oh) || !expect(':') || !read_fixed(text, pos, 2, om) || oh > 23 ||
        om > 59)
      return fail("bad UTC offset (expected +hh:mm or -hh:mm)");
    offset_min = sign * (oh * 60 + om);
  } else {
    return fail("missing the UTC offset: end with Z or +hh:mm");
  }
  if (pos != text.size()) return fail("unexpected " + quoted(text.substr(pos)));
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)},
                           day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return fail("no such date");
  if (h > 23 || mi > 59 || s > 60) return fail("no such time of day");
  if (s == 60) s = 59;  // a leap second: the system clock does not have it either
  // In whole seconds first (years 0 to 9999 fit easily), so that the range check comes before
  // the conversion to nanoseconds, which would wrap for years past 2262.
  const int64_t days = sys_days{ymd}.time_since_epoch().count();
  const int64_t secs = days * 86400 + h * 3600 + mi * 60 + s - int64_t{offset_min} * 60;
  return from_unix(text, secs, ns);
}

Result<uint64_t> parse_count(std::string_view text, uint64_t min, uint64_t max) {
  uint64_t n = 0;
  size_t pos = 0;
  if (!read_uint(text, pos, n) || pos != text.size() || n < min || n > max)
    return bad("expected a whole number from " + std::to_string(min) + " to " +
               std::to_string(max) + ", not " + quoted(text));
  return n;
}

Result<RetryPolicy> parse_retry(std::string_view text) {
  const std::string forms =
      " (expected list:2m,10m,1h or fixed:DELAY:ATTEMPTS or "
      "exp:BASE:FACTOR:CAP:ATTEMPTS[:JITTER])";
  const auto fail = [&](std::string why) {
    return bad("bad retry policy " + quoted(text) + ": " + why + forms);
  };
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  const auto duration = [&](std::string_view part, Duration& out) -> std::string {
    auto d = parse_duration(part);
    if (!d) return d.status().message();
    out = *d;
    return {};
  };
  RetryPolicy p;
  const std::string_view kind = parts[0];
  if (kind == "list") {
    if (parts.size() != 2 || parts[1].empty()) return fail("a list takes one comma-separated list");
    std::vector<Duration> delays;
    for (size_t start = 0;;) {
      const size_t comma = parts[1].find(',', start);
      Duration d{};
      const std::string_view item =
          parts[1].substr(start, comma == std::string_view::npos ? comma : comma - start);
      if (std::string why = duration(item, d); !why.empty()) return fail(why);
      delays.push_back(d);
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (delays.size() > 1000) return fail("at most 1000 delays");
    p = RetryPolicy::list(std::move(delays));
  } else if (kind == "fixed") {
    if (parts.size() != 3) return fail("fixed takes a delay and a number of attempts");
    Duration d{};
    if (std::string why = duration(parts[1], d); !why.empty()) return fail(why);
    auto n = parse_count(parts[2], 1, 1'000'000);
    if (!n) return fail("attempts: " + n.status().message());
    p = RetryPolicy::fixed(d, static_cast<uint32_t>(*n));
  } else if (kind == "exp" || kind == "exponential") {
    if (parts.size() != 5 && parts.size() != 6)
      return fail("exp takes a base, a factor, a cap, a number of attempts and maybe a jitter");
    Duration base{}, cap{};
    if (std::string why = duration(parts[1], base); !why.empty()) return fail(why);
    if (std::string why = duration(parts[3], cap); !why.empty()) return fail(why);
    const auto number = [](std::string_view s, double& out) {
      const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
      return !s.empty() && ec == std::errc() && p == s.data() + s.size();
    };
    double factor = 0, jitter = 0;
    if (!number(parts[2], factor))
      return fail("the factor " + quoted(parts[2]) + " is not a number");
    if (parts.size() == 6 && !number(parts[5], jitter))
      return fail("the jitter " + quoted(parts[5]) + " is not a number");
    auto n = parse_count(parts[4], 1, 1'000'000);
    if (!n) return fail("attempts: " + n.status().message());
    p = RetryPolicy::exponential(base, factor, cap, jitter, static_cast<uint32_t>(*n));
  } else {
    return fail("unknown kind " + quoted(kind));
  }
  if (std::string why = p.validate(); !why.empty()) return fail(why);
  return p;
}

Result<TopicLimits::Rate> parse_rate(std::string_view text) {
  const std::string form = " (expected COUNT/PERIOD, e.g. 50/1s, 1000/1min or 5/s)";
  if (!text.empty() && text[0] == '-')
    return bad("a negative rate " + quoted(text) + ": a rate counts hand-outs, 1 or more" + form);
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return bad("bad rate " + quoted(text) + form);
  auto count = parse_count(text.substr(0, slash), 0, std::numeric_limits<uint32_t>::max());
  if (!count) return bad("bad rate " + quoted(text) + ": count: " + count.status().message());
  std::string period(text.substr(slash + 1));
  if (!period.empty() && period[0] >= 'a' && period[0] <= 'z') period.insert(0, "1");
  auto per = parse_duration(period);
  if (!per) return bad("bad rate " + quoted(text) + ": period: " + per.status().message());
  return TopicLimits::Rate{static_cast<uint32_t>(*count), *per, 1};
}

}  // namespace delayq::cli
