// The HTTP API of delayqd without the HTTP: a request (method, target, headers that matter,
// body) goes in, a response (status, content type, body) comes out, and in between the calls to
// the Queue. No sockets and no Beast here, so every route is unit-testable and fuzzable.
//
// The routes are those of ouqiang/delay-queue (/push, /pop, /finish, /delete, /get: POST with a
// JSON body, answers {code, message, data}) plus delayq's extensions. docs/http-api.md is the
// reference; this header is the contract with the server (server.cc). The Api checks what the
// headers decide and reads the body; the routes themselves are in routes.h, one function each.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "delayq/queue.h"
#include "wire/answer.h"
#include "wire/fields.h"

namespace delayq::http {

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // The connection should be closed after this answer (the server is draining).
  bool close = false;
  // For "405 Method Not Allowed": the Allow header.
  std::string allow;
  // Further headers (the dashboard's pages: their security policy).
  std::vector<std::pair<std::string, std::string>> headers;
  // Run by the server when this answer could not be written (the client went away first): gives
  // back what the answer handed out (a /pop's delivery), so that nothing is lost with it.
  std::function<void()> undelivered;
};

struct ApiOptions {
  // When non-empty, every route but GET /health needs "Authorization: Bearer <token>".
  std::string bearer_token;
  // /pop waits this long when the request names no timeout (ouqiang/delay-queue: 180 s), and
  // never longer than max_pop_timeout (a longer request is cut down to it, not refused).
  Duration default_pop_timeout = std::chrono::seconds(180);
  Duration max_pop_timeout = std::chrono::seconds(180);
  // Pops waiting at once; one more is answered 503 at once.
  size_t max_waiting_pops = 1024;
  // Jobs in one batch push.
  size_t max_batch = 1000;
  // How many "latest token per job id" entries the daemon keeps for /finish without a token.
  size_t max_remembered_tokens = size_t{1} << 20;
  // Shown by /health and /metrics: "store" or "redis".
  std::string backend = "store";
  // The queue's own limits (delayqd sets them from the options of the queue it opens): every
  // duration and time a request carries is checked against max_delay before it is converted,
  // and a job body against max_job_bytes, so that the refusal can name delayqd's flag.
  Duration max_delay = std::chrono::hours(24 * 3650);
  size_t max_job_bytes = size_t{1} << 20;
  // The most a /dead/list answer may hold: the jobs that fit are listed, and the answer says it
  // was cut ("truncated": true) and why.
  size_t max_list_bytes = size_t{16} << 20;
  // POST /backup: writes a backup named by the request (one directory name, checked here) and
  // returns the directory written. Set by delayqd for a store started with --backup-dir, which
  // confines backups to that directory; empty: /backup is refused, saying how to enable it.
  std::function<Result<std::string>(const std::string& name)> backup;
  // The most topics with their own delayq_jobs series on /metrics (topic_series.h): the bound
  // on the series a Prometheus server must keep. delayqd --metrics-topics.
  size_t max_metric_topics = 1000;
};

// The routes (/ack is /finish), for metrics and the route table (routes.h).
enum class Route : uint8_t {
  push,
  push_batch,
  pop,
  finish,
  nack,
  touch,
  dead_letter,
  del,
  get,
  reschedule,
  stats,
  dead_list,
  dead_requeue,
  dead_purge,
  backup,
  metrics,
  health,
  pause,
  resume,
  release,
  limits_set,
  limits_clear,
  jobs_list,
  schedules_set,
  schedules_remove,
  schedules_get,
  schedules_list,
  schedules_pause,
  schedules_resume,
  ui,
  unknown,
  count_  // number of routes
};
const char* route_name(Route r) noexcept;

struct RouteSpec;

// What a request's headers decide (Api::screen): the route it names, and whether it may go on
// (the bearer token, the method, draining). Decided once per request, as soon as its headers
// arrive, and carried with it: to the server, which answers a refusal before reading a body; to
// handle(), which does not decide again; and to the metrics, which count the answer under the
// route. Only the Api makes one.
class Screening {
 public:
  Route route() const noexcept { return route_; }
  bool refused() const noexcept { return refusal_.has_value(); }

