// /pause, /resume: a topic stops handing out jobs, or starts again (see routes.h,
// docs/http-api.md). Both answer {"topic": ..., "paused": true|false}, also when the topic was
// already so.
#include <string>

#include "delayqd/responses.h"
#include "delayqd/routes.h"

namespace delayq::http::routes {

namespace {

void set_paused(RouteContext& ctx, const wire::json::Value& body, bool paused, Done& done) {
  auto topic = only_name(ctx, body, "topic", paused ? "/pause" : "/resume", done);
  if (!topic) return;
  Status s = paused ? ctx.queue.pause(*topic) : ctx.queue.resume(*topic);
  if (!s.ok()) return done(fail(s));
  wire::json::Writer w;
  w.begin_object().key("topic").value(*topic).key("paused").value(paused).end_object();
  done(ok(paused ? "paused" : "resumed", w.str()));
}

}  // namespace

void pause(RouteContext& ctx, const Request&, const wire::json::Value& body, Done& done) {
  set_paused(ctx, body, true, done);
}

void resume(RouteContext& ctx, const Request&, const wire::json::Value& body, Done& done) {
  set_paused(ctx, body, false, done);
}

}  // namespace delayq::http::routes
