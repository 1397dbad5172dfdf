// The Api (see api.h): a request, screened once (screening.cc), has its body read as its route
// takes it, the route's function called (routes.h) and its answer counted in the metrics;
// exceptions are answered, never let out.
#include "delayqd/api.h"

#include "delayqd/responses.h"
#include "delayqd/background.h"
#include "delayqd/metrics.h"
#include "delayqd/routes.h"
#include "delayqd/tokens.h"

namespace delayq::http {

namespace {

using Clock = std::chrono::steady_clock;

// /stats and /metrics requests that may wait for the background thread: beyond, 503.
constexpr size_t kMaxBackgroundWaiting = 16;

// `done` made safe to call from a route and from its exception path: the first answer wins.
Api::Done answer_once(Api::Done done) {
  struct Once {
    std::atomic<bool> answered{false};
    Api::Done done;
  };
  auto once = std::make_shared<Once>();
  once->done = std::move(done);
  return [once](Response r) {
    if (!once->answered.exchange(true)) once->done(std::move(r));
  };
}

// Reads the body as `spec` says its route takes it and calls the route.
void run(const RouteSpec& spec, RouteContext& ctx, const Request& request, Done& done) {
  if (spec.body == BodyRule::none) return spec.handler(ctx, request, wire::json::Value(), done);
  const bool empty_ok = spec.body == BodyRule::object_or_empty && wire::trim(request.body).empty();
  Body body = read_body(empty_ok ? std::string_view("{}") : std::string_view(request.body),
                        spec.body == BodyRule::object_or_array);
  if (body.refusal) return done(std::move(*body.refusal));
  spec.handler(ctx, request, body.value, done);
}

}  // namespace

Api::Api(Queue& queue, ApiOptions options)
    : options_(std::move(options)),
      limits_{options_.max_delay, options_.max_job_bytes, "delayqd --max-job-bytes"},
      tokens_(std::make_unique<TokenMemory>(options_.max_remembered_tokens)),
      metrics_(std::make_unique<Metrics>(options_.max_metric_topics)),
      background_(std::make_unique<Background>(kMaxBackgroundWaiting)),
      context_(new RouteContext{queue, options_, limits_, *tokens_, *metrics_, waiting_pops_,
                                draining_, connections_, *background_, in_flight_}) {}
// The background thread first: what it still runs reads the route context and the metrics.
Api::~Api() { background_->stop(); }

void Api::begin_drain() {
  draining_.store(true);
  background_->stop();
}

Response Api::error(int status, wire::Refusal why, std::string_view message) {
  Response r = fail(status, why, message);
  metrics_->observe(Route::unknown, status, Clock::now());
  r.close = true;
  return r;
}

void Api::handle(Request request, Done done) {
  const auto start = Clock::now();
  // Counted before draining_ is read, so that a drain that sees in_flight() == 0 knows no
  // request can still reach the queue.
  ++in_flight_;
  struct Leave {
    std::atomic<size_t>& n;
    ~Leave() { --n; }
  } leave{in_flight_};
  // Screened by the server when its headers came, or here; in the first case the drain may
  // have begun since.
  const bool screened = request.screening.has_value();
  Screening screening = screened ? std::move(*request.screening)
                                 : screen(request.method, request.target, request.authorization);
  if (screened && !screening.refusal_) screening.refusal_ = drain_refusal(screening.route_);

  Done finish = [this, route = screening.route_, start, done = std::move(done)](Response r) {
    if (draining_.load()) r.close = true;
    metrics_->observe(route, r.status, start);
    done(std::move(r));
  };
  if (screening.refusal_) return finish(std::move(*screening.refusal_));
  // An exception from a route (bad_alloc, a Queue that throws) is answered, and the server
  // keeps serving; the first answer wins, so a route that answered before it threw is not
  // answered twice.
  Done answer = answer_once(std::move(finish));
  const RouteSpec& spec = *screening.spec_;
  guarded(answer, [&] { run(spec, *context_, request, answer); });
}

}  // namespace delayq::http
