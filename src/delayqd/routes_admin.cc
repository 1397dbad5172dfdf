// /stats, /backup, /metrics, /health: the queue as a whole, and the daemon (see routes.h,
// docs/http-api.md, docs/operations.md).
#include <fmt/format.h>

#include <cctype>
#include <ctime>
#include <functional>
#include <string>
#include <utility>

#include "delayq/clock.h"
#include "delayqd/responses.h"
#include "delayqd/routes.h"
#include "delayqd/schedule_metrics.h"
#include "wire/stats.h"
#include "wire/version.h"

namespace delayq::http::routes {

namespace {

using wire::Fields;
using wire::json::Value;
using wire::json::Writer;

// Why `name` cannot name a backup directory, or "" when it can: one path component of letters,
// digits, '.', '-' and '_', not starting with '.' (no "..", no hidden names), at most 128 bytes.
std::string backup_name_problem(std::string_view name) {
  if (name.empty() || name.size() > 128) return "must be 1 to 128 characters long";
  for (const char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_')
      return "may hold only letters, digits, '.', '-' and '_' (one directory name, not a path)";
  if (name.front() == '.') return "must not start with '.'";
  return {};
}

// "20261121T190823.123Z": a UTC time for a generated backup name.
std::string compact_utc_time(TimePoint t) {
  const auto ms = std::chrono::floor<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

// Why delayqd takes no backups: a Redis queue is Redis's to back up; a store needs --backup-dir.
Response backups_off(const ApiOptions& options) {
  if (options.backend == "redis")
    return fail(501, wire::Refusal::not_supported,
                "a Redis queue is backed up by Redis itself (BGSAVE, or redis-cli --rdb FILE), "
                "not by delayqd");
  return fail(403, wire::Refusal::forbidden,
              "backups through delayqd are off: it writes them only under the directory given by "
              "--backup-dir DIR, and was started without one");
}

// Runs `work`, which answers through the `done` it is given, on the background thread
// (background.h), in flight until it has answered; when too many wait already, or delayqd is
// draining, answers 503 instead.
void in_background(RouteContext& ctx, Done& done, std::function<void(const Done&)> work) {
  ++ctx.in_flight;
  auto task = [&in_flight = ctx.in_flight, done, work = std::move(work)]() mutable {
    // Out of flight as the answer is handed over (the queue is not touched after that), so that
    // whoever sees the answer sees the count without it, as with the routes answered at once.
    bool counted = true;
    const Done answer = [&](Response r) {
      if (std::exchange(counted, false)) --in_flight;
      done(std::move(r));
    };
    guarded(answer, [&] { work(answer); });
    if (counted) --in_flight;
  };
  if (ctx.background.post(std::move(task))) return;
  --ctx.in_flight;
  if (ctx.draining.load())
    return done(fail(503, wire::Refusal::shutting_down, "delayqd is shutting down"));
  done(fail(503, wire::Refusal::overloaded,
            "too many /stats and /metrics requests are waiting; retry later"));
}

}  // namespace

// The totals, and a page of the topics: at most `limit` (1000 unless asked, at most 10000), so
// that the answer stays bounded however many topics there are (docs/http-api.md).
void stats(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  Fields f(body, ctx.limits);
  f.only({"limit", "after"}, "/stats");
  auto limit = f.integer("limit", 1, 10'000);
  auto after = f.string("after");
  if (!f.ok()) return done(bad_request(f.error()));
  const size_t most = static_cast<size_t>(limit.value_or(1000));
  in_background(ctx, done, [&ctx, from = after.value_or(""), most](const Done& answer) {
    const wire::TopicPage page{from, most};
    Writer w;
    const wire::PageCut cut = wire::write_stats(w, ctx.queue.stats(),
                                                {{"waiting_pops", ctx.waiting_pops.load()}}, &page);
    if (!cut.truncated) return answer(ok("ok", w.str()));
    answer(ok("only the first " + std::to_string(page.limit) +
                  " topics are listed; ask again with \"after\" set to data.next_after for the "
                  "next ones",
              w.str()));
  });
}

// A backup into the directory delayqd was given (--backup-dir), under the name the request
// gives (or one made of the time): one directory name, so that no request can write anywhere
// else.
void backup(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  Fields f(body, ctx.limits);
  f.only({"name"}, "/backup");
  auto name = f.string("name");
  if (!f.ok()) return done(bad_request(f.error()));
  if (!ctx.options.backup) return done(backups_off(ctx.options));
  if (!name) name = "backup-" + compact_utc_time(SystemClock::instance().now());
  if (std::string why = backup_name_problem(*name); !why.empty())
    return done(bad_request("\"name\" " + why +
                            ": delayqd writes backups only directly under its --backup-dir"));
  auto dir = ctx.options.backup(*name);
  if (!dir) return done(fail(dir.status()));
  Writer w;
  w.begin_object().key("dir").value(*dir).end_object();
  done(ok("backed up", w.str()));
}

void metrics(RouteContext& ctx, const Request&, const Value&, Done& done) {
  in_background(ctx, done, [&ctx](const Done& answer) {
    const Metrics::Gauges gauges{ctx.waiting_pops.load(), ctx.connections.load()};
    std::string text = ctx.metrics.text(ctx.queue.stats(), gauges);
    schedule_metrics(text, ctx.queue, ctx.metrics.max_topics());
    answer(Response{200, "text/plain; version=0.0.4; charset=utf-8", std::move(text)});
  });
}

// The queue's own answer: a store that stopped on a failed write, a closed queue or a Redis
// server that does not answer make this 503, so that a load balancer or systemd acts on it.
void health(RouteContext& ctx, const Request&, const Value&, Done& done) {
  const Status s = ctx.queue.health();
  Writer w;
  w.begin_object().key("status").value(s.ok() ? "ok" : errc_name(s));
  w.key("backend").value(ctx.options.backend).key("version").value(wire::version());
  if (!s.ok()) w.key("reason").value(s.message());
  w.end_object();
  if (s.ok()) return done(ok("ok", w.str()));
  done(fail(503, errc_name(s), "the queue cannot serve: " + s.message(), w.str()));
}

}  // namespace delayq::http::routes
