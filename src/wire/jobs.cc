// The JSON form of Delivery and JobInfo (see jobs.h).
#include "wire/jobs.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "wire/spec.h"

namespace delayq::wire {

namespace {

using json::member_int;
using json::member_string;

uint32_t member_count(const json::Value& v, std::string_view key) {
  return static_cast<uint32_t>(member_int(v, key));
}

// A priority as write_job wrote it; the default when it is missing (a delayqd from before
// priorities) or not a 32-bit count.
uint32_t member_priority(const json::Value& v) {
  const json::Value* p = v.find("priority");
  if (p == nullptr || !p->is_int() || p->as_int() < 0 || p->as_int() > UINT32_MAX)
    return kDefaultPriority;
  return static_cast<uint32_t>(p->as_int());
}

JobState state_of(std::string_view name) {
  for (JobState s : {JobState::ready, JobState::reserved, JobState::dead})
    if (name == to_string(s)) return s;
  return JobState::delayed;
}

// A duration written as milliseconds (an integer) or seconds (a number); 0 when it is neither or
// beyond 100 years either way, so that no value overflows the conversion.
Duration duration_of(const json::Value* v, bool in_ms) {
  constexpr double kMaxSeconds = 100.0 * 366 * 86400;
  if (v == nullptr || !v->is_number()) return Duration(0);
  const double s = in_ms ? v->as_double() / 1000 : v->as_double();
  if (!(s >= -kMaxSeconds && s <= kMaxSeconds)) return Duration(0);
  if (in_ms && v->is_int()) return std::chrono::milliseconds(v->as_int());
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

// The member `name` ("delay") of a retry policy, written as name_ms or name (write_retry).
Duration member_duration(const json::Value& v, const std::string& name) {
  if (const json::Value* ms = v.find(name + "_ms")) return duration_of(ms, true);
  return duration_of(v.find(name), false);
}

double member_double(const json::Value& v, std::string_view key, double fallback) {
  const json::Value* m = v.find(key);
  return m != nullptr && m->is_number() ? m->as_double() : fallback;
}

// What write_retry wrote, read as leniently as read_job reads the rest.
RetryPolicy read_retry_shown(const json::Value& v) {
  RetryPolicy p;
  const std::string kind = member_string(v, "kind");
  if (kind == "fixed") p.kind = RetryPolicy::Kind::fixed;
  if (kind == "list") p.kind = RetryPolicy::Kind::list;
  p.max_attempts = member_count(v, "max_attempts");
  if (p.kind == RetryPolicy::Kind::fixed) p.base = member_duration(v, "delay");
  if (p.kind == RetryPolicy::Kind::exponential) {
    p.base = member_duration(v, "base");
    p.cap = member_duration(v, "cap");
    p.factor = member_double(v, "factor", p.factor);
    p.jitter = member_double(v, "jitter", p.jitter);
  }
  const json::Value* ms = v.find("delays_ms");
  const json::Value* list = ms != nullptr ? ms : v.find("delays");
  if (p.kind == RetryPolicy::Kind::list && list != nullptr && list->is_array()) {
    for (const json::Value& d : list->as_array())
      p.delays.push_back(duration_of(&d, ms != nullptr));
  }
  return p;
}

}  // namespace

int64_t to_unix_ms(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

TimePoint from_unix_ms(int64_t ms) {
  return TimePoint(std::chrono::milliseconds(ms));
}

int64_t to_ms(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

void write_time(json::Writer& w, std::string_view name, TimePoint t) {
  w.key(std::string(name) + "_ms").value(to_unix_ms(t));
  w.key(std::string(name) + "_ns").value(static_cast<int64_t>(t.time_since_epoch().count()));
}

TimePoint read_time(const json::Value& v, std::string_view name) {
  if (const json::Value* ns = v.find(std::string(name) + "_ns"); ns != nullptr && ns->is_int())
    return TimePoint(Duration(ns->as_int()));
  return from_unix_ms(member_int(v, std::string(name) + "_ms"));
}

void write_job(json::Writer& w, const JobInfo& j) {
  const int64_t due_s = std::chrono::floor<std::chrono::seconds>(j.due.time_since_epoch()).count();
  w.begin_object();
  // The ouqiang/delay-queue fields first: delay is the due time in unix seconds, ttr seconds.
  w.key("topic").value(j.topic).key("id").value(j.id).key("delay").value(due_s);
  // Rounded up: a lease under a second shows as 1, not as 0 (which /push reads as "the default").
  w.key("ttr").value(std::chrono::ceil<std::chrono::seconds>(j.ttr).count());
  w.key("body").value(j.body);
  w.key("state").value(to_string(j.state)).key("attempts").value(j.attempts);
  w.key("max_attempts").value(j.max_attempts).key("priority").value(j.priority);
  write_time(w, "due", j.due);
  w.key("ttr_ms").value(to_ms(j.ttr));
  if (j.state == JobState::reserved) write_time(w, "lease_deadline", j.lease_deadline);
  if (j.state == JobState::dead) write_time(w, "dead_since", j.dead_since);
  write_retry(w.key("retry"), j.retry);
  w.end_object();
}

JobInfo read_job(const json::Value& v) {
  JobInfo j;
  j.id = member_string(v, "id");
  j.topic = member_string(v, "topic");
  j.state = state_of(member_string(v, "state"));
  j.attempts = member_count(v, "attempts");
  j.max_attempts = member_count(v, "max_attempts");
  j.due = read_time(v, "due");
  j.lease_deadline = read_time(v, "lease_deadline");
  if (j.state == JobState::dead) j.dead_since = read_time(v, "dead_since");
  j.priority = member_priority(v);
  j.ttr = std::chrono::milliseconds(member_int(v, "ttr_ms"));
  j.body = member_string(v, "body");
  // Missing (a delayqd from before the policy was shown): max_attempts 0 says it is unknown.
  const json::Value* retry = v.find("retry");
  if (retry != nullptr && retry->is_object())
    j.retry = read_retry_shown(*retry);
  else
    j.retry.max_attempts = 0;
  return j;
}

void write_delivery(json::Writer& w, const Delivery& d) {
  w.begin_object().key("id").value(d.id).key("body").value(d.body);
  w.key("topic").value(d.topic).key("token").value(d.token.to_string());
  w.key("attempt").value(d.attempt).key("max_attempts").value(d.max_attempts);
  w.key("priority").value(d.priority);
  write_time(w, "due", d.due);
  write_time(w, "lease_deadline", d.lease_deadline);
  w.end_object();
}

Result<Delivery> read_delivery(const json::Value& v) {
  const json::Value* id = v.find("id");
  if (id == nullptr || !id->is_string())
    return Status(Errc::invalid_argument, "not a delivery: no \"id\"");
  auto token = Token::parse(member_string(v, "token"));
  if (!token) return token.status();
  Delivery d;
  d.id = id->as_string();
  d.topic = member_string(v, "topic");
  d.body = member_string(v, "body");
  d.attempt = member_count(v, "attempt");
  d.max_attempts = member_count(v, "max_attempts");
  d.token = std::move(*token);
  d.due = read_time(v, "due");
  d.lease_deadline = read_time(v, "lease_deadline");
  d.priority = member_priority(v);
  return d;
}

}  // namespace delayq::wire
