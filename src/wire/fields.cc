// Reading the members of a JSON object with delayqd's input rules (see fields.h).
#include "wire/fields.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "delayq/clock.h"
#include "common/rules.h"

namespace delayq::wire {

namespace {

using rules::Unit;
using json::Value;

std::string fmt(double d) {
  json::Writer w;
  w.value(d);
  return w.take();
}

}  // namespace

std::string quoted(std::string_view s) {
  constexpr size_t kShown = 64;
  if (s.size() <= kShown) return "\"" + std::string(s) + "\"";
  return "\"" + std::string(s.substr(0, kShown)) + "...\"";
}

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

uint64_t counter_of(const json::Value& v, std::string_view key) {
  const int64_t n = json::member_int(v, key);
  return n > 0 ? static_cast<uint64_t>(n) : 0;
}

double seconds_of(Duration d) {
  return std::chrono::duration<double>(d).count();
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the classic table suffice for the neighbour swap.
  std::vector<size_t> two(b.size() + 1), one(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) one[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({one[j] + 1, cur[j - 1] + 1, one[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], two[j - 2] + 1);
    }
    std::swap(two, one);
    std::swap(one, cur);
  }
  return one[b.size()];
}

Fields::Fields(const Value& obj, const InputLimits& limits, std::string prefix)
    : obj_(obj), limits_(limits), prefix_(std::move(prefix)) {}

void Fields::fail_with(std::string message) {
  if (error_.empty()) error_ = std::move(message);
}

const Value* Fields::get(std::string_view key) const {
  const Value* v = obj_.find(key);
  return v == nullptr || v->is_null() ? nullptr : v;
}

std::string_view closest_name(std::string_view typed, std::span<const std::string_view> known) {
  std::string_view best;
  size_t best_distance = 3;
  if (typed.size() > 64) return best;
  for (std::string_view k : known) {
    size_t d = edit_distance(typed, k);
    if (d >= 3 && typed.size() >= 3 && k.starts_with(typed)) d = 2;
    if (d < best_distance && d < k.size()) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

void Fields::only(std::initializer_list<std::string_view> known, std::string_view where) {
  for (const auto& [key, value] : obj_.as_object()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string_view best = closest_name(key, {known.begin(), known.size()});
    std::string m = "unknown field " + quoted(full(key));
    if (!best.empty()) {
      m += " (did you mean " + quoted(full(best)) + "?)";
    } else if (known.size() == 0) {
      m += ": " + std::string(where) + " takes no fields";
    } else {
      m += ": " + std::string(where) + " takes ";
      for (std::string_view k : known) m += (k == *known.begin() ? "" : ", ") + full(k);
    }
    return fail_with(std::move(m));
  }
}

std::string Fields::type_error(std::string_view key, std::string_view want,
                               const Value& got) const {
  const bool fraction = got.is_number() && !got.is_int() && want == "an integer";
  return "field " + quoted(full(key)) + " must be " + std::string(want) + ", not " +
         (fraction ? "a non-integer number" : std::string("a ") + to_string(got.type()));
}

std::optional<std::string> Fields::string(std::string_view key, bool required) {
  const Value* v = get(key);
  if (v == nullptr) {
    if (required) fail_with("missing field " + quoted(full(key)));
    return std::nullopt;
  }
  if (!v->is_string()) {
    fail_with(type_error(key, "a string", *v));
    return std::nullopt;
  }
  return v->as_string();
}

std::optional<std::string> Fields::name(std::string_view key, bool required) {
  auto s = string(key, required);
  if (!s) return s;
  std::string t(trim(*s));
  if (t.empty() && required) fail_with("field " + quoted(full(key)) + " is empty");
  return t;
}

std::optional<int64_t> Fields::integer(std::string_view key, int64_t min, int64_t max) {
  const Value* v = get(key);
  if (v == nullptr) return std::nullopt;
  // A whole number beyond 64 bits reads as a number that is not an int: out of range, not a
  // fraction.
  const bool huge = v->is_number() && !v->is_int() &&
                    std::fabs(v->as_double()) >= 9.2e18 && std::trunc(v->as_double()) == v->as_double();
  if (!v->is_number() || (!v->is_int() && !huge)) {
    fail_with(type_error(key, "an integer", *v));
    return std::nullopt;
  }
  if (huge || v->as_int() < min || v->as_int() > max) {
    fail_with("field " + quoted(full(key)) + " is out of range (" + std::to_string(min) + " to " +
              std::to_string(max) + ")");
    return std::nullopt;
  }
  return v->as_int();
}

std::optional<double> Fields::number(std::string_view key, double min, double max) {
  const Value* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) {
    fail_with(type_error(key, "a number", *v));
    return std::nullopt;
  }
  if (!(v->as_double() >= min && v->as_double() <= max)) {
    fail_with("field " + quoted(full(key)) + " is out of range (" + fmt(min) + " to " + fmt(max) +
              ")");
    return std::nullopt;
  }
  return v->as_double();
}

std::optional<Duration> Fields::duration(std::string_view s_key, std::string_view ms_key,
                                         std::string_view if_negative, Duration min_positive) {
  if (has(s_key) && has(ms_key)) {
    fail_with("give " + quoted(full(s_key)) + " or " + quoted(full(ms_key)) + ", not both");
    return std::nullopt;
  }
  const bool seconds = has(s_key);
  const std::string_view key = seconds ? s_key : ms_key;
  const Value* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number() || (!seconds && !v->is_int())) {
    fail_with(type_error(key, seconds ? "a number" : "an integer", *v));
    return std::nullopt;
  }
  auto d =
      rules::user_duration(full(key), v->as_double(), seconds ? Unit::seconds : Unit::milliseconds,
                            limits_.max_delay, if_negative, min_positive);
  if (!d) {
    fail_with(d.status().message());
    return std::nullopt;
  }
  return *d;
}

std::optional<TimePoint> Fields::time_ms(std::string_view key, TimePoint now) {
  const Value* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number() || !v->is_int()) {
    fail_with(type_error(key, "an integer", *v));
    return std::nullopt;
  }
  auto t = rules::user_time(full(key), v->as_double(), Unit::milliseconds, now, limits_.max_delay);
  if (!t) {
    fail_with(t.status().message());
    return std::nullopt;
  }
  return *t;
}

std::optional<TimePoint> Fields::time_ns(std::string_view key, TimePoint now) {
  const Value* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_int()) {
    fail_with(type_error(key, "an integer", *v));
    return std::nullopt;
  }
  // Any int64 is a TimePoint: the checks need no conversion that could overflow.
  const TimePoint t{Duration(v->as_int())};
  if (v->as_int() < 0) {
    fail_with(full(key) + " is negative (" + std::to_string(v->as_int()) +
              "ns); give a unix time, 0 or more (the past means now)");
    return std::nullopt;
  }
  if (t > rules::plus(now, limits_.max_delay)) {
    const double away = std::chrono::duration<double>(t - now).count();
    fail_with(rules::due_beyond_max_delay(full(key), std::to_string(away) + "s", limits_.max_delay)
                  .message());
    return std::nullopt;
  }
  return t;
}

}  // namespace delayq::wire
