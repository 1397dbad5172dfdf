// Cron expressions: parsing and the next matching local time (see cron.h).
#include "schedule/cron.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <charconv>
#include <string>
#include <vector>

namespace delayq::schedule {

namespace {

using namespace std::chrono;

struct FieldKind {
  const char* name;
  int min, max;
  const char* const* names;  // names[i] stands for min + i (months) or i (weekdays); or nullptr
  size_t name_count;
};

constexpr const char* kMonthNames[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                       "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr const char* kDayNames[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

constexpr FieldKind kSecond{"second", 0, 59, nullptr, 0};
constexpr FieldKind kMinute{"minute", 0, 59, nullptr, 0};
constexpr FieldKind kHour{"hour", 0, 23, nullptr, 0};
constexpr FieldKind kDayOfMonth{"day-of-month", 1, 31, nullptr, 0};
constexpr FieldKind kMonth{"month", 1, 12, kMonthNames, 12};
// 7 is Sunday too: folded onto bit 0 after parsing.
constexpr FieldKind kDayOfWeek{"day-of-week", 0, 7, kDayNames, 7};

Status bad(const FieldKind& k, std::string_view field, std::string_view why) {
  return Status(Errc::invalid_argument, fmt::format("cron {} \"{}\": {}", k.name, field, why));
}

// A number or a name of field kind `k`.
Result<int> parse_value(const FieldKind& k, std::string_view field, std::string_view v) {
  if (v.empty()) return bad(k, field, "a value is missing");
  if (std::isdigit(static_cast<unsigned char>(v[0]))) {
    int n = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
    if (r.ptr != v.data() + v.size())
      return bad(k, field, fmt::format("\"{}\" is not a number", v));
    if (r.ec != std::errc() || n < k.min || n > k.max)
      return bad(k, field, fmt::format("{} is out of range {}-{}", v, k.min, k.max));
    return n;
  }
  for (size_t i = 0; i < k.name_count; ++i) {
    const std::string_view name = k.names[i];
    if (v.size() == name.size() && std::equal(v.begin(), v.end(), name.begin(), [](char a, char b) {
          return std::toupper(static_cast<unsigned char>(a)) == b;
        }))
      return k.min == 1 ? static_cast<int>(i) + 1 : static_cast<int>(i);
  }
  if (k.names)
    return bad(k, field,
               fmt::format("\"{}\" is neither a number nor a name ({}..{})", v, k.names[0],
                           k.names[k.name_count - 1]));
  return bad(k, field, fmt::format("\"{}\" is not a number", v));
}

// One field into a bit set (bit i for value i). `any`: the field was exactly "*".
Result<uint64_t> parse_field(const FieldKind& k, std::string_view field, bool& any) {
  any = field == "*";
  uint64_t bits = 0;
  size_t pos = 0;
  while (pos <= field.size()) {
    size_t comma = field.find(',', pos);
    if (comma == std::string_view::npos) comma = field.size();
    const std::string_view item = field.substr(pos, comma - pos);
    if (item.empty()) return bad(k, field, "an empty list item");
    std::string_view range = item;
    int step = 1;
    const bool has_step = item.find('/') != std::string_view::npos;
    if (has_step) {
      const size_t slash = item.find('/');
      range = item.substr(0, slash);
      const std::string_view s = item.substr(slash + 1);
      int n = 0;
      const auto r = std::from_chars(s.data(), s.data() + s.size(), n);
      if (s.empty() || r.ptr != s.data() + s.size() ||
          (r.ec != std::errc() && r.ec != std::errc::result_out_of_range))
        return bad(k, field, fmt::format("step \"{}\" is not a number", s));
      if (r.ec != std::errc() || n < 1 || n > k.max)
        return bad(k, field, fmt::format("step {} is out of range 1-{}", s, k.max));
      step = n;
    }
    int lo = k.min, hi = k.max;
    if (range != "*") {
      const size_t dash = range.find('-');
      Result<int> a = parse_value(k, field, range.substr(0, dash));
      if (!a) return a.status();
      lo = *a;
      if (dash != std::string_view::npos) {
        Result<int> b = parse_value(k, field, range.substr(dash + 1));
        if (!b) return b.status();
        hi = *b;
        if (hi < lo) return bad(k, field, fmt::format("range {} goes backwards", range));
      } else if (!has_step) {
        hi = lo;  // a single value; "a/n" runs from a to the maximum
      }
    }
    for (int v = lo; v <= hi; v += step) bits |= uint64_t{1} << v;
    pos = comma + 1;
  }
  return bits;
}

// "@daily" and friends as the 5-field expressions they stand for.
std::optional<std::string_view> macro(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "@yearly" || lower == "@annually") return "0 0 1 1 *";
  if (lower == "@monthly") return "0 0 1 * *";
  if (lower == "@weekly") return "0 0 * * 0";
  if (lower == "@daily" || lower == "@midnight") return "0 0 * * *";
  if (lower == "@hourly") return "0 * * * *";
  return std::nullopt;
}

std::vector<std::string_view> split_blanks(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// The first set bit of `bits` at or after `from`, or -1.
int next_bit(uint64_t bits, int from) {
  if (from >= 64) return -1;
  const uint64_t rest = bits >> from;
  return rest == 0 ? -1 : from + std::countr_zero(rest);
}

}  // namespace

bool CronFields::day_matches(date::sys_days day) const {
  const date::year_month_day ymd{day};
  if (!(months >> static_cast<unsigned>(ymd.month()) & 1)) return false;
  const bool dom = days >> static_cast<unsigned>(ymd.day()) & 1;
  const bool dow = weekdays >> date::weekday{day}.c_encoding() & 1;
  if (days_any || weekdays_any) return dom && dow;
  return dom || dow;
}

Result<CronFields> parse_cron(std::string_view text) {
  if (!text.empty() && text[0] == '@') {
    const std::optional<std::string_view> m = macro(text);
    if (!m)
      return Status(Errc::invalid_argument,
                    fmt::format("rule \"{}\": unknown macro; use @yearly, @annually, @monthly, "
                                "@weekly, @daily, @midnight or @hourly",
                                text));
    text = *m;
  }
  std::vector<std::string_view> f = split_blanks(text);
  if (f.size() != 5 && f.size() != 6)
    return Status(Errc::invalid_argument,
                  fmt::format("rule \"{}\": a cron expression has 5 fields (minute hour "
                              "day-of-month month day-of-week) or 6 (second first), not {}",
                              text, f.size()));
  if (f.size() == 5) f.insert(f.begin(), "0");
  CronFields c;
  bool any = false;
  const std::array<const FieldKind*, 6> kinds = {&kSecond,     &kMinute, &kHour,
                                                 &kDayOfMonth, &kMonth,  &kDayOfWeek};
  std::array<uint64_t, 6> bits{};
  for (size_t i = 0; i < 6; ++i) {
    Result<uint64_t> b = parse_field(*kinds[i], f[i], any);
    if (!b) return b.status();
    bits[i] = *b;
    if (i == 3) c.days_any = any;
    if (i == 5) c.weekdays_any = any;
  }
  c.seconds = bits[0];
  c.minutes = bits[1];
  c.hours = static_cast<uint32_t>(bits[2]);
  c.days = static_cast<uint32_t>(bits[3]);
  c.months = static_cast<uint16_t>(bits[4]);
  c.weekdays = static_cast<uint8_t>((bits[5] | bits[5] >> 7) & 0x7f);  // 7 is Sunday
  return c;
}

std::optional<date::local_seconds> next_local(const CronFields& f, date::local_seconds from) {
  const date::local_days first_day = date::floor<date::days>(from);
  date::sys_days day{first_day.time_since_epoch()};
  seconds tod = from - first_day;
  int h = static_cast<int>(duration_cast<hours>(tod).count());
  int m = static_cast<int>(duration_cast<minutes>(tod).count() % 60);
  int s = static_cast<int>(tod.count() % 60);
  const date::sys_days last_day = day + date::days(kSearchDays);
  while (day <= last_day) {
    const date::year_month_day ymd{day};
    if (!(f.months >> static_cast<unsigned>(ymd.month()) & 1)) {
      // The first day of the next month.
      const date::year_month ym = date::year_month{ymd.year(), ymd.month()} + date::months(1);
      day = date::sys_days{ym / 1};
      h = m = s = 0;
      continue;
    }
    if (!f.day_matches(day)) {
      day += date::days(1);
      h = m = s = 0;
      continue;
    }
    const int nh = next_bit(f.hours, h);
    if (nh < 0) {
      day += date::days(1);
      h = m = s = 0;
      continue;
    }
    if (nh != h) h = nh, m = s = 0;
    const int nm = next_bit(f.minutes, m);
    if (nm < 0) {
      ++h, m = s = 0;
      if (h == 24) day += date::days(1), h = 0;
      continue;
    }
    if (nm != m) m = nm, s = 0;
    const int ns = next_bit(f.seconds, s);
    if (ns < 0) {
      ++m, s = 0;
      if (m == 60) ++h, m = 0;
      if (h == 24) day += date::days(1), h = 0;
      continue;
    }
    return date::local_seconds{day.time_since_epoch()} + hours(h) + minutes(m) + seconds(ns);
  }
  return std::nullopt;
}

uint64_t matches_per_day(const CronFields& f) {
  return static_cast<uint64_t>(std::popcount(f.hours)) * std::popcount(f.minutes) *
         std::popcount(f.seconds);
}

std::chrono::seconds first_time_of_day(const CronFields& f) {
  return hours(std::countr_zero(f.hours)) + minutes(std::countr_zero(f.minutes)) +
         seconds(std::countr_zero(f.seconds));
}

}  // namespace delayq::schedule
