// Showing times, durations and bodies to people in the delayq command-line tool (see human_text.h).
#include "cli/human_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iterator>
#include <utility>

#include "common/format.h"

namespace delayq::cli {

using namespace std::chrono;

std::string format_local_time(TimePoint t) {
  const auto secs = floor<seconds>(t);
  const int64_t ms = duration_cast<milliseconds>(t - secs).count();
  const std::time_t tt = static_cast<std::time_t>(secs.time_since_epoch().count());
  std::tm tm{};
  if (::localtime_r(&tt, &tm) == nullptr) return format_utc_time(t);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = buf;
  if (ms != 0) out += fmt::format(".{:03}", ms);
  const long off = tm.tm_gmtoff / 60;
  if (off == 0) return out + "Z";
  return out + fmt::format("{}{:02}:{:02}", off < 0 ? '-' : '+', std::labs(off) / 60,
                           std::labs(off) % 60);
}

std::string format_utc_time(TimePoint t) {
  const auto day_start = floor<days>(t);
  const year_month_day ymd{sys_days(day_start)};
  const hh_mm_ss<nanoseconds> tod{t - day_start};
  const int64_t ms = duration_cast<milliseconds>(tod.subseconds()).count();
  std::string out =
      fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  tod.hours().count(), tod.minutes().count(), tod.seconds().count());
  if (ms != 0) out += fmt::format(".{:03}", ms);
  return out + "Z";
}

std::string format_relative(TimePoint t, TimePoint now) {
  const Duration d = t - now;
  const bool future = d.count() > 0;
  const Duration mag = future ? d : -d;
  std::string span;
  if (mag < seconds(1)) {
    const int64_t ms = duration_cast<milliseconds>(mag).count();
    if (ms == 0) return "now";
    span = std::to_string(ms) + "ms";
  } else {
    int64_t s = duration_cast<seconds>(mag).count();
    const std::pair<int64_t, const char*> units[] = {
        {86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}};
    for (size_t i = 0; i < std::size(units); ++i) {
      if (s < units[i].first) continue;
      span = std::to_string(s / units[i].first) + units[i].second;
      if (i + 1 < std::size(units)) {
        const int64_t next = s % units[i].first / units[i + 1].first;
        if (next != 0) span += std::to_string(next) + units[i + 1].second;
      }
      break;
    }
  }
  return future ? "in " + span : span + " ago";
}

std::string format_span(Duration d) {
  return format_duration(d);
}

std::string format_retry(const RetryPolicy& p) {
  const auto number = [](double x) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
    return ec == std::errc() ? std::string(buf, end) : std::string("?");
  };
  const std::string attempts = std::to_string(p.max_attempts);
  switch (p.kind) {
    case RetryPolicy::Kind::fixed:
      return "fixed:" + format_span(p.base) + ":" + attempts;
    case RetryPolicy::Kind::list: {
      std::string out = "list:";
      for (size_t i = 0; i < p.delays.size(); ++i)
        out += (i > 0 ? "," : "") + format_span(p.delays[i]);
      // --retry's list form implies delays + 1 attempts; a policy built otherwise says its own.
      if (p.max_attempts != p.delays.size() + 1) out += " (" + attempts + " attempts)";
      return out;
    }
    case RetryPolicy::Kind::exponential:
      break;
  }
  std::string out = "exp:" + format_span(p.base) + ":" + number(p.factor) + ":" +
                    format_span(p.cap) + ":" + attempts;
  if (p.jitter != 0) out += ":" + number(p.jitter);
  return out;
}

std::string printable(std::string_view body, size_t max_chars) {
  std::string out;
  size_t chars = 0;
  const auto shown = [&](std::string_view text, size_t width) {
    out += text;
    chars += width;
  };
  for (size_t i = 0; i < body.size();) {
    if (max_chars > 0 && chars >= max_chars) return out + "...";
    const unsigned char c = static_cast<unsigned char>(body[i]);
    const size_t n = utf8_sequence(body, i);
    // A C1 control (U+0080..U+009F: 0xC2 0x80..0x9F), which some terminals obey as escape
    // sequences, is escaped like an invalid byte.
    const bool c1 = n == 2 && c == 0xc2 && static_cast<unsigned char>(body[i + 1]) < 0xa0;
    if (c == '\n')
      shown("\\n", 2);
    else if (c == '\t')
      shown("\\t", 2);
    else if (c == '\r')
      shown("\\r", 2);
    else if (c == '\\')
      shown("\\\\", 2);
    else if (n == 0 || c1 || c < 0x20 || c == 0x7f) {
      shown(fmt::format("\\x{:02x}", c), 4);
    } else {
      shown(body.substr(i, n), 1);
    }
    i += n == 0 || c1 ? 1 : n;
  }
  return out;
}

std::string table(const std::vector<std::vector<std::string>>& rows,
                  const std::vector<bool>& right) {
  const auto width = [](const std::string& s) {
    return static_cast<size_t>(std::count_if(
        s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
  };
  std::vector<size_t> w;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (w.size() <= i) w.push_back(0);
      w[i] = std::max(w[i], width(row[i]));
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      const std::string pad(w[i] - width(row[i]), ' ');
      const bool last = i + 1 == row.size();
      if (i > 0) line += "  ";
      if (i < right.size() && right[i])
        line += pad + row[i];
      else
        line += last ? row[i] : row[i] + pad;
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace delayq::cli
