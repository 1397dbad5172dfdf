// /push (one job, or a batch as an array), /push_batch, /get, /delete, /reschedule (see
// routes.h, docs/http-api.md).
#include <optional>
#include <string>
#include <vector>

#include "delayq/clock.h"
#include "delayqd/responses.h"
#include "delayqd/routes.h"
#include "wire/jobs.h"
#include "wire/spec.h"

namespace delayq::http::routes {

namespace {

using wire::Fields;
using wire::json::Value;
using wire::json::Writer;

// The jobs of a batch: the array itself (/push with an array) or {"jobs": [...]}; nullptr with
// `done` called when the body is neither.
const Value* batch_jobs(const RouteContext& ctx, const Value& body, Done& done) {
  if (body.is_array()) return &body;
  Fields f(body, ctx.limits);
  f.only({"jobs"}, "/push_batch");
  const Value* jobs = f.ok() ? f.get("jobs") : nullptr;
  if (!f.ok())
    done(bad_request(f.error()));
  else if (jobs == nullptr || !jobs->is_array())
    done(bad_request("a batch push takes {\"jobs\": [...]} or an array"));
  return jobs != nullptr && jobs->is_array() ? jobs : nullptr;
}

// The outcome of each job of a batch, in the order of the batch: the queue's answer for those
// it was given, the reason for those refused before.
std::vector<Status> push_each(RouteContext& ctx, const std::vector<Value>& jobs,
                              std::vector<std::string>& ids) {
  std::vector<Status> outcome(jobs.size());
  std::vector<JobSpec> specs;
  std::vector<size_t> index;  // specs[k] is job index[k]
  for (size_t i = 0; i < jobs.size(); ++i) {
    JobSpec spec;
    outcome[i] = wire::read_spec(jobs[i], spec, ctx.limits);
    if (!outcome[i].ok()) continue;
    specs.push_back(std::move(spec));
    index.push_back(i);
    outcome[i] = Status(Errc::io_error, "no result for this job");
  }
  std::vector<Result<std::string>> results = ctx.queue.push_batch(std::move(specs));
  ids.assign(jobs.size(), {});
  for (size_t k = 0; k < results.size() && k < index.size(); ++k) {
    outcome[index[k]] = results[k].status();
    if (results[k].ok()) ids[index[k]] = std::move(*results[k]);
  }
  return outcome;
}

}  // namespace

void push(RouteContext& ctx, const Request& request, const Value& body, Done& done) {
  if (body.is_array()) return push_batch(ctx, request, body, done);
  JobSpec spec;
  if (Status s = wire::read_spec(body, spec, ctx.limits); !s.ok())
    return done(bad_request(s.message()));
  auto id = ctx.queue.push(std::move(spec));
  if (!id) return done(fail(id.status()));
  Writer w;
  w.begin_object().key("id").value(*id).end_object();
  done(ok("pushed", w.str()));
}

// Not all-or-nothing: each job is pushed or refused on its own, and the answer says which.
void push_batch(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  const Value* jobs = batch_jobs(ctx, body, done);
  if (jobs == nullptr) return;
  const size_t n = jobs->as_array().size();
  if (n > ctx.options.max_batch)
    return done(fail(413, wire::Refusal::too_large,
                     "at most " + std::to_string(ctx.options.max_batch) + " jobs in one batch"));
  std::vector<std::string> ids;
  const std::vector<Status> outcome = push_each(ctx, jobs->as_array(), ids);
  Writer w;
  size_t pushed = 0;
  w.begin_object().key("results").begin_array();
  for (size_t i = 0; i < n; ++i) {
    const Status& s = outcome[i];
    w.begin_object().key("code").value(s.ok() ? 0 : 1);
    if (s.ok()) {
      w.key("id").value(ids[i]);
      ++pushed;
    } else {
      w.key("error").value(errc_name(s)).key("message").value(s.message());
    }
    w.end_object();
  }
  w.end_array().key("pushed").value(static_cast<uint64_t>(pushed));
  w.key("refused").value(static_cast<uint64_t>(n - pushed)).end_object();
  // code 1 tells a client that only looks at "code" that something needs its attention; data
  // says what.
  const std::string message = std::to_string(pushed) + " of " + std::to_string(n) + " jobs pushed";
  done(Response{200, "application/json", wire::answer_json(pushed == n ? 0 : 1, message, w.str())});
}

void get(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  auto id = only_name(ctx, body, "id", "/get", done);
  if (!id) return;
  auto info = ctx.queue.get(*id);
  if (info.is(Errc::not_found)) return done(ok("no such job"));  // data: null, as ouqiang
  if (!info) return done(fail(info.status()));
  Writer w;
  wire::write_job(w, *info);
  done(ok("ok", w.str()));
}

// ouqiang/delay-queue answers success for an id it does not have: deleting is idempotent.
void del(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  auto id = only_name(ctx, body, "id", "/delete", done);
  if (!id) return;
  Status s = ctx.queue.cancel(*id);
  ctx.tokens.forget(*id);
  if (!s.ok() && !s.is(Errc::not_found)) return done(fail(s));
  Writer w;
  w.begin_object().key("deleted").value(s.ok()).end_object();
  done(ok(s.ok() ? "deleted" : "no such job: already finished or deleted", w.str()));
}

void reschedule(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  Fields f(body, ctx.limits);
  f.only({"id", "delay", "delay_ms", "due_at_ms", "due_at_ns"}, "/reschedule");
  auto id = f.name("id", true);
  const int times = f.has("delay") + f.has("delay_ms") + f.has("due_at_ms") + f.has("due_at_ns");
  if (times != 1) f.fail_with("give exactly one of \"delay\", \"delay_ms\" and \"due_at_ms\"");
  const TimePoint now = SystemClock::instance().now();
  auto delay = f.duration("delay", "delay_ms", "use 0 for 'now'");
  auto due_at = f.has("due_at_ns") ? f.time_ns("due_at_ns", now) : f.time_ms("due_at_ms", now);
  if (!f.ok()) return done(bad_request(f.error()));
  // delay <= max_delay (at most 100 years), so the sum stays far inside a TimePoint.
  Status s = ctx.queue.reschedule(*id, delay ? now + *delay : *due_at);
  if (!s.ok()) return done(fail(s));
  done(ok("rescheduled"));
}

}  // namespace delayq::http::routes
