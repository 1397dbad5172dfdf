// /dead/list, /dead/requeue, /dead/purge: the dead letters of a topic (see routes.h,
// docs/http-api.md).
#include <string>

#include "delayqd/answers.h"
#include "delayqd/routes.h"
#include "wire/jobs.h"

namespace delayq::http::routes {

namespace {

using wire::Fields;
using wire::json::Value;
using wire::json::Writer;

// {"<key>":n}
std::string count_json(std::string_view key, uint64_t n) {
  Writer w;
  w.begin_object().key(key).value(n).end_object();
  return w.take();
}

}  // namespace

// As many dead letters as fit in max_list_bytes; the answer says when it was cut, and why.
void dead_list(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  Fields f(body, ctx.limits);
  f.only({"topic", "limit"}, "/dead/list");
  auto topic = f.name("topic", true);
  auto limit = f.integer("limit", 1, 10'000);
  if (!f.ok()) return done(bad_request(f.error()));
  auto jobs = ctx.queue.list_dead(*topic, static_cast<size_t>(limit.value_or(100)));
  if (!jobs) return done(fail(jobs.status()));
  Writer w;
  w.begin_object().key("jobs").begin_array();
  size_t listed = 0;
  for (const JobInfo& j : *jobs) {
    Writer one;
    wire::write_job(one, j);
    if (w.str().size() + one.str().size() > ctx.options.max_list_bytes) break;
    w.raw(one.str());
    ++listed;
  }
  w.end_array();
  const bool cut = listed < jobs->size();
  w.key("truncated").value(cut).end_object();
  if (!cut) return done(ok("ok", w.str()));
  done(ok("only the first " + std::to_string(listed) + " of the " + std::to_string(jobs->size()) +
              " dead letters asked for fit in one answer (at most " +
              std::to_string(ctx.options.max_list_bytes) +
              " bytes); requeue or purge those to list the rest",
          w.str()));
}

// One dead job ("id"), or every dead job of a topic ("topic"), back as ready now.
void dead_requeue(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  Fields f(body, ctx.limits);
  f.only({"id", "topic"}, "/dead/requeue");
  if (f.ok() && f.has("id") == f.has("topic"))
    f.fail_with("give \"id\" (one job) or \"topic\" (all of its dead letters), one of them");
  const bool one = f.has("id");
  auto name = f.name(one ? "id" : "topic", true);
  if (!f.ok()) return done(bad_request(f.error()));
  Result<uint64_t> n = uint64_t{1};
  if (one) {
    if (Status s = ctx.queue.requeue_dead(*name); !s.ok()) n = s;
  } else {
    n = ctx.queue.requeue_dead_topic(*name);
  }
  if (!n) return done(fail(n.status()));
  done(ok("requeued", count_json("requeued", *n)));
}

void dead_purge(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  auto topic = only_name(ctx, body, "topic", "/dead/purge", done);
  if (!topic) return;
  auto n = ctx.queue.purge_dead(*topic);
  if (!n) return done(fail(n.status()));
  done(ok("purged", count_json("purged", *n)));
}

}  // namespace delayq::http::routes
