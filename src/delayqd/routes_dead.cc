// /dead/list, /dead/requeue, /dead/purge: the dead letters of a topic (see routes.h,
// docs/http-api.md).
#include <algorithm>
#include <string>
#include <vector>

#include "delayqd/responses.h"
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

// The jobs of `jobs` that fit in `max_bytes` of answer, oldest first.
struct Listing {
  std::string jobs;   // the array's elements, comma-separated
  size_t listed = 0;  // how many
};

Listing list_within(const std::vector<JobInfo>& jobs, size_t max_bytes) {
  Listing l;
  for (const JobInfo& j : jobs) {
    Writer one;
    wire::write_job(one, j);
    if (l.jobs.size() + one.str().size() + 1 > max_bytes) break;
    if (l.listed++ > 0) l.jobs += ',';
    l.jobs += one.str();
  }
  return l;
}

}  // namespace

// As many dead letters as fit in max_list_bytes; the answer says when it was cut, and why.
//
// What one request holds in memory is bounded too, not only its answer: a job's body may be as
// large as --max-job-bytes, and `limit` is up to 10 000. So the jobs are asked for in rounds,
// each a list from the oldest: the first asks for as many as would fill the answer if every body
// were that large; a round whose jobs all fit asks for more, as many as the room left could hold
// at that size. No round holds much more than two answers' worth of jobs, whatever `limit` and
// the bodies; small bodies cost rounds instead (each lists from the start again).
void dead_list(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  Fields f(body, ctx.limits);
  f.only({"topic", "limit"}, "/dead/list");
  auto topic = f.name("topic", true);
  auto limit = f.integer("limit", 1, 10'000);
  if (!f.ok()) return done(bad_request(f.error()));
  const size_t want = static_cast<size_t>(limit.value_or(100));
  const size_t cap = ctx.options.max_list_bytes;
  const size_t largest = std::max<size_t>(ctx.options.max_job_bytes, 1);
  size_t ask = std::min(want, std::max<size_t>(1, cap / largest));
  for (;;) {
    auto jobs = ctx.queue.list_dead(*topic, ask);
    if (!jobs) return done(fail(jobs.status()));
    Listing l = list_within(*jobs, cap);
    const bool cut = l.listed < jobs->size();
    if (!cut && jobs->size() == ask && ask < want) {
      ask = std::min(want, ask + std::max<size_t>(1, (cap - l.jobs.size()) / largest));
      continue;
    }
    Writer w;
    w.begin_object().key("jobs").begin_array();
    if (l.listed > 0) w.raw(l.jobs);
    w.end_array();
    w.key("truncated").value(cut).end_object();
    if (!cut) return done(ok("ok", w.str()));
    return done(ok("only the first " + std::to_string(l.listed) +
                       " dead letters fit in one answer (at most " + std::to_string(cap) +
                       " bytes); requeue or purge those to list the rest",
                   w.str()));
  }
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
