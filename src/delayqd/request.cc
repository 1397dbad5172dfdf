// Reading delayqd request members (see request.h).
#include "delayqd/request.h"

#include <algorithm>
#include <vector>

#include "delayq/clock.h"
#include "common/rules.h"

namespace delayq::http {

namespace {

using rules::Unit;
using json::Value;

Status bad(std::string m) {
  return Status(Errc::invalid_argument, std::move(m));
}

std::string quoted(std::string_view s) {
  // A member name as a client wrote it, cut short: a hostile 4 MiB key must not come back whole.
  constexpr size_t kShown = 64;
  if (s.size() <= kShown) return "\"" + std::string(s) + "\"";
  return "\"" + std::string(s.substr(0, kShown)) + "...\"";
}

std::string fmt(double d) {
  json::Writer w;
  w.value(d);
  return w.take();
}

}  // namespace

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
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

Fields::Fields(const Value& obj, const RequestLimits& limits, std::string prefix)
    : obj_(obj), limits_(limits), prefix_(std::move(prefix)) {}

void Fields::fail_with(std::string message) {
  if (error_.empty()) error_ = std::move(message);
}

const Value* Fields::get(std::string_view key) const {
  const Value* v = obj_.find(key);
  return v == nullptr || v->is_null() ? nullptr : v;
}

void Fields::only(std::initializer_list<std::string_view> known, std::string_view where) {
  for (const auto& [key, value] : obj_.as_object()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    // The closest known name, if it is close enough to be what was meant: a typo, a swap, a
    // capital letter, or the name cut short ("due_at" for "due_at_ms"). Long keys are no typo of
    // ours and are not compared.
    std::string_view best;
    size_t best_distance = 3;
    if (key.size() <= 64)
      for (std::string_view k : known) {
        size_t d = edit_distance(key, k);
        if (d >= 3 && key.size() >= 3 && k.starts_with(key)) d = 2;
        if (d < best_distance && d < k.size()) {
          best = k;
          best_distance = d;
        }
      }
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
  if (!v->is_number() || !v->is_int()) {
    fail_with(type_error(key, "an integer", *v));
    return std::nullopt;
  }
  if (v->as_int() < min || v->as_int() > max) {
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
                                         std::string_view if_negative) {
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
                            limits_.max_delay, if_negative);
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

namespace {

// A "delays" (seconds) or "delays_ms" list of a list policy, each entry checked as a duration.
void read_delays(Fields& f, RetryPolicy& p) {
  const Value* s = f.get("delays");
  const Value* ms = f.get("delays_ms");
  if ((s == nullptr) == (ms == nullptr))
    return f.fail_with("a list policy needs " + f.full("delays") + " (seconds) or " +
                       f.full("delays_ms") + ", one of them");
  const std::string key = f.full(s != nullptr ? "delays" : "delays_ms");
  const Value& list = s != nullptr ? *s : *ms;
  if (!list.is_array() || list.as_array().empty() || list.as_array().size() > 1000)
    return f.fail_with("field \"" + key + "\" must be an array of 1 to 1000 numbers");
  for (size_t i = 0; i < list.as_array().size(); ++i) {
    const Value& e = list.as_array()[i];
    const std::string what = key + "[" + std::to_string(i) + "]";
    if (!e.is_number() || (ms != nullptr && !e.is_int()))
      return f.fail_with("field \"" + what + "\" must be " +
                         (ms != nullptr ? "an integer of milliseconds" : "a number of seconds"));
    auto d = rules::user_duration(what, e.as_double(),
                                   s != nullptr ? Unit::seconds : Unit::milliseconds,
                                   f.limits().max_delay, "use 0 to retry at once");
    if (!d) return f.fail_with(d.status().message());
    p.delays.push_back(*d);
  }
  p.max_attempts = static_cast<uint32_t>(p.delays.size() + 1);
}

Status parse_retry(const Value& v, const RequestLimits& limits, RetryPolicy& p) {
  if (!v.is_object()) return bad("field \"retry\" must be an object");
  Fields f(v, limits, "retry.");
  const auto kind = f.string("kind", true);
  if (!f.ok()) return bad(f.error());
  constexpr std::string_view kAgain = "use 0 to retry at once";
  if (*kind == "fixed") {
    f.only({"kind", "delay", "delay_ms", "max_attempts"}, "retry (kind fixed)");
    p.kind = RetryPolicy::Kind::fixed;
    if (auto d = f.duration("delay", "delay_ms", kAgain)) p.base = *d;
  } else if (*kind == "list") {
    f.only({"kind", "delays", "delays_ms", "max_attempts"}, "retry (kind list)");
    p.kind = RetryPolicy::Kind::list;
    if (f.ok()) read_delays(f, p);
  } else if (*kind == "exponential") {
    f.only({"kind", "base", "base_ms", "factor", "cap", "cap_ms", "jitter", "max_attempts"},
           "retry (kind exponential)");
    p.kind = RetryPolicy::Kind::exponential;
    if (auto d = f.duration("base", "base_ms", kAgain)) p.base = *d;
    if (auto d = f.duration("cap", "cap_ms", kAgain)) p.cap = *d;
    if (auto x = f.number("factor", 1, 1e6)) p.factor = *x;
    if (auto x = f.number("jitter", 0, 1)) p.jitter = *x;
  } else {
    return bad("field \"retry.kind\" must be \"fixed\", \"list\" or \"exponential\", not " +
               quoted(*kind));
  }
  if (auto attempts = f.integer("max_attempts", 1, 1'000'000))
    p.max_attempts = static_cast<uint32_t>(*attempts);
  if (!f.ok()) return bad(f.error());
  if (std::string why = p.validate(); !why.empty()) return bad(why);
  return Status();
}

}  // namespace

std::string topic_name_problem(std::string_view topic) {
  if (topic.find(',') == std::string_view::npos) return {};
  return "topic " + quoted(topic) +
         " contains a comma: /pop reads \"topic\" as a comma-separated list of topics (as "
         "ouqiang/delay-queue does), so such a job could never be popped by its name; use "
         "another character";
}

Status parse_spec(const Value& v, JobSpec& spec, const RequestLimits& limits) {
  if (!v.is_object()) return bad("a job must be a JSON object");
  Fields f(v, limits);
  f.only({"topic", "id", "delay", "delay_ms", "due_at_ms", "ttr", "ttr_ms", "body", "retry"},
         "a job");
  if (!f.ok()) return bad(f.error());
  auto topic = f.name("topic", true);
  if (topic && f.ok()) {
    if (std::string why = topic_name_problem(*topic); !why.empty()) f.fail_with(why);
  }
  auto id = f.name("id", false);
  const Value* body = f.get("body");
  if (body != nullptr && (body->is_object() || body->is_array()))
    f.fail_with("field \"body\" must be a string, not an " + std::string(to_string(body->type())) +
                ": JSON-encode it first, e.g. \"body\":\"{\\\"uid\\\":1}\" (as ouqiang/delay-queue "
                "clients do)");
  auto text = f.string("body");
  if (text && text->size() > limits.max_body_bytes)
    f.fail_with(
        rules::body_too_large(text->size(), limits.max_body_bytes, limits.body_setting).message());
  const int times = f.has("delay") + f.has("delay_ms") + f.has("due_at_ms");
  if (times > 1) f.fail_with("give at most one of \"delay\", \"delay_ms\" and \"due_at_ms\"");
  auto delay = f.duration("delay", "delay_ms", "use 0 for 'now'");
  auto due_at = f.time_ms("due_at_ms", SystemClock::instance().now());
  auto ttr = f.duration("ttr", "ttr_ms", "use 0 for the default ttr");
  if (const Value* r = f.get("retry"); r != nullptr && f.ok()) {
    RetryPolicy p;
    if (Status s = parse_retry(*r, limits, p); !s.ok()) return s;
    spec.retry = std::move(p);
  }
  if (!f.ok()) return bad(f.error());
  spec.topic = std::move(*topic);
  if (id) spec.id = std::move(*id);
  if (text) spec.body = std::move(*text);
  spec.delay = delay;
  spec.due_at = due_at;
  if (ttr) spec.ttr = *ttr;
  return Status();
}

}  // namespace delayq::http
