// The route table (see routes.h).
#include "delayqd/routes.h"

#include "delayqd/responses.h"

#include <iterator>

namespace delayq::http {

namespace {

using M = Methods;
using B = BodyRule;

constexpr RouteSpec kRoutes[] = {
    {"/push", Route::push, M::post, B::object_or_array, routes::push},
    {"/push_batch", Route::push_batch, M::post, B::object, routes::push_batch},
    {"/pop", Route::pop, M::post, B::object, routes::pop},
    {"/finish", Route::finish, M::post, B::object, routes::finish},
    {"/ack", Route::finish, M::post, B::object, routes::finish},
    {"/nack", Route::nack, M::post, B::object, routes::nack},
    {"/touch", Route::touch, M::post, B::object, routes::touch},
    {"/dead_letter", Route::dead_letter, M::post, B::object, routes::dead_letter},
    {"/delete", Route::del, M::post, B::object, routes::del},
    {"/get", Route::get, M::post, B::object, routes::get},
    {"/reschedule", Route::reschedule, M::post, B::object, routes::reschedule},
    {"/stats", Route::stats, M::get_or_post, B::object_or_empty, routes::stats},
    {"/dead/list", Route::dead_list, M::post, B::object, routes::dead_list},
    {"/dead/requeue", Route::dead_requeue, M::post, B::object, routes::dead_requeue},
    {"/dead/purge", Route::dead_purge, M::post, B::object, routes::dead_purge},
    {"/backup", Route::backup, M::post, B::object_or_empty, routes::backup},
    {"/metrics", Route::metrics, M::get, B::none, routes::metrics},
    {"/health", Route::health, M::get, B::none, routes::health},
    {"/pause", Route::pause, M::post, B::object, routes::pause},
    {"/resume", Route::resume, M::post, B::object, routes::resume},
    {"/release", Route::release, M::post, B::object, routes::release},
    {"/limits/set", Route::limits_set, M::post, B::object, routes::limits_set},
    {"/limits/clear", Route::limits_clear, M::post, B::object, routes::limits_clear},
    {"/jobs/list", Route::jobs_list, M::post, B::object, routes::jobs_list},
    {"/schedules/set", Route::schedules_set, M::post, B::object, routes::schedules_set},
    {"/schedules/remove", Route::schedules_remove, M::post, B::object, routes::schedules_remove},
    {"/schedules/get", Route::schedules_get, M::post, B::object, routes::schedules_get},
    {"/schedules/list", Route::schedules_list, M::post, B::object_or_empty, routes::schedules_list},
    {"/schedules/pause", Route::schedules_pause, M::post, B::object, routes::schedules_pause},
    {"/schedules/resume", Route::schedules_resume, M::post, B::object, routes::schedules_resume},
    {"/ui", Route::ui, M::get, B::none, routes::ui},
    {"/ui/", Route::ui, M::get, B::none, routes::ui},
    {"/ui/app.js", Route::ui, M::get, B::none, routes::ui},
    {"/ui/topic.js", Route::ui, M::get, B::none, routes::ui},
    {"/ui/schedules.js", Route::ui, M::get, B::none, routes::ui},
    {"/ui/style.css", Route::ui, M::get, B::none, routes::ui},
};

// The names routes have in metrics, by Route.
constexpr const char* kNames[] = {
    "push",   "push_batch", "pop",        "finish", "nack",      "touch",        "dead_letter",
    "delete", "get",        "reschedule", "stats",  "dead_list", "dead_requeue", "dead_purge",
    "backup", "metrics",    "health",     "pause",  "resume",    "release",      "limits_set",
    "limits_clear", "jobs_list", "schedules_set", "schedules_remove", "schedules_get",
    "schedules_list", "schedules_pause", "schedules_resume", "ui", "unknown",
};
static_assert(std::size(kNames) == static_cast<size_t>(Route::count_));

}  // namespace

const char* route_name(Route r) noexcept {
  const auto i = static_cast<size_t>(r);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

const RouteSpec* find_route(std::string_view path) {
  for (const RouteSpec& r : kRoutes)
    if (r.path == path) return &r;
  return nullptr;
}

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

// HEAD is answered wherever GET is (the server sends GET's headers without the body).
const char* method_names(Methods m) {
  return m == Methods::get ? "GET (or HEAD)" : m == Methods::post ? "POST" : "GET (or HEAD) or POST";
}

const char* allow_header(Methods m) {
  return m == Methods::get ? "GET, HEAD" : m == Methods::post ? "POST" : "GET, HEAD, POST";
}

std::optional<std::string> only_name(const RouteContext& ctx, const wire::json::Value& body,
                                     std::string_view key, std::string_view where, Done& done) {
  wire::Fields f(body, ctx.limits);
  f.only({key}, where);
  auto name = f.name(key, true);
  if (f.ok()) return name;
  done(bad_request(f.error()));
  return std::nullopt;
}

bool method_fits(Methods m, std::string_view method) {
  if (method == "GET" || method == "HEAD") return m != Methods::post;
  if (method == "POST") return m != Methods::get;
  return false;
}

}  // namespace delayq::http
