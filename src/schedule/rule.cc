// A schedule's rule: "every <duration>" or cron in a time zone (see rule.h). Local times come
// from cron.cc; here they become instants, which is where DST is decided:
//  - a local time that exists once is that instant;
//  - one that exists twice (fall back) is the earlier instant;
//  - one that does not exist (spring forward) is the instant the gap ends, the first valid one
//    after it (02:30 on the spring day in Europe/Berlin: 03:00 CEST).
// That mapping never goes backwards as local time goes forward, which the search relies on.
#include "schedule/rule.h"

#include <date/tz.h>
#include <fmt/format.h>

#include <charconv>
#include <limits>

#include "common/bad_input.h"
#include "common/rules.h"
#include "schedule/cron.h"

namespace delayq::schedule {

using namespace std::chrono;

struct Rule::Impl {
  std::optional<Duration> every{};
  TimePoint anchor{};
  CronFields cron{};
  const date::time_zone* zone = nullptr;
};

namespace {

// The instant a local time stands for, per the rules at the top.
date::sys_seconds to_instant(const date::time_zone& z, date::local_seconds l) {
  const date::local_info i = z.get_info(l);
  if (i.result == date::local_info::nonexistent) return i.first.end;
  return date::sys_seconds{l.time_since_epoch() - i.first.offset};
}

// The latest instant a TimePoint holds, in whole seconds.
const date::sys_seconds kLastSecond = date::floor<seconds>(TimePoint::max());

Result<Duration> parse_every(std::string_view rule, std::string_view spec) {
  size_t digits = 0;
  while (digits < spec.size() && spec[digits] >= '0' && spec[digits] <= '9') ++digits;
  const std::string_view unit = spec.substr(digits);
  Duration per{};
  if (unit == "ms")
    per = milliseconds(1);
  else if (unit == "s")
    per = seconds(1);
  else if (unit == "m")
    per = minutes(1);
  else if (unit == "h")
    per = hours(1);
  else if (unit == "d")
    per = hours(24);
  if (digits == 0 || per == Duration::zero())
    return bad(
        fmt::format("rule \"{}\": give the interval as a whole number and a unit (ms, s, "
                    "m, h or d), as in \"every 90s\"",
                    rule));
  uint64_t n = 0;
  const auto r = std::from_chars(spec.data(), spec.data() + digits, n);
  const uint64_t most = static_cast<uint64_t>(rules::kLongestDelay / per);
  if (r.ec != std::errc() || n > most)
    return bad(fmt::format("rule \"{}\": the interval is longer than 100 years", rule));
  if (n == 0) return bad(fmt::format("rule \"{}\": the interval must be positive", rule));
  return per * static_cast<Duration::rep>(n);
}

}  // namespace

Result<Rule> Rule::parse(std::string_view rule, std::string_view zone, TimePoint anchor) {
  auto impl = std::make_unique<Impl>();
  const std::string zone_name = zone.empty() ? std::string("UTC") : std::string(zone);
  try {
    impl->zone = date::locate_zone(zone_name);
  } catch (const std::exception&) {
    return bad(
        fmt::format("zone \"{}\" is not a time zone of the system's tz database (an IANA "
                    "name, as \"Europe/Berlin\")",
                    zone_name));
  }
  while (!rule.empty() && (rule.front() == ' ' || rule.front() == '\t')) rule.remove_prefix(1);
  while (!rule.empty() && (rule.back() == ' ' || rule.back() == '\t')) rule.remove_suffix(1);
  if (rule.empty()) return bad("rule is empty: give \"every <duration>\" or a cron expression");
  if (rule.substr(0, 6) == "every " || rule.substr(0, 6) == "every\t") {
    std::string_view spec = rule.substr(6);
    while (!spec.empty() && (spec.front() == ' ' || spec.front() == '\t')) spec.remove_prefix(1);
    Result<Duration> d = parse_every(rule, spec);
    if (!d) return d.status();
    impl->every = *d;
    impl->anchor = anchor;
    return Rule(std::move(impl));
  }
  Result<CronFields> c = parse_cron(rule);
  if (!c) return c.status();
  impl->cron = *c;
  // Whether it ever fires: every day pattern repeats within kSearchDays (leap days included).
  const date::local_seconds from{date::sys_days{date::year(2000) / 1 / 1}.time_since_epoch()};
  if (!next_local(impl->cron, from))
    return bad(
        fmt::format("rule \"{}\": no day ever matches its day-of-month, month and "
                    "day-of-week (as \"0 0 30 2 *\": there is no February 30)",
                    rule));
  return Rule(std::move(impl));
}

std::optional<TimePoint> Rule::next_after(TimePoint t) const {
  const Impl& r = *impl_;
  if (r.every) {
    if (t < r.anchor) return r.anchor;
    const Duration since = rules::distance(r.anchor, t);
    if (since == Duration::max()) return std::nullopt;
    Duration::rep step = since / *r.every + 1, offset = 0, at = 0;
    if (__builtin_mul_overflow(step, r.every->count(), &offset) ||
        __builtin_add_overflow(r.anchor.time_since_epoch().count(), offset, &at))
      return std::nullopt;
    return TimePoint(Duration(at));
  }
  const date::time_zone& z = *r.zone;
  const date::sys_seconds ts = date::floor<seconds>(t);
  if (ts >= kLastSecond) return std::nullopt;
  const date::sys_info info = z.get_info(ts);
  date::local_seconds from{ts.time_since_epoch() + info.offset};
  // Local times from `from` on map to instants at or after ts's; the first that lies after t
  // is the answer. Only in the second pass of a repeated hour (fall back) do the local times
  // from `from` to the end of that hour map before t (to their first pass): start at its end.
  if (info.begin > date::sys_seconds::min() + hours(48)) {
    const date::sys_info before = z.get_info(info.begin - seconds(1));
    const seconds back = before.offset - info.offset;
    if (back > seconds::zero() && ts < info.begin + back)
      from = date::local_seconds{info.begin.time_since_epoch() + before.offset};
  }
  for (;;) {
    const std::optional<date::local_seconds> l = next_local(r.cron, from);
    if (!l) return std::nullopt;
    const date::sys_seconds at = to_instant(z, *l);
    if (at > kLastSecond) return std::nullopt;
    const TimePoint instant{at.time_since_epoch()};
    if (instant > t) return instant;
    from = *l + seconds(1);
  }
}

std::optional<TimePoint> Rule::next_at_or_after(TimePoint t) const {
  if (t == TimePoint::min()) return next_after(t);
  return next_after(t - Duration(1));
}

std::optional<Duration> Rule::interval() const {
  return impl_->every;
}

uint64_t Rule::count(TimePoint from, TimePoint to) const {
  const Impl& r = *impl_;
  std::optional<TimePoint> o = next_at_or_after(from);
  if (!o || *o >= to) return 0;
  if (r.every) return static_cast<uint64_t>((to - Duration(1) - *o) / *r.every) + 1;
  // Walks occurrence by occurrence, but a whole local day at once when it starts at the day's
  // first matching time, ends before `to`, and has no change of offset in it (then each of its
  // matching local times is a distinct instant): a long span costs one step a day.
  const date::time_zone& z = *r.zone;
  const uint64_t per_day = matches_per_day(r.cron);
  uint64_t n = 0;
  while (o && *o < to) {
    const date::sys_seconds at = date::floor<seconds>(*o);
    const date::local_seconds l = z.to_local(at);
    const date::local_days day = date::floor<date::days>(l);
    const date::local_seconds next_midnight = day + date::days(1);
    const date::sys_info info = z.get_info(at);
    const date::sys_seconds day_end{next_midnight.time_since_epoch() - info.offset};
    if (l - day == first_time_of_day(r.cron) && info.end >= day_end &&
        z.get_info(date::sys_seconds{day.time_since_epoch() - info.offset}).offset == info.offset &&
        day_end < kLastSecond && TimePoint(day_end.time_since_epoch()) <= to) {
      n += per_day;
      o = next_at_or_after(TimePoint(day_end.time_since_epoch()));
      continue;
    }
    ++n;
    o = next_after(*o);
  }
  return n;
}

Rule::Rule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Rule::Rule(Rule&&) noexcept = default;
Rule& Rule::operator=(Rule&&) noexcept = default;
Rule::Rule(const Rule& o) : impl_(std::make_unique<Impl>(*o.impl_)) {}
Rule& Rule::operator=(const Rule& o) {
  if (this != &o) impl_ = std::make_unique<Impl>(*o.impl_);
  return *this;
}
Rule::~Rule() = default;

}  // namespace delayq::schedule
