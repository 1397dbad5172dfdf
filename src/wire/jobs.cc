// The JSON form of Delivery and JobInfo (see jobs.h).
#include "wire/jobs.h"

#include <string>
#include <string_view>

namespace delayq::wire {

namespace {

using json::member_int;
using json::member_string;

uint32_t member_count(const json::Value& v, std::string_view key) {
  return static_cast<uint32_t>(member_int(v, key));
}

JobState state_of(std::string_view name) {
  for (JobState s : {JobState::ready, JobState::reserved, JobState::dead})
    if (name == to_string(s)) return s;
  return JobState::delayed;
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

void write_job(json::Writer& w, const JobInfo& j) {
  const int64_t due_s = std::chrono::floor<std::chrono::seconds>(j.due.time_since_epoch()).count();
  w.begin_object();
  // The ouqiang/delay-queue fields first: delay is the due time in unix seconds, ttr seconds.
  w.key("topic").value(j.topic).key("id").value(j.id).key("delay").value(due_s);
  w.key("ttr").value(std::chrono::duration_cast<std::chrono::seconds>(j.ttr).count());
  w.key("body").value(j.body);
  w.key("state").value(to_string(j.state)).key("attempts").value(j.attempts);
  w.key("max_attempts").value(j.max_attempts).key("due_ms").value(to_unix_ms(j.due));
  w.key("ttr_ms").value(to_ms(j.ttr));
  if (j.state == JobState::reserved) w.key("lease_deadline_ms").value(to_unix_ms(j.lease_deadline));
  w.end_object();
}

JobInfo read_job(const json::Value& v) {
  JobInfo j;
  j.id = member_string(v, "id");
  j.topic = member_string(v, "topic");
  j.state = state_of(member_string(v, "state"));
  j.attempts = member_count(v, "attempts");
  j.max_attempts = member_count(v, "max_attempts");
  j.due = from_unix_ms(member_int(v, "due_ms"));
  j.lease_deadline = from_unix_ms(member_int(v, "lease_deadline_ms"));
  j.ttr = std::chrono::milliseconds(member_int(v, "ttr_ms"));
  j.body = member_string(v, "body");
  return j;
}

void write_delivery(json::Writer& w, const Delivery& d) {
  w.begin_object().key("id").value(d.id).key("body").value(d.body);
  w.key("topic").value(d.topic).key("token").value(d.token.to_string());
  w.key("attempt").value(d.attempt).key("max_attempts").value(d.max_attempts);
  w.key("due_ms").value(to_unix_ms(d.due));
  w.key("lease_deadline_ms").value(to_unix_ms(d.lease_deadline));
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
  d.due = from_unix_ms(member_int(v, "due_ms"));
  d.lease_deadline = from_unix_ms(member_int(v, "lease_deadline_ms"));
  return d;
}

}  // namespace delayq::wire
