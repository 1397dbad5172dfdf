// HttpQueue's schedule calls (see http_queue.h): each one route of delayqd's /schedules/*, the
// schedule checked here first with the library's words (schedule/spec_rules.h), so that a bad
// spec is refused the same way on every backend.
#include <string>

#include "client/http_queue.h"
#include "common/flow_rules.h"
#include "delayq/clock.h"
#include "schedule/spec_rules.h"
#include "wire/schedule.h"

namespace delayq::client {

namespace json = wire::json;

Status HttpQueue::schedule(const ScheduleSpec& spec) {
  if (Status s = usable(); !s.ok()) return s;
  auto rule = schedule::check_schedule(spec, options_.limits, SystemClock::instance().now());
  if (!rule) return rule.status();
  for (auto [what, text] : {std::pair<std::string_view, std::string_view>{"schedule id", spec.id},
                            {"rule", spec.rule},
                            {"zone", spec.zone},
                            {"topic", spec.job.topic},
                            {"body", spec.job.body}})
    if (Status s = text_only(what, text); !s.ok()) return s;
  json::Writer w;
  wire::write_schedule_spec(w, spec);
  return call_status("/schedules/set", w.str());
}

// The routes that take {"id": ...} and whose answer the call does not need.
Status HttpQueue::schedule_call(std::string_view path, std::string_view id) {
  auto body = one_member("id", id);
  return body ? call_status(path, *body) : body.status();
}

Status HttpQueue::unschedule(std::string_view id) { return schedule_call("/schedules/remove", id); }

Result<ScheduleInfo> HttpQueue::get_schedule(std::string_view id) {
  auto body = one_member("id", id);
  if (!body) return body.status();
  auto data = call("POST", "/schedules/get", *body);
  if (!data) return data.status();
  return wire::read_schedule_info(*data);
}

Result<SchedulePage> HttpQueue::list_schedules(size_t limit, std::string_view cursor) {
  if (Status s = usable(); !s.ok()) return s;
  if (Status s = rules::check_list_limit(limit); !s.ok()) return s;
  if (Status s = text_only("cursor", cursor); !s.ok()) return s;
  json::Writer w;
  w.begin_object().key("limit").value(static_cast<uint64_t>(limit));
  if (!cursor.empty()) w.key("cursor").value(cursor);
  w.end_object();
  auto data = call("POST", "/schedules/list", w.str());
  if (!data) return data.status();
  if (const json::Value* list = data->find("schedules"); list == nullptr || !list->is_array())
    return Status(Errc::unavailable,
                  "/schedules/list: the daemon's answer has no \"schedules\" array");
  return wire::read_schedule_page(*data);
}

Status HttpQueue::pause_schedule(std::string_view id) {
  return schedule_call("/schedules/pause", id);
}

Status HttpQueue::resume_schedule(std::string_view id) {
  return schedule_call("/schedules/resume", id);
}

}  // namespace delayq::client
