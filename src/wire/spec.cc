// The JSON form of a job to push (JobSpec, RetryPolicy), as a client writes it and delayqd reads
// it (see spec.h).
#include "wire/spec.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "common/bad_input.h"
#include "common/rules.h"
#include "delayq/clock.h"
#include "wire/fields.h"
#include "wire/jobs.h"

namespace delayq::wire {

namespace {

using json::Value;
using rules::Unit;

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
    auto d =
        rules::user_duration(what, e.as_double(), s != nullptr ? Unit::seconds : Unit::milliseconds,
                             f.limits().max_delay, "use 0 to retry at once");
    if (!d) return f.fail_with(d.status().message());
    p.delays.push_back(*d);
  }
  p.max_attempts = static_cast<uint32_t>(p.delays.size() + 1);
}

Status read_retry(const Value& v, const InputLimits& limits, RetryPolicy& p) {
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

Status read_spec(const Value& v, JobSpec& spec, const InputLimits& limits) {
  if (!v.is_object()) return bad("a job must be a JSON object");
  Fields f(v, limits);
  f.only({"topic", "id", "delay", "delay_ms", "due_at_ms", "due_at_ns", "ttr", "ttr_ms", "body",
          "retry", "priority"},
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
  const int times = f.has("delay") + f.has("delay_ms") + f.has("due_at_ms") + f.has("due_at_ns");
  if (times > 1) f.fail_with("give at most one of \"delay\", \"delay_ms\" and \"due_at_ms\"");
  auto delay = f.duration("delay", "delay_ms", "use 0 for 'now'");
  const TimePoint now = SystemClock::instance().now();
  auto due_at = f.has("due_at_ns") ? f.time_ns("due_at_ns", now) : f.time_ms("due_at_ms", now);
  auto ttr = f.duration("ttr", "ttr_ms", "use 0 for the default ttr", rules::kMinTtr);
  // Checked as an integer of 0..2^32-1 before it is narrowed (smaller is more urgent).
  auto priority = f.integer("priority", 0, std::numeric_limits<uint32_t>::max());
  if (const Value* r = f.get("retry"); r != nullptr && f.ok()) {
    RetryPolicy p;
    if (Status s = read_retry(*r, limits, p); !s.ok()) return s;
    spec.retry = std::move(p);
  }
  if (!f.ok()) return bad(f.error());
  spec.topic = std::move(*topic);
  if (id) spec.id = std::move(*id);
  if (text) spec.body = std::move(*text);
  spec.delay = delay;
  spec.due_at = due_at;
  if (ttr) spec.ttr = *ttr;
  if (priority) spec.priority = static_cast<uint32_t>(*priority);
  return Status();
}

namespace {

bool whole_ms(Duration d) {
  return d % std::chrono::milliseconds(1) == Duration(0);
}

}  // namespace

void write_duration(json::Writer& w, std::string_view name, Duration d) {
  if (whole_ms(d)) {
    w.key(std::string(name) + "_ms").value(to_ms(d));
  } else {
    w.key(name).value(seconds_of(d));
  }
}

void write_retry(json::Writer& w, const RetryPolicy& p) {
  w.begin_object();
  switch (p.kind) {
    case RetryPolicy::Kind::fixed:
      w.key("kind").value("fixed");
      write_duration(w, "delay", p.base);
      break;
    case RetryPolicy::Kind::list: {
      // In milliseconds when every delay is whole milliseconds, else all in seconds.
      const bool ms = std::all_of(p.delays.begin(), p.delays.end(), whole_ms);
      w.key("kind").value("list").key(ms ? "delays_ms" : "delays").begin_array();
      for (Duration d : p.delays) {
        if (ms)
          w.value(to_ms(d));
        else
          w.value(seconds_of(d));
      }
      w.end_array();
      break;
    }
    case RetryPolicy::Kind::exponential:
      w.key("kind").value("exponential");
      write_duration(w, "base", p.base);
      write_duration(w, "cap", p.cap);
      w.key("factor").value(p.factor).key("jitter").value(p.jitter);
      break;
  }
  w.key("max_attempts").value(p.max_attempts).end_object();
}

namespace {

void write_spec_as(json::Writer& w, const JobSpec& spec, bool exact_due) {
  w.begin_object().key("topic").value(spec.topic);
  if (!spec.id.empty()) w.key("id").value(spec.id);
  if (spec.delay) write_duration(w, "delay", *spec.delay);
  if (spec.due_at && exact_due)
    w.key("due_at_ns").value(static_cast<int64_t>(spec.due_at->time_since_epoch().count()));
  else if (spec.due_at)
    w.key("due_at_ms")
        .value(
            std::chrono::ceil<std::chrono::milliseconds>(spec.due_at->time_since_epoch()).count());
  if (spec.ttr != Duration(0)) write_duration(w, "ttr", spec.ttr);
  w.key("body").value(spec.body);
  if (spec.retry) write_retry(w.key("retry"), *spec.retry);
  // Only when not the default: a delayqd from before priorities refuses the member.
  if (spec.priority != kDefaultPriority) w.key("priority").value(spec.priority);
  w.end_object();
}

}  // namespace

void write_spec(json::Writer& w, const JobSpec& spec) { write_spec_as(w, spec, false); }

void write_spec_exact(json::Writer& w, const JobSpec& spec) { write_spec_as(w, spec, true); }

}  // namespace delayq::wire
