// The Api (see api.h): what the headers decide (the route, the token, the method, draining),
// the body read as the route takes it, the route's function called (routes.h) and its answer
// counted in the metrics; exceptions are answered, never let out.
#include "delayqd/api.h"

#include "delayqd/answers.h"
#include "delayqd/background.h"
#include "delayqd/metrics.h"
#include "delayqd/routes.h"
#include "delayqd/tokens.h"

namespace delayq::http {

namespace {

using Clock = std::chrono::steady_clock;

// /stats and /metrics requests that may wait for the background thread: beyond, 503.
constexpr size_t kMaxBackgroundWaiting = 16;

// Why an Authorization header does not carry `token` as "Bearer <token>", or nullopt if it does.
// The token is compared in constant time over its expected length, so the answer time says
// nothing about how much of a guessed token was right. The scheme's name is case-insensitive
// (RFC 7235).
std::optional<std::string> check_bearer(std::string_view got, const std::string& token) {
  constexpr std::string_view kScheme = "Bearer ";
  if (got.empty()) return "this server needs \"Authorization: Bearer <token>\"";
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  bool scheme = got.size() >= kScheme.size();
  for (size_t i = 0; scheme && i < kScheme.size(); ++i) scheme = lower(got[i]) == lower(kScheme[i]);
  if (!scheme)
    return "the Authorization header lacks the \"Bearer \" prefix: send \"Authorization: Bearer "
           "<token>\", the token as it is in the --token-file";
  got.remove_prefix(kScheme.size());
  unsigned char diff = got.size() != token.size();
  for (size_t i = 0; i < token.size(); ++i)
    diff |= static_cast<unsigned char>(token[i] ^ (i < got.size() ? got[i] : 0));
  if (diff != 0) return "the bearer token is wrong";
  return std::nullopt;
}

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

Route route_at(std::string_view target) {
  const RouteSpec* spec = find_route(path_of(target));
  return spec != nullptr ? spec->route : Route::unknown;
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

std::optional<Response> Api::screen(std::string_view method, std::string_view target,
                                    std::string_view authorization) const {
  const std::string_view path = path_of(target);
  const RouteSpec* spec = find_route(path);
  if (spec == nullptr)
    return fail(404, wire::Refusal::no_route,
                "no route " + std::string(path) + "; see docs/http-api.md for the routes");
  const bool health = spec->route == Route::health;
  // The dashboard's files hold no data: the page asks for the token and sends it itself.
  const bool open = health || spec->route == Route::ui;
  if (!options_.bearer_token.empty() && !open)
    if (std::optional<std::string> why = check_bearer(authorization, options_.bearer_token))
      return fail(401, wire::Refusal::unauthorized, *why);
  if (!method_fits(spec->methods, method)) {
    Response r = fail(405, wire::Refusal::method_not_allowed,
                      std::string(path) + " takes " + method_names(spec->methods) + ", not " +
                          std::string(method));
    r.allow = allow_header(spec->methods);
    return r;
  }
  if (draining_.load())
    return fail(503, wire::Refusal::shutting_down,
                health ? "delayqd is shutting down"
                       : "delayqd is shutting down; retry on another instance or after the "
                         "restart");
  return std::nullopt;
}

void Api::count_refusal(std::string_view target, int status) {
  metrics_->observe(route_at(target), status, Clock::now());
}

void Api::handle(Request request, Done done) {
  const auto start = Clock::now();
  const Route route = route_at(request.target);

  // Counted before draining_ is read, so that a drain that sees in_flight() == 0 knows no
  // request can still reach the queue.
  ++in_flight_;
  Done finish = [this, route, start, done = std::move(done)](Response r) {
    if (draining_.load()) r.close = true;
    metrics_->observe(route, r.status, start);
    done(std::move(r));
  };
  struct Leave {
    std::atomic<size_t>& n;
    ~Leave() { --n; }
  } leave{in_flight_};

  if (std::optional<Response> refused =
          screen(request.method, request.target, request.authorization))
    return finish(std::move(*refused));
  // An exception from a route (bad_alloc, a Queue that throws) is answered, and the server
  // keeps serving; the first answer wins, so a route that answered before it threw is not
  // answered twice.
  Done answer = answer_once(std::move(finish));
  const RouteSpec& spec = *find_route(path_of(request.target));
  guarded(answer, [&] { run(spec, *context_, request, answer); });
}

}  // namespace delayq::http
