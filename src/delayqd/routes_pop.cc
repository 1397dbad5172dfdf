// /pop: the long poll of ouqiang/delay-queue (see routes.h, docs/http-api.md). The wait is the
// queue's reserve_async; a client that leaves while it waits withdraws it (Request::gone), and a
// delivery whose answer cannot be written is given back uncounted (Response::undelivered).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "delayqd/responses.h"
#include "delayqd/log.h"
#include "delayqd/routes.h"
#include "wire/jobs.h"

namespace delayq::http::routes {

namespace {

using wire::Fields;
using wire::trim;
using wire::json::Value;

// The status counted for a pop whose client left before its answer (nginx's "client closed
// request"); never sent, since there is no one to send it to.
constexpr int kClientGone = 499;

// "topic": one, or several separated by commas (ouqiang/delay-queue); or "topics": an array.
std::vector<std::string> read_topics(Fields& f) {
  std::vector<std::string> topics;
  if (f.has("topic") && f.has("topics")) f.fail_with("give \"topic\" or \"topics\", not both");
  if (auto t = f.string("topic")) {
    std::string_view rest = *t;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string_view part = trim(rest.substr(0, comma));
      if (!part.empty()) topics.emplace_back(part);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  } else if (const Value* list = f.get("topics"); list != nullptr && !list->is_array()) {
    f.fail_with("field \"topics\" must be an array of strings");
  } else if (list != nullptr) {
    for (const Value& e : list->as_array()) {
      if (!e.is_string() || trim(e.as_string()).empty()) {
        f.fail_with("field \"topics\" must hold non-empty strings");
        break;
      }
      topics.emplace_back(trim(e.as_string()));
    }
  }
  if (f.ok() && topics.empty()) f.fail_with("missing field \"topic\"");
  if (topics.size() > 64) f.fail_with("at most 64 topics in one pop");
  return topics;
}

// The answer to a pop that got `d`, which gives it back if it cannot be written.
Response deliver(RouteContext& ctx, const Delivery& d) {
  ctx.tokens.remember(d.token);
  wire::json::Writer w;
  wire::write_delivery(w, d);
  Response r = ok("ok", w.str());
  // The client left as the job came, so the answer was never written: the delivery goes back,
  // its attempt uncounted. (Run by the server on its own thread: the queue's thread, which
  // completed the pop, must not wait for the journal.)
  r.undelivered = [&queue = ctx.queue, &tokens = ctx.tokens, token = d.token] {
    tokens.forget(token.id);
    if (Status s = queue.release(token); !s.ok() && !s.is(Errc::stale_token))
      log(LogLevel::error, "could not give back job '{}': {}", token.id, s.to_string());
  };
  return r;
}

// The answer to a pop whose wait ended with `r`.
Response outcome(RouteContext& ctx, const Result<Delivery>& r) {
  if (r.ok()) return deliver(ctx, *r);
  // Withdrawn: the client left while the pop waited (nginx's 499).
  if (r.is(Errc::cancelled))
    return fail(kClientGone, wire::Refusal::client_closed, r.status().message());
  // Nothing came in time: ouqiang/delay-queue answers success with null data, and so do we when
  // the daemon shuts down (the client polls again, and finds the next instance).
  if (r.is(Errc::timeout)) return ok("no job ready");
  if (r.is(Errc::closed) && ctx.draining.load())
    return ok("no job ready: delayqd is shutting down");
  return fail(r.status());
}

}  // namespace

void pop(RouteContext& ctx, const Request& request, const Value& body, Done& done) {
  Fields f(body, ctx.limits);
  f.only({"topic", "topics", "timeout", "timeout_ms"}, "/pop");
  std::vector<std::string> topics = read_topics(f);
  auto timeout = f.duration("timeout", "timeout_ms", "use 0 to answer at once");
  if (!f.ok()) return done(bad_request(f.error()));
  const Duration wait =
      std::min(timeout.value_or(ctx.options.default_pop_timeout), ctx.options.max_pop_timeout);

  if (++ctx.waiting_pops > ctx.options.max_waiting_pops) {
    --ctx.waiting_pops;
    return done(fail(503, wire::Refusal::overloaded,
                     "too many pops waiting (" + std::to_string(ctx.options.max_waiting_pops) +
                         "); retry later"));
  }
  // Counted once: by the answer, or by a reserve_async that throws instead of answering.
  auto waiting = std::make_shared<std::atomic<bool>>(true);
  try {
    ctx.queue.reserve_async(
        std::move(topics), wait,
        [ctx, waiting, done](Result<Delivery> r) mutable {
          if (waiting->exchange(false)) --ctx.waiting_pops;
          guarded(done, [&] { done(outcome(ctx, r)); });
        },
        request.gone);
  } catch (...) {
    if (waiting->exchange(false)) --ctx.waiting_pops;
    throw;
  }
}

}  // namespace delayq::http::routes
