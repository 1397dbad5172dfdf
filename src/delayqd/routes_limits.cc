// /limits/set, /limits/clear: a topic's rate and concurrency limits (see routes.h,
// docs/http-api.md). /limits/set answers {"topic": ..., "limits": {...}} with the limits as set;
// /limits/clear {"topic": ..., "limits": null}, also when the topic had none.
#include <string>

#include "delayqd/responses.h"
#include "delayqd/routes.h"
#include "wire/flow.h"

namespace delayq::http::routes {

namespace {

std::string answer(const std::string& topic, const TopicLimits* limits) {
  wire::json::Writer w;
  w.begin_object().key("topic").value(topic).key("limits");
  if (limits != nullptr)
    wire::write_limits(w, *limits);
  else
    w.null();
  w.end_object();
  return w.take();
}

}  // namespace

// Every refusal of the body (wire::read_limits_request: unknown members, types, ranges, then
// the library's rules) comes before the queue is called.
void limits_set(RouteContext& ctx, const Request&, const wire::json::Value& body, Done& done) {
  std::string topic;
  TopicLimits limits;
  if (Status s = wire::read_limits_request(body, ctx.limits, topic, limits); !s.ok())
    return done(bad_request(s.message()));
  if (Status s = ctx.queue.set_topic_limits(topic, limits); !s.ok()) return done(fail(s));
  done(ok("limits set", answer(topic, &limits)));
}

void limits_clear(RouteContext& ctx, const Request&, const wire::json::Value& body, Done& done) {
  auto topic = only_name(ctx, body, "topic", "/limits/clear", done);
  if (!topic) return;
  if (Status s = ctx.queue.clear_topic_limits(*topic); !s.ok()) return done(fail(s));
  done(ok("limits cleared", answer(*topic, nullptr)));
}

}  // namespace delayq::http::routes