 private:
  friend class Api;
  Screening() = default;
  const RouteSpec* spec_ = nullptr;  // the route table's entry; nullptr when there is no route
  Route route_ = Route::unknown;
  std::optional<Response> refusal_;  // set when the headers refuse the request (always 404
                                     // without a route)
};

struct Request {
  std::string method;         // "GET", "POST", ...
  std::string target;         // "/push", possibly with a "?query" (ignored)
  std::string authorization;  // the Authorization header, empty if none
  std::string body;
  // Requested by the server when the client has gone (its connection closed while the request
  // was being handled): a waiting /pop is withdrawn.
  std::stop_token gone;
  // The screening the server made of the request's headers; handle() screens a request that
  // comes without one (the route tests, the fuzz target).
  std::optional<Screening> screening;
};

struct RouteContext;
class Background;
class Metrics;
class TokenMemory;

class Api {
 public:
  using Done = std::function<void(Response)>;

  Api(Queue& queue, ApiOptions options);
  ~Api();
  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;

  // Answers one request. `done` runs exactly once: on the calling thread for most routes; for
  // /pop on whichever thread the queue completes the wait on (or the calling thread, when the
  // pop is answered at once); for /stats and /metrics on the Api's background thread
  // (background.h). Never throws for bad input. A request that comes with a screening is not
  // screened again; only the drain is looked at again, as it may have begun while the body was
  // read.
  void handle(Request request, Done done);

  // What the headers alone decide, checked once per request (the server calls it as soon as the
  // headers arrive, before it reads a body or sends "100 Continue"; handle() calls it for a
  // request that comes without a screening): the route exists (404), the bearer token is right
  // (401), the method fits the route (405), the daemon is not draining (503). Counts nothing:
  // the answer is counted when it is given, under the screening's route.
  Screening screen(std::string_view method, std::string_view target,
                   std::string_view authorization) const;
  // The refusal of a request refused on its headers whose body will not be read: counted under
  // its route, and marked to close the connection (the unread body would be taken for the next
  // request). `screening` must be refused.
  Response refuse_unread(Screening screening);
  // How many times screen() has run: once per request (tests/daemon/http_screening_test.cc).
  uint64_t screenings() const noexcept { return screenings_.load(std::memory_order_relaxed); }

  // A JSON error answer in the common shape, for errors the server finds before a request
  // reaches handle() (oversized body, bad HTTP, too many connections). Counted in the metrics.
  Response error(int status, wire::Refusal why, std::string_view message);

  // Shutdown, step 1: from now on every new request is answered 503 ("shutting_down") with
  // `close` set; /stats and /metrics already taken are answered before it returns. Waiting
  // pops are answered when the queue is closed (step 2, by the caller, once in_flight() is 0):
  // they get `data: null`, as if nothing had come.
  void begin_drain();
  bool draining() const noexcept { return draining_.load(); }
  // Requests being handled other than waiting pops.
  size_t in_flight() const noexcept { return in_flight_.load(); }
  size_t waiting_pops() const noexcept { return waiting_pops_.load(); }

  // The server reports its open connections here, for /metrics.
  void connection_opened() noexcept { ++connections_; }
  void connection_closed() noexcept { --connections_; }

 private:
  // The 503 of a request that arrives while draining, or nullopt (screening.cc).
  std::optional<Response> drain_refusal(Route route) const;

  std::atomic<bool> draining_{false};
  std::atomic<size_t> in_flight_{0};
  std::atomic<size_t> waiting_pops_{0};
  std::atomic<int64_t> connections_{0};
  mutable std::atomic<uint64_t> screenings_{0};
  ApiOptions options_;
  wire::InputLimits limits_;
  std::unique_ptr<TokenMemory> tokens_;
  std::unique_ptr<Metrics> metrics_;
  // /stats and /metrics run there (background.h); begin_drain() lets it finish and stops it.
  std::unique_ptr<Background> background_;
  // What the routes work with (routes.h): the queue, and the members above.
  std::unique_ptr<RouteContext> context_;
};

}  // namespace delayq::http
