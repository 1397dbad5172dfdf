// /jobs/list: a page of a topic's jobs in one state (see routes.h, docs/http-api.md).
// {"topic", "state", "limit" (1..1000, default 100), "cursor"} answers
// {"jobs": [...], "cursor": "..." | null}: each job as /get shows it, and the cursor to pass for
// the next page (null on the last one).
#include <algorithm>
#include <string>

#include "common/flow_rules.h"
#include "delayqd/responses.h"
#include "delayqd/routes.h"
#include "wire/jobs.h"

namespace delayq::http::routes {

namespace {

using wire::Fields;
using wire::json::Value;
using wire::json::Writer;

constexpr size_t kDefaultPage = 100;

struct ListRequest {
  std::string topic;
  JobState state = JobState::ready;
  size_t limit = kDefaultPage;
  std::string cursor;
};

// The body, every member checked before the queue is called. Empty when fine, else the refusal.
std::string read_request(const RouteContext& ctx, const Value& body, ListRequest& r) {
  Fields f(body, ctx.limits);
  f.only({"topic", "state", "limit", "cursor"}, "/jobs/list");
  auto topic = f.name("topic", true);
  auto state = f.string("state", true);
  auto limit = f.integer("limit", 1, static_cast<int64_t>(rules::kMaxListLimit));
  auto cursor = f.string("cursor");
  if (!f.ok()) return f.error();
  const auto parsed = rules::parse_state(*state);
  if (!parsed)
    return "field \"state\" must be \"delayed\", \"ready\", \"reserved\" or \"dead\", not " +
           wire::quoted(*state);
  r.topic = std::move(*topic);
  r.state = *parsed;
  if (limit) r.limit = static_cast<size_t>(*limit);
  if (cursor) r.cursor = std::move(*cursor);
  return {};
}

// The page as it grows, within max_list_bytes of answer.
struct PageListing {
  std::string jobs;  // the array's elements, comma-separated
  size_t listed = 0;
};

// Appends the jobs of `page` that fit in `cap` bytes (all of them with `force`); how many did.
size_t append_within(PageListing& l, const JobPage& page, size_t cap, bool force) {
  size_t fit = 0;
  for (const JobInfo& j : page.jobs) {
    Writer one;
    wire::write_job(one, j);
    if (!force && l.jobs.size() + one.str().size() + 1 > cap) break;
    if (l.listed++ > 0) l.jobs += ',';
    l.jobs += one.str();
    ++fit;
  }
  return fit;
}

}  // namespace

// What one request holds is bounded, not only its answer (a job's body may be --max-job-bytes,
// and a page up to 1000 jobs): the page is asked for in rounds, each from the cursor the last
// one ended at, each for as many jobs as the room left could hold were every body that large.
// When a round's jobs do not all fit, it is asked again for only those that did, so that the
// cursor answered continues right after the last job shown; the message says the page was cut.
void jobs_list(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  ListRequest r;
  if (std::string why = read_request(ctx, body, r); !why.empty()) return done(bad_request(why));
  const size_t cap = ctx.options.max_list_bytes;
  const size_t largest = std::max<size_t>(ctx.options.max_job_bytes, 1);
  PageListing l;
  std::string cursor = r.cursor;
  bool cut = false;
  while (l.listed < r.limit) {
    const size_t room = cap > l.jobs.size() ? (cap - l.jobs.size()) / largest : 0;
    const size_t ask = std::min(r.limit - l.listed, std::max<size_t>(room, 1));
    auto page = ctx.queue.list_jobs(r.topic, r.state, ask, cursor);
    if (!page) return done(fail(page.status()));
    const size_t before_listed = l.listed, before_bytes = l.jobs.size();
    const size_t fit = append_within(l, *page, cap, false);
    if (fit < page->jobs.size()) {
      // Not all fit: the round again, for those that did (at least one job per page, so that a
      // caller always moves on).
      cut = true;
      l.jobs.resize(before_bytes);
      l.listed = before_listed;
      // None fit after earlier rounds: the page ends where the last round did.
      if (fit == 0 && l.listed > 0) break;
      auto fewer = ctx.queue.list_jobs(r.topic, r.state, std::max<size_t>(fit, 1), cursor);
      if (!fewer) return done(fail(fewer.status()));
      append_within(l, *fewer, cap, true);
      cursor = fewer->cursor;
      break;
    }
    cursor = page->cursor;
    if (cursor.empty() || page->jobs.size() < ask) break;
  }
  Writer w;
  w.begin_object().key("jobs").begin_array();
  if (l.listed > 0) w.raw(l.jobs);
  w.end_array().key("cursor");
  if (cursor.empty())
    w.null();
  else
    w.value(cursor);
  w.end_object();
  if (!cut) return done(ok("ok", w.str()));
  done(ok("this page stops after " + std::to_string(l.listed) + " jobs, what fits in one answer (" +
              std::to_string(cap) + " bytes); the cursor continues after the last one",
          w.str()));
}

}  // namespace delayq::http::routes
