// /schedules/set, /schedules/remove, /schedules/get, /schedules/list, /schedules/pause,
// /schedules/resume: schedules (issue 23; see routes.h, docs/http-api.md). Every route but
// /schedules/remove and /schedules/list answers the schedule as it is after the call
// (wire/schedule.h); /schedules/remove answers {"id": ...}; /schedules/list a page.
#include <string>

#include "common/flow_rules.h"
#include "delayqd/responses.h"
#include "delayqd/routes.h"
#include "wire/schedule.h"

namespace delayq::http::routes {

namespace {

using wire::json::Value;
using wire::json::Writer;

// The schedule `id` as it is now, answered with `message`.
void answer_schedule(RouteContext& ctx, const std::string& id, std::string_view message,
                     Done& done) {
  auto info = ctx.queue.get_schedule(id);
  if (!info) return done(fail(info.status()));
  Writer w;
  wire::write_schedule_info(w, *info);
  done(ok(message, w.str()));
}

}  // namespace

// Every refusal of the body's members (wire::read_schedule_spec) comes before the queue is
// called; the queue refuses what needs the rule parsed (zone, cron fields, end before start).
void schedules_set(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  ScheduleSpec spec;
  if (Status s = wire::read_schedule_spec(body, ctx.limits, spec); !s.ok())
    return done(bad_request(s.message()));
  if (Status s = ctx.queue.schedule(spec); !s.ok()) return done(fail(s));
  answer_schedule(ctx, spec.id, "schedule set", done);
}

void schedules_remove(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  auto id = only_name(ctx, body, "id", "/schedules/remove", done);
  if (!id) return;
  if (Status s = ctx.queue.unschedule(*id); !s.ok()) return done(fail(s));
  Writer w;
  w.begin_object().key("id").value(*id).end_object();
  done(ok("schedule removed", w.str()));
}

void schedules_get(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  auto id = only_name(ctx, body, "id", "/schedules/get", done);
  if (id) answer_schedule(ctx, *id, "ok", done);
}

void schedules_pause(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  auto id = only_name(ctx, body, "id", "/schedules/pause", done);
  if (!id) return;
  if (Status s = ctx.queue.pause_schedule(*id); !s.ok()) return done(fail(s));
  answer_schedule(ctx, *id, "schedule paused", done);
}

void schedules_resume(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  auto id = only_name(ctx, body, "id", "/schedules/resume", done);
  if (!id) return;
  if (Status s = ctx.queue.resume_schedule(*id); !s.ok()) return done(fail(s));
  answer_schedule(ctx, *id, "schedule resumed", done);
}

// {"limit" (1..1000, default 100), "cursor"}.
void schedules_list(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  wire::Fields f(body, ctx.limits);
  f.only({"limit", "cursor"}, "/schedules/list");
  auto limit = f.integer("limit", 1, static_cast<int64_t>(rules::kMaxListLimit));
  auto cursor = f.string("cursor");
  if (!f.ok()) return done(bad_request(f.error()));
  auto page = ctx.queue.list_schedules(limit ? static_cast<size_t>(*limit) : 100,
                                       cursor ? *cursor : std::string());
  if (!page) return done(fail(page.status()));
  Writer w;
  wire::write_schedule_page(w, *page);
  done(ok("ok", w.str()));
}

}  // namespace delayq::http::routes
