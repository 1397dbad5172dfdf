// delayqd's routes: a table from path to route (its method, what body it takes, the function
// that answers it), and one function per route. The Api (api.cc) looks a request up here, checks
// what the headers decide (token, method, draining), reads the body as the table says, and calls
// the route's function, which calls the queue and answers through `done`.
//
//   routes_jobs.cc    /push (one job, or a batch as an array), /push_batch, /get, /delete,
//                     /reschedule
//   routes_pop.cc     /pop: the long poll, and the delivery given back when its answer cannot be
//                     written
//   routes_settle.cc  /finish (/ack), /nack, /touch, /dead_letter: by token, or by id for the
//                     latest delivery (tokens.h)
//   routes_dead.cc    /dead/list, /dead/requeue, /dead/purge
//   routes_admin.cc   /stats, /backup, /metrics, /health
//   routes_topics.cc  /pause, /resume: a topic stops or starts handing out jobs
//   routes_release.cc /release: a delivery given back undone
//   routes_limits.cc  /limits/set, /limits/clear: a topic's rate and concurrency limits
//   routes_list.cc    /jobs/list: a page of a topic's jobs in one state
//   routes_schedules.cc /schedules/set, /remove, /get, /list, /pause, /resume: schedules
//   routes_ui.cc      /ui: the dashboard's files
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "delayq/queue.h"
#include "delayqd/api.h"
#include "delayqd/background.h"
#include "delayqd/metrics.h"
#include "delayqd/tokens.h"
#include "wire/fields.h"
#include "wire/json.h"

namespace delayq::http {

using Done = Api::Done;

// What the routes work with: the queue, and what the daemon keeps beside it. Owned by the Api; a
// copy holds references only, so that a pop's completion can carry one.
struct RouteContext {
  Queue& queue;
  const ApiOptions& options;
  const wire::InputLimits& limits;
  TokenMemory& tokens;
  Metrics& metrics;
  std::atomic<size_t>& waiting_pops;
  const std::atomic<bool>& draining;
  const std::atomic<int64_t>& connections;
  // The thread for work that grows with the queue (/stats, /metrics), and the Api's count of
  // requests in flight, which such work stays in until it has answered.
  Background& background;
  std::atomic<size_t>& in_flight;
};

// A route's function. `body` is the request's body as the table says the route takes it (null for
// a route that takes none); `done` answers, exactly once.
using RouteFunction = void(RouteContext& ctx, const Request& request, const wire::json::Value& body,
                           Done& done);

enum class Methods : uint8_t { get, post, get_or_post };
enum class BodyRule : uint8_t {
  none,             // nothing is read
  object,           // a JSON object
  object_or_empty,  // a JSON object, or nothing at all (read as {})
  object_or_array,  // a JSON object, or an array (/push: a batch)
};

struct RouteSpec {
  std::string_view path;
  Route route;
  Methods methods;
  BodyRule body;
  RouteFunction* handler;
};

// The route at `path` (a target without its "?query"), or nullptr.
const RouteSpec* find_route(std::string_view path);
// The target without its "?query".
std::string_view path_of(std::string_view target);
// What a route takes, for a refusal ("GET (or HEAD) or POST"); and as an Allow header ("GET,
// HEAD, POST"). HEAD fits wherever GET does.
const char* method_names(Methods m);
const char* allow_header(Methods m);
bool method_fits(Methods m, std::string_view method);

// The one member `key` of a route's body that takes nothing else: a job id or a topic, required,
// trimmed. Nothing when `done` has been called with the refusal.
std::optional<std::string> only_name(const RouteContext& ctx, const wire::json::Value& body,
                                     std::string_view key, std::string_view where, Done& done);

// The routes' functions, in their files (see the top of this header).
namespace routes {
RouteFunction push, push_batch, get, del, reschedule;  // routes_jobs.cc
RouteFunction pop;                                     // routes_pop.cc
RouteFunction finish, nack, touch, dead_letter;        // routes_settle.cc
RouteFunction dead_list, dead_requeue, dead_purge;     // routes_dead.cc
RouteFunction stats, backup, metrics, health;          // routes_admin.cc
RouteFunction pause, resume;                           // routes_topics.cc
RouteFunction release;                                 // routes_release.cc
RouteFunction limits_set, limits_clear;                // routes_limits.cc
RouteFunction jobs_list;                               // routes_list.cc
RouteFunction schedules_set, schedules_remove, schedules_get, schedules_list, schedules_pause,
    schedules_resume;  // routes_schedules.cc
RouteFunction ui;                                      // routes_ui.cc
}  // namespace routes

}  // namespace delayq::http
