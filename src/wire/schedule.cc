// The JSON form of schedules (see schedule.h).
#include "wire/schedule.h"

#include <chrono>
#include <limits>

#include "common/bad_input.h"
#include "delayq/clock.h"
#include "wire/fields.h"
#include "wire/flow.h"
#include "wire/spec.h"

namespace delayq::wire {

namespace {

using json::Value;

int64_t unix_ms(TimePoint t) {
  return std::chrono::floor<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

const char* catch_up_name(ScheduleSpec::CatchUp c) {
  switch (c) {
    case ScheduleSpec::CatchUp::skip: return "skip";
    case ScheduleSpec::CatchUp::one: return "one";
    case ScheduleSpec::CatchUp::all: return "all";
  }
  return "one";
}

const char* overlap_name(ScheduleSpec::Overlap o) {
  return o == ScheduleSpec::Overlap::skip ? "skip" : "allow";
}

// The instant of {"ms": ...}, read leniently: nothing when it is not such an object.
std::optional<TimePoint> instant_of(const Value* v) {
  if (v == nullptr || !v->is_object()) return std::nullopt;
  const Value* ms = v->find("ms");
  if (ms == nullptr || !ms->is_int() || ms->as_int() < 0 ||
      ms->as_int() > std::numeric_limits<int64_t>::max() / 1'000'000)
    return std::nullopt;
  return TimePoint(std::chrono::milliseconds(ms->as_int()));
}

std::optional<TimePoint> ms_member(const Value& v, std::string_view key) {
  const Value* m = v.find(key);
  if (m == nullptr || !m->is_int() || m->as_int() < 0 ||
      m->as_int() > std::numeric_limits<int64_t>::max() / 1'000'000)
    return std::nullopt;
  return TimePoint(std::chrono::milliseconds(m->as_int()));
}

}  // namespace

std::string utc_text(TimePoint t) {
  // occurrence_job_id() writes "<id>@<the instant>": with an empty id, the instant alone.
  return occurrence_job_id("", t).substr(1);
}

void write_instant(json::Writer& w, TimePoint t) {
  w.begin_object().key("ms").value(unix_ms(t)).key("utc").value(utc_text(t)).end_object();
}

void write_schedule_spec(json::Writer& w, const ScheduleSpec& s) {
  w.begin_object().key("id").value(s.id).key("rule").value(s.rule).key("zone").value(s.zone);
  write_spec(w.key("job"), s.job);
  if (s.start) w.key("start_ms").value(unix_ms(*s.start));
  if (s.end) w.key("end_ms").value(unix_ms(*s.end));
  w.key("catch_up").value(catch_up_name(s.catch_up)).key("catch_up_max").value(s.catch_up_max);
  w.key("overlap").value(overlap_name(s.overlap)).end_object();
}

Status read_schedule_spec(const Value& body, const InputLimits& limits, ScheduleSpec& out) {
  if (!body.is_object()) return bad("/schedules/set takes a JSON object");
  Fields f(body, limits);
  f.only({"id", "rule", "zone", "job", "start_ms", "end_ms", "catch_up", "catch_up_max",
          "overlap"},
         "/schedules/set");
  auto id = f.name("id", true);
  auto rule = f.string("rule", true);
  auto zone = f.string("zone");
  const TimePoint now = SystemClock::instance().now();
  auto start = f.time_ms("start_ms", now);
  auto end = f.time_ms("end_ms", now);
  auto catch_up = f.string("catch_up");
  auto catch_up_max = f.integer("catch_up_max", 1, std::numeric_limits<uint32_t>::max());
  auto overlap = f.string("overlap");
  if (f.ok() && !f.has("job")) f.fail_with("missing field \"job\" (the job each occurrence pushes)");
  if (!f.ok()) return bad(f.error());
  ScheduleSpec s;
  if (catch_up) {
    if (*catch_up == "skip")
      s.catch_up = ScheduleSpec::CatchUp::skip;
    else if (*catch_up == "one")
      s.catch_up = ScheduleSpec::CatchUp::one;
    else if (*catch_up == "all")
      s.catch_up = ScheduleSpec::CatchUp::all;
    else
      return bad("field \"catch_up\" must be \"skip\", \"one\" or \"all\", not " +
                 quoted(*catch_up));
  }
  if (overlap) {
    if (*overlap == "allow")
      s.overlap = ScheduleSpec::Overlap::allow;
    else if (*overlap == "skip")
      s.overlap = ScheduleSpec::Overlap::skip;
    else
      return bad("field \"overlap\" must be \"allow\" or \"skip\", not " + quoted(*overlap));
  }
  const Value& job = *f.get("job");
  if (!job.is_object())
    return bad("field \"job\" must be an object like {\"topic\": \"report\", \"body\": \"...\"}");
  for (std::string_view own : {"id", "delay", "delay_ms", "due_at_ms", "due_at_ns"})
    if (job.find(own) != nullptr)
      return bad("field \"job." + std::string(own) +
                 "\" is not taken: each occurrence's job has the occurrence's id and is due at it");
  if (Status st = read_spec(job, s.job, limits); !st.ok())
    return bad("in field \"job\": " + st.message());
  s.id = std::move(*id);
  s.rule = std::move(*rule);
  if (zone) s.zone = std::move(*zone);
  s.start = start;
  s.end = end;
  if (catch_up_max) s.catch_up_max = static_cast<uint32_t>(*catch_up_max);
  out = std::move(s);
  return Status();
}

void write_schedule_info(json::Writer& w, const ScheduleInfo& info) {
  // The spec's members, then the state's, in one object.
  json::Writer spec;
  write_schedule_spec(spec, info.spec);
  std::string members = spec.take();
  members.pop_back();  // the closing brace: the state's members follow
  json::Writer state;
  state.begin_object().key("paused").value(info.paused).key("last_fired");
  if (info.last_fired)
    write_instant(state, *info.last_fired);
  else
    state.null();
  state.key("next").begin_array();
  for (TimePoint t : info.next) write_instant(state, t);
  state.end_array().key("live_jobs").begin_array();
  for (const std::string& id : info.live_jobs) state.value(id);
  state.end_array().key("fired").value(info.fired);
  state.key("skipped_overlap").value(info.skipped_overlap);
  state.key("skipped_catch_up").value(info.skipped_catch_up).end_object();
  w.raw(members + "," + state.str().substr(1));
}

ScheduleInfo read_schedule_info(const Value& v) {
  ScheduleInfo info;
  ScheduleSpec& s = info.spec;
  s.id = json::member_string(v, "id");
  s.rule = json::member_string(v, "rule");
  s.zone = json::member_string(v, "zone");
  if (const Value* job = v.find("job"); job != nullptr && job->is_object()) {
    // Read without the daemon's limits on its times: only topic, body, ttr, retry, priority.
    InputLimits trusting;
    trusting.max_delay = Duration::max() / 2;
    trusting.max_body_bytes = std::numeric_limits<size_t>::max();
    (void)read_spec(*job, s.job, trusting);
  }
  s.start = ms_member(v, "start_ms");
  s.end = ms_member(v, "end_ms");
  const std::string catch_up = json::member_string(v, "catch_up");
  s.catch_up = catch_up == "skip"  ? ScheduleSpec::CatchUp::skip
               : catch_up == "all" ? ScheduleSpec::CatchUp::all
                                   : ScheduleSpec::CatchUp::one;
  const int64_t max = json::member_int(v, "catch_up_max");
  if (max > 0 && max <= std::numeric_limits<uint32_t>::max())
    s.catch_up_max = static_cast<uint32_t>(max);
  s.overlap = json::member_string(v, "overlap") == "skip" ? ScheduleSpec::Overlap::skip
                                                          : ScheduleSpec::Overlap::allow;
  if (const Value* p = v.find("paused"); p != nullptr && p->is_bool()) info.paused = p->as_bool();
  info.last_fired = instant_of(v.find("last_fired"));
  if (const Value* next = v.find("next"); next != nullptr && next->is_array())
    for (const Value& n : next->as_array())
      if (auto t = instant_of(&n)) info.next.push_back(*t);
  if (const Value* live = v.find("live_jobs"); live != nullptr && live->is_array())
    for (const Value& id : live->as_array())
      if (id.is_string()) info.live_jobs.push_back(id.as_string());
  info.fired = counter_of(v, "fired");
  info.skipped_overlap = counter_of(v, "skipped_overlap");
  info.skipped_catch_up = counter_of(v, "skipped_catch_up");
  return info;
}

void write_schedule_page(json::Writer& w, const SchedulePage& page) {
  w.begin_object().key("schedules").begin_array();
  for (const ScheduleInfo& s : page.schedules) write_schedule_info(w, s);
  w.end_array();
  write_cursor(w, page.cursor);
  w.end_object();
}

SchedulePage read_schedule_page(const Value& v) {
  SchedulePage page;
  if (const Value* list = v.find("schedules"); list != nullptr && list->is_array())
    for (const Value& s : list->as_array()) page.schedules.push_back(read_schedule_info(s));
  page.cursor = json::member_string(v, "cursor");
  return page;
}

}  // namespace delayq::wire
