// The JSON form of limits, flow and pages (see flow.h).
#include "wire/flow.h"

#include <cstdint>
#include <limits>

#include "common/bad_input.h"
#include "common/flow_rules.h"
#include "wire/fields.h"
#include "wire/jobs.h"
#include "wire/spec.h"

namespace delayq::wire {

namespace {

constexpr int64_t kMaxU32 = std::numeric_limits<uint32_t>::max();

// A count written as an integer of 0..2^32-1, else nothing.
std::optional<uint32_t> count_of(const json::Value& v, std::string_view key) {
  const json::Value* m = v.find(key);
  if (m == nullptr || !m->is_int() || m->as_int() < 0 || m->as_int() > kMaxU32) return std::nullopt;
  return static_cast<uint32_t>(m->as_int());
}

// "per_ms" (an integer of milliseconds) or "per" (seconds), within 100 years; else nothing.
std::optional<Duration> period_of(const json::Value& v) {
  constexpr double kMaxSeconds = 100.0 * 366 * 86400;
  if (const json::Value* ms = v.find("per_ms"); ms != nullptr && ms->is_int()) {
    if (ms->as_int() < 0 || ms->as_double() / 1000 > kMaxSeconds) return std::nullopt;
    return std::chrono::milliseconds(ms->as_int());
  }
  const json::Value* s = v.find("per");
  if (s == nullptr || !s->is_number() || !(s->as_double() >= 0 && s->as_double() <= kMaxSeconds))
    return std::nullopt;
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s->as_double()));
}

// The limits' members, into an object the caller opened.
void limits_members(json::Writer& w, const TopicLimits& l) {
  if (l.rate) {
    w.key("rate").begin_object().key("count").value(l.rate->count);
    write_duration(w, "per", l.rate->per);
    w.key("burst").value(l.rate->burst).end_object();
  }
  if (l.max_in_flight) w.key("max_in_flight").value(*l.max_in_flight);
}

}  // namespace

void write_limits(json::Writer& w, const TopicLimits& l) {
  w.begin_object();
  limits_members(w, l);
  w.end_object();
}

void write_limits_request(json::Writer& w, std::string_view topic, const TopicLimits& l) {
  w.begin_object().key("topic").value(topic);
  limits_members(w, l);
  w.end_object();
}

Status read_limits_request(const json::Value& body, const InputLimits& limits, std::string& topic,
                           TopicLimits& out) {
  if (!body.is_object()) return bad("/limits/set takes a JSON object");
  Fields f(body, limits);
  f.only({"topic", "rate", "max_in_flight"}, "/limits/set");
  auto name = f.name("topic", true);
  TopicLimits l;
  if (const json::Value* r = f.get("rate"); r != nullptr && f.ok()) {
    if (!r->is_object()) return bad("field \"rate\" must be an object like {\"count\": 50, "
                                    "\"per_ms\": 1000, \"burst\": 10}, not a " +
                                    std::string(json::to_string(r->type())));
    Fields rf(*r, limits, "rate.");
    rf.only({"count", "per", "per_ms", "burst"}, "rate");
    if (rf.ok() && !rf.has("count")) rf.fail_with("missing field \"rate.count\"");
    if (rf.ok() && !rf.has("per") && !rf.has("per_ms"))
      rf.fail_with("missing field \"rate.per_ms\" (or \"rate.per\" in seconds)");
    auto count = rf.integer("count", 0, kMaxU32);
    auto per = rf.duration("per", "per_ms", "a rate's period is positive, e.g. \"per_ms\": 1000");
    auto burst = rf.integer("burst", 0, kMaxU32);
    if (!rf.ok()) return bad(rf.error());
    TopicLimits::Rate rate;
    rate.count = static_cast<uint32_t>(*count);
    rate.per = *per;
    if (burst) rate.burst = static_cast<uint32_t>(*burst);
    l.rate = rate;
  }
  auto in_flight = f.integer("max_in_flight", 0, kMaxU32);
  if (!f.ok()) return bad(f.error());
  if (in_flight) l.max_in_flight = static_cast<uint32_t>(*in_flight);
  if (Status s = rules::check_topic_limits(*name, l, limits.max_delay); !s.ok()) return s;
  topic = std::move(*name);
  out = l;
  return Status();
}

TopicLimits read_limits(const json::Value& v) {
  TopicLimits l;
  if (const json::Value* r = v.find("rate"); r != nullptr && r->is_object()) {
    auto count = count_of(*r, "count");
    auto per = period_of(*r);
    if (count && per) l.rate = TopicLimits::Rate{*count, *per, count_of(*r, "burst").value_or(1)};
  }
  l.max_in_flight = count_of(v, "max_in_flight");
  return l;
}

void write_flow(json::Writer& w, const std::map<std::string, TopicFlow>& flow) {
  w.begin_object();
  for (const auto& [topic, f] : flow) {
    write_limits(w.key(topic).begin_object().key("limits"), f.limits);
    w.key("tokens").value(f.tokens).key("in_flight").value(f.in_flight);
    w.key("throttled_rate").value(f.throttled_rate);
    w.key("throttled_concurrency").value(f.throttled_concurrency).end_object();
  }
  w.end_object();
}

std::map<std::string, TopicFlow> read_flow(const json::Value& v) {
  std::map<std::string, TopicFlow> flow;
  if (!v.is_object()) return flow;
  for (const auto& [topic, t] : v.as_object()) {
    if (!t.is_object()) continue;
    TopicFlow f;
    if (const json::Value* l = t.find("limits"); l != nullptr && l->is_object())
      f.limits = read_limits(*l);
    f.tokens = counter_of(t, "tokens");
    f.in_flight = counter_of(t, "in_flight");
    f.throttled_rate = counter_of(t, "throttled_rate");
    f.throttled_concurrency = counter_of(t, "throttled_concurrency");
    flow[topic] = f;
  }
  return flow;
}

void write_page(json::Writer& w, const JobPage& page) {
  w.begin_object().key("jobs").begin_array();
  for (const JobInfo& j : page.jobs) write_job(w, j);
  w.end_array();
  write_cursor(w, page.cursor);
  w.end_object();
}

void write_cursor(json::Writer& w, const std::string& cursor) {
  w.key("cursor");
  if (cursor.empty())
    w.null();
  else
    w.value(cursor);
}

JobPage read_page(const json::Value& v) {
  JobPage page;
  if (const json::Value* jobs = v.find("jobs"); jobs != nullptr && jobs->is_array())
    for (const json::Value& j : jobs->as_array()) page.jobs.push_back(read_job(j));
  page.cursor = json::member_string(v, "cursor");
  return page;
}

}  // namespace delayq::wire
