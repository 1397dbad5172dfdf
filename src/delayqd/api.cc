// The routes of delayqd: JSON request -> Queue call -> JSON answer (see api.h, docs/http-api.md).
// Reading a request's members is in wire/fields.cc. Long, because every route's answer is written
// here, next to the metrics it feeds.
#include "delayqd/api.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <new>

#include "common/format.h"

#include "delayqd/topic_series.h"
#include "wire/fields.h"
#include "wire/json.h"
#include "wire/answer.h"
#include "wire/jobs.h"
#include "wire/spec.h"
#include "wire/stats.h"

namespace delayq::http {

namespace {

using Clock = std::chrono::steady_clock;

// The status counted for a pop whose client left before its answer (nginx's "client closed
// request"); never sent, since there is no one to send it to.
constexpr int kClientGone = 499;
namespace json = wire::json;
using json::Value;
using json::Writer;
using wire::Fields;
using wire::trim;

struct RouteEntry {
  std::string_view path;
  Route route;
};
constexpr RouteEntry kRoutes[] = {
    {"/push", Route::push},
    {"/push_batch", Route::push_batch},
    {"/pop", Route::pop},
    {"/finish", Route::finish},
    {"/ack", Route::finish},
    {"/nack", Route::nack},
    {"/touch", Route::touch},
    {"/dead_letter", Route::dead_letter},
    {"/delete", Route::del},
    {"/get", Route::get},
    {"/reschedule", Route::reschedule},
    {"/stats", Route::stats},
    {"/dead/list", Route::dead_list},
    {"/dead/requeue", Route::dead_requeue},
    {"/dead/purge", Route::dead_purge},
    {"/backup", Route::backup},
    {"/metrics", Route::metrics},
    {"/health", Route::health},
};

Route find_route(std::string_view path) {
  for (const auto& e : kRoutes)
    if (e.path == path) return e.route;
  return Route::unknown;
}

// The target without its "?query".
std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

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

// {"code":0,"message":...,"data":<data>}
Response ok(std::string_view message, std::string_view data = "null") {
  return Response{200, "application/json", wire::answer_json(0, message, data)};
}

// {"code":1,"message":...,"error":<name>,"data":null}. Every failure has code 1, as in
// ouqiang/delay-queue; "error" names the kind for programs, "message" explains it for people.
Response fail(int status, std::string_view error, std::string_view message,
              std::string_view data = "null") {
  return Response{status, "application/json", wire::refusal_json(error, message, data)};
}

const char* errc_name(const Status& s) { return to_string(static_cast<Errc>(s.code().value())); }

int http_status(const Status& s) {
  switch (static_cast<Errc>(s.code().value())) {
    case Errc::invalid_argument: return 400;
    case Errc::not_found: return 404;
    case Errc::duplicate_id:
    case Errc::stale_token:
    case Errc::invalid_state: return 409;
    case Errc::timeout:
    case Errc::closed:
    case Errc::unavailable: return 503;
    default: return 500;
  }
}

Response fail(const Status& s) { return fail(http_status(s), errc_name(s), s.message()); }

Response bad_request(std::string_view message) { return fail(400, "bad_request", message); }
Response bad_request(const Fields& f) { return bad_request(f.error()); }

// A request body that must be a JSON object (or an array, where `array_ok`): the parsed value, or
// the 400 answer that says what is wrong with it.
struct Body {
  Value value;
  std::optional<Response> refusal;
};
Body read_body(std::string_view text, bool array_ok) {
  constexpr std::string_view kExample = "e.g. {\"topic\":\"order\"}";
  const std::string_view t = trim(text);
  if (t.empty())
    return {{}, fail(400, "bad_json", "the body is empty; it must be a JSON object, " +
                                          std::string(kExample))};
  Result<Value> parsed = json::parse(text);
  if (!parsed && t.front() != '{' && t.front() != '[' && t.front() != '"') {
    // Not JSON at all: most likely a form (topic=order&delay=10) or plain text.
    const std::string start(t.substr(0, 24));
    return {{}, fail(400, "bad_json",
                     "the body must be a JSON object, " + std::string(kExample) +
                         "; this one is not JSON (it starts with \"" + start +
                         "\"; a form-encoded body? send the fields as JSON)")};
  }
  if (!parsed) return {{}, fail(400, "bad_json", parsed.status().message())};
  if (!parsed->is_object() && !(array_ok && parsed->is_array()))
    return {{}, bad_request("the body must be a JSON object, " + std::string(kExample) +
                            ", not " + (parsed->is_array() ? "an " : "a ") +
                            json::to_string(parsed->type()) +
                            (parsed->is_array() ? " (only /push takes an array: a batch)" : ""))};
  return {std::move(*parsed), std::nullopt};
}

// Prometheus label values: backslash, quote and newline escaped, and the text kept valid UTF-8
// (the format requires it): a byte that is not part of valid UTF-8 (a topic stored before topics
// had to be text) is shown as the four characters \xNN, its backslash escaped like any other.
std::string label(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const size_t n = utf8_sequence(s, i);
    if (n == 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += hex;
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.append(s.substr(i, n));
    }
    i += n == 0 ? 1 : n;
  }
  return out;
}

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
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d%02d%02dT%02d%02d%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
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

// Runs `work`, which answers through `done`; an exception it lets out is answered instead of
// reaching the server's threads. Out of memory is 503 (a retry may well succeed), anything else
// 500. Either way the call may or may not have taken effect before the exception.
template <typename Work>
void guarded(const Api::Done& done, Work&& work) noexcept {
  const auto answer = [&](int status, std::string_view error, const std::string& why) {
    try {
      done(fail(status, error,
                "delayqd failed while answering (" + why +
                    "); the request may or may not have taken effect: check (e.g. /get) "
                    "before retrying"));
    } catch (...) {
      // Not even the refusal could be built: nothing more can be done for this request.
    }
  };
  try {
    work();
  } catch (const std::bad_alloc&) {
    answer(503, "overloaded", "out of memory");
  } catch (const std::exception& e) {
    answer(500, "internal_error", e.what());
  } catch (...) {
    answer(500, "internal_error", "an unknown exception");
  }
}

constexpr double kBuckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                               0.25,   0.5,   1,      2.5,   5,    10,   30,    60, 180};
constexpr size_t kNumBuckets = std::size(kBuckets);

}  // namespace

const char* route_name(Route r) noexcept {
  switch (r) {
    case Route::push: return "push";
    case Route::push_batch: return "push_batch";
    case Route::pop: return "pop";
    case Route::finish: return "finish";
    case Route::nack: return "nack";
    case Route::touch: return "touch";
    case Route::dead_letter: return "dead_letter";
    case Route::del: return "delete";
    case Route::get: return "get";
    case Route::reschedule: return "reschedule";
    case Route::stats: return "stats";
    case Route::dead_list: return "dead_list";
    case Route::dead_requeue: return "dead_requeue";
    case Route::dead_purge: return "dead_purge";
    case Route::backup:
      return "backup";
    case Route::metrics: return "metrics";
    case Route::health: return "health";
    case Route::unknown: return "unknown";
    case Route::count_: break;
  }
  return "unknown";
}

struct Api::Metrics {
  explicit Metrics(size_t max_topics) : topics(max_topics) {}
  TopicSeries topics;
  struct Histogram {
    std::array<uint64_t, kNumBuckets> buckets{};  // non-cumulative; summed when rendered
    uint64_t count = 0;
    double sum = 0;
  };
  std::mutex mu;
  std::map<std::pair<Route, int>, uint64_t> requests;
  std::array<Histogram, static_cast<size_t>(Route::count_)> latency;
};

Api::Api(Queue& queue, ApiOptions options)
    : queue_(queue),
      options_(std::move(options)),
      limits_{options_.max_delay, options_.max_job_bytes, "delayqd --max-job-bytes"},
      metrics_(std::make_unique<Metrics>(options_.max_metric_topics)) {}
Api::~Api() = default;

void Api::begin_drain() { draining_.store(true); }

void Api::observe(Route route, int status, Clock::time_point start) {
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::lock_guard lock(metrics_->mu);
  ++metrics_->requests[{route, status}];
  auto& h = metrics_->latency[static_cast<size_t>(route)];
  ++h.count;
  h.sum += seconds;
  for (size_t i = 0; i < kNumBuckets; ++i) {
    if (seconds <= kBuckets[i]) {
      ++h.buckets[i];
      break;
    }
  }
}

Response Api::error(int status, std::string_view error, std::string_view message) {
  Response r = fail(status, error, message);
  observe(Route::unknown, status, Clock::now());
  r.close = true;
  return r;
}

void Api::remember(const Token& token) {
  std::lock_guard lock(tokens_mu_);
  // Bounded: past the cap an arbitrary entry goes. Its job can still be finished with its token
  // (the pop answer carries it), or after its lease with a new pop.
  if (tokens_.size() >= options_.max_remembered_tokens && !tokens_.contains(token.id))
    tokens_.erase(tokens_.begin());
  tokens_[token.id] = token.fence;
}

std::optional<Token> Api::remembered(const std::string& id) {
  std::lock_guard lock(tokens_mu_);
  auto it = tokens_.find(id);
  if (it == tokens_.end()) return std::nullopt;
  return Token{id, it->second};
}

void Api::forget(const std::string& id) {
  std::lock_guard lock(tokens_mu_);
  tokens_.erase(id);
}

std::optional<Response> Api::screen(std::string_view method, std::string_view target,
                                    std::string_view authorization) const {
  const std::string_view path = path_of(target);
  const Route route = find_route(path);
  if (route == Route::unknown)
    return fail(404, "no_route",
                "no route " + std::string(path) + "; see docs/http-api.md for the routes");
  if (!options_.bearer_token.empty() && route != Route::health)
    if (std::optional<std::string> why = check_bearer(authorization, options_.bearer_token))
      return fail(401, "unauthorized", *why);
  const bool get_route = route == Route::metrics || route == Route::health;
  const bool either = route == Route::stats;
  if ((get_route && method != "GET") || (!get_route && !either && method != "POST") ||
      (either && method != "GET" && method != "POST")) {
    Response r = fail(405, "method_not_allowed",
                      std::string(path) + " takes " +
                          (get_route ? "GET"
                           : either  ? "GET or POST"
                                     : "POST") +
                          ", not " + std::string(method));
    r.allow = get_route ? "GET" : either ? "GET, POST" : "POST";
    return r;
  }
  if (draining_.load()) {
    if (route == Route::health) return fail(503, "shutting_down", "delayqd is shutting down");
    return fail(503, "shutting_down",
                "delayqd is shutting down; retry on another "
                "instance or after the restart");
  }
  return std::nullopt;
}

void Api::count_refusal(std::string_view target, int status) {
  observe(find_route(path_of(target)), status, Clock::now());
}

void Api::handle(Request request, Done done) {
  const auto start = Clock::now();
  const Route route = find_route(path_of(request.target));

  // Counted before draining_ is read, so that a drain that sees in_flight() == 0 knows no
  // request can still reach the queue.
  ++in_flight_;
  Done finish = [this, route, start, done = std::move(done)](Response r) {
    if (draining_.load()) r.close = true;
    observe(route, r.status, start);
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
  guarded(answer, [&] {
    if (route == Route::pop) return pop(request, answer, start);
    dispatch(route, request, answer);
  });
}

void Api::pop(const Request& request, Done done, Clock::time_point start) {
  (void)start;
  Body body = read_body(request.body, false);
  if (body.refusal) return done(std::move(*body.refusal));
  Fields f(body.value, limits_);
  f.only({"topic", "topics", "timeout", "timeout_ms"}, "/pop");
  std::vector<std::string> topics;
  if (f.has("topic") && f.has("topics")) f.fail_with("give \"topic\" or \"topics\", not both");
  if (auto t = f.string("topic")) {
    // ouqiang/delay-queue: several topics separated by commas.
    std::string_view rest = *t;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string_view part = trim(rest.substr(0, comma));
      if (!part.empty()) topics.emplace_back(part);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  } else if (const Value* list = f.get("topics")) {
    if (!list->is_array()) f.fail_with("field \"topics\" must be an array of strings");
    else
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
  auto timeout = f.duration("timeout", "timeout_ms", "use 0 to answer at once");
  if (!f.ok()) return done(bad_request(f));
  const Duration wait = std::min(timeout.value_or(options_.default_pop_timeout),
                                 options_.max_pop_timeout);

  if (++waiting_pops_ > options_.max_waiting_pops) {
    --waiting_pops_;
    return done(fail(503, "overloaded",
                     "too many pops waiting (" + std::to_string(options_.max_waiting_pops) +
                         "); retry later"));
  }
  // Counted once: by the answer, or by a reserve_async that throws instead of answering.
  auto waiting = std::make_shared<std::atomic<bool>>(true);
  try {
    queue_.reserve_async(
        std::move(topics), wait,
        [this, waiting, done = std::move(done)](Result<Delivery> r) {
          if (waiting->exchange(false)) --waiting_pops_;
          guarded(done, [&] {
            if (r.ok()) return done(deliver(*r));
            // Withdrawn: the client left while the pop waited (nginx's 499).
            if (r.is(Errc::cancelled))
              return done(fail(kClientGone, "client_closed", r.status().message()));
            // Nothing came in time: ouqiang/delay-queue answers success with null data, and so
            // do we when the daemon shuts down (the client polls again, and finds the next
            // instance).
            if (r.is(Errc::timeout)) return done(ok("no job ready"));
            if (r.is(Errc::closed) && draining_.load())
              return done(ok("no job ready: delayqd is shutting down"));
            done(fail(r.status()));
          });
        },
        request.gone);
  } catch (...) {
    if (waiting->exchange(false)) --waiting_pops_;
    throw;
  }
}

Response Api::deliver(const Delivery& d) {
  remember(d.token);
  Writer w;
  wire::write_delivery(w, d);
  Response r = ok("ok", w.str());
  // The client left as the job came, so the answer was never written: the delivery goes back,
  // its attempt uncounted. (Run by the server on its own thread: the queue's thread, which
  // completed the pop, must not wait for the journal.)
  r.undelivered = [this, token = d.token] {
    forget(token.id);
    if (Status s = queue_.release(token); !s.ok() && !s.is(Errc::stale_token))
      std::fprintf(stderr, "delayqd: could not give back job '%s': %s\n", token.id.c_str(),
                   s.to_string().c_str());
  };
  return r;
}

void Api::health(Done& done) {
  // The queue's own answer: a store that stopped on a failed write, a closed queue or a Redis
  // server that does not answer make this 503, so that a load balancer or systemd acts on it.
  const Status s = queue_.health();
  Writer w;
  w.begin_object().key("status").value(s.ok() ? "ok" : errc_name(s));
  w.key("backend").value(options_.backend);
  if (!s.ok()) w.key("reason").value(s.message());
  w.end_object();
  if (s.ok()) return done(ok("ok", w.str()));
  done(fail(503, errc_name(s), "the queue cannot serve: " + s.message(), w.str()));
}

void Api::push_batch(const Value& body, Done& done) {
  const Value* jobs = body.is_array() ? &body : nullptr;
  if (jobs == nullptr) {
    Fields f(body, limits_);
    f.only({"jobs"}, "/push_batch");
    if (!f.ok()) return done(bad_request(f));
    jobs = f.get("jobs");
  }
  if (jobs == nullptr || !jobs->is_array())
    return done(bad_request("a batch push takes {\"jobs\": [...]} or an array"));
  if (jobs->as_array().size() > options_.max_batch)
    return done(fail(413, "too_large", "at most " + std::to_string(options_.max_batch) +
                                           " jobs in one batch"));
  const size_t n = jobs->as_array().size();
  std::vector<std::optional<Status>> refused(n);
  std::vector<JobSpec> specs;
  std::vector<size_t> index;  // specs[k] is job index[k]
  for (size_t i = 0; i < n; ++i) {
    JobSpec spec;
    if (Status s = wire::read_spec(jobs->as_array()[i], spec, limits_); !s.ok()) {
      refused[i] = s;
      continue;
    }
    specs.push_back(std::move(spec));
    index.push_back(i);
  }
  std::vector<Result<std::string>> results = queue_.push_batch(std::move(specs));
  std::vector<const Result<std::string>*> by_job(n, nullptr);
  for (size_t k = 0; k < results.size() && k < index.size(); ++k) by_job[index[k]] = &results[k];
  Writer w;
  size_t pushed = 0;
  w.begin_object().key("results").begin_array();
  for (size_t i = 0; i < n; ++i) {
    w.begin_object();
    const Status s = refused[i] ? *refused[i]
                     : by_job[i] ? by_job[i]->status()
                                 : Status(Errc::io_error, "no result for this job");
    if (s.ok()) {
      ++pushed;
      w.key("code").value(0).key("id").value(by_job[i]->value());
    } else {
      w.key("code").value(1).key("error").value(errc_name(s)).key("message").value(s.message());
    }
    w.end_object();
  }
  w.end_array().key("pushed").value(static_cast<uint64_t>(pushed));
  w.key("refused").value(static_cast<uint64_t>(n - pushed)).end_object();
  // Not all-or-nothing: the request was fine, some jobs were not. code 1 tells a client that only
  // looks at "code" that something needs its attention; data says what.
  const std::string message = std::to_string(pushed) + " of " + std::to_string(n) + " jobs pushed";
  done(Response{200, "application/json", wire::answer_json(pushed == n ? 0 : 1, message, w.str())});
}

// ouqiang/delay-queue's /finish names only the job; delayqd uses the latest delivery of it that
// it handed out. Without one: finish removes a reserved job (the daemon was restarted since its
// pop) and succeeds for a job that is gone, as ouqiang's finish does; the other routes say why
// they cannot act. Returns the token, or nothing when `done` has been called.
std::optional<Token> Api::implicit_token(Route route, const std::string& id, Done& done) {
  if (auto token = remembered(id)) return token;
  auto info = queue_.get(id);
  if (info.is(Errc::not_found)) {
    if (route == Route::finish) done(ok("no such job: already finished or deleted"));
    else done(fail(info.status()));
    return std::nullopt;
  }
  if (!info) {
    done(fail(info.status()));
    return std::nullopt;
  }
  if (info->state != JobState::reserved) {
    done(fail(409, "invalid_state",
              "job '" + id + "' is " + to_string(info->state) + ", not reserved: nothing to " +
                  (route == Route::dead_letter ? "dead-letter" : route_name(route)) + (route == Route::finish ? " (use /delete to remove it)" : "")));
    return std::nullopt;
  }
  if (route == Route::finish) {
    // Reserved, by a delivery this daemon does not remember: finishing means the job is done.
    Status s = queue_.cancel(id);
    done(!s.ok() && !s.is(Errc::not_found) ? fail(s) : ok("finished"));
    return std::nullopt;
  }
  done(fail(409, "stale_token",
            "no delivery of job '" + id +
                "' handed out by this daemon is known (was it restarted since the pop?); pass "
                "the \"token\" from /pop"));
  return std::nullopt;
}

// /finish (/ack), /nack, /touch, /dead_letter: by token, or by id for the latest delivery.
void Api::settle(Route route, Fields& f, Done& done) {
  if (route == Route::nack) f.only({"token", "id", "delay", "delay_ms"}, "/nack");
  else f.only({"token", "id"}, std::string("/") + route_name(route));
  auto token_text = f.string("token");
  auto id = f.name("id", false);
  std::optional<Duration> delay;
  if (route == Route::nack) delay = f.duration("delay", "delay_ms", "use 0 to retry at once");
  if (!f.ok()) return done(bad_request(f));
  if (!token_text && (!id || id->empty()))
    return done(bad_request("missing field \"id\" (or \"token\")"));
  std::optional<Token> token;
  if (token_text) {
    auto t = Token::parse(*token_text);
    if (!t) return done(bad_request(t.status().message()));
    if (id && !id->empty() && *id != t->id)
      return done(bad_request("the token belongs to job '" + t->id + "', not to '" + *id + "'"));
    token = std::move(*t);
  } else {
    token = implicit_token(route, *id, done);
    if (!token) return;
  }
  const bool implicit = !token_text;
  if (route == Route::touch) {
    auto deadline = queue_.touch(*token);
    if (!deadline) return done(fail(deadline.status()));
    Writer w;
    w.begin_object().key("lease_deadline_ms").value(wire::to_unix_ms(*deadline)).end_object();
    return done(ok("touched", w.str()));
  }
  Status s = route == Route::finish ? queue_.ack(*token)
             : route == Route::nack ? queue_.nack(*token, delay)
                                    : queue_.dead_letter(*token);
  if (s.ok() || s.is(Errc::not_found)) forget(token->id);
  if (s.is(Errc::not_found) && implicit && route == Route::finish)
    return done(ok("no such job: already finished or deleted"));
  if (!s.ok()) return done(fail(s));
  return done(ok(route == Route::finish ? "finished"
                 : route == Route::nack ? "nacked"
                                        : "dead-lettered"));
}

// The dead letters of a topic, as many as fit in max_list_bytes.
void Api::dead_list(Fields& f, Done& done) {
  f.only({"topic", "limit"}, "/dead/list");
  auto topic = f.name("topic", true);
  auto limit = f.integer("limit", 1, 10'000);
  if (!f.ok()) return done(bad_request(f));
  auto jobs = queue_.list_dead(*topic, static_cast<size_t>(limit.value_or(100)));
  if (!jobs) return done(fail(jobs.status()));
  Writer w;
  w.begin_object().key("jobs").begin_array();
  size_t listed = 0;
  for (const JobInfo& j : *jobs) {
    Writer one;
    wire::write_job(one, j);
    if (w.str().size() + one.str().size() > options_.max_list_bytes) break;
    w.raw(one.str());
    ++listed;
  }
  w.end_array();
  const bool cut = listed < jobs->size();
  w.key("truncated").value(cut).end_object();
  if (!cut) return done(ok("ok", w.str()));
  done(ok("only the first " + std::to_string(listed) + " of the " + std::to_string(jobs->size()) +
              " dead letters asked for fit in one answer (at most " +
              std::to_string(options_.max_list_bytes) +
              " bytes); requeue or purge those to list the rest",
          w.str()));
}

// A backup into the directory delayqd was given (--backup-dir), under the name the request
// gives (or one made of the time): one directory name, so that no request can write anywhere
// else.
void Api::backup(Fields& f, Done& done) {
  f.only({"name"}, "/backup");
  auto name = f.string("name");
  if (!f.ok()) return done(bad_request(f));
  if (!options_.backup) {
    if (options_.backend == "redis")
      return done(fail(501, "not_supported",
                       "a Redis queue is backed up by Redis itself (BGSAVE, or redis-cli --rdb "
                       "FILE), not by delayqd"));
    return done(fail(403, "forbidden",
                     "backups through delayqd are off: it writes them only under the directory "
                     "given by --backup-dir DIR, and was started without one"));
  }
  if (!name) name = "backup-" + compact_utc_time(SystemClock::instance().now());
  if (std::string why = backup_name_problem(*name); !why.empty())
    return done(bad_request("\"name\" " + why +
                            ": delayqd writes backups only directly under its --backup-dir"));
  auto dir = options_.backup(*name);
  if (!dir) return done(fail(dir.status()));
  Writer w;
  w.begin_object().key("dir").value(*dir).end_object();
  done(ok("backed up", w.str()));
}

void Api::dispatch(Route route, const Request& request, Done& done) {
  if (route == Route::health) return health(done);
  if (route == Route::metrics) {
    Response r{200, "text/plain; version=0.0.4; charset=utf-8", metrics_text()};
    return done(std::move(r));
  }

  const bool empty_ok =
      (route == Route::stats || route == Route::backup) && trim(request.body).empty();
  Body body = read_body(empty_ok ? std::string_view("{}") : std::string_view(request.body),
                        route == Route::push);
  if (body.refusal) return done(std::move(*body.refusal));
  // /push with an array body: a batch.
  if (route == Route::push && body.value.is_array()) route = Route::push_batch;
  if (route == Route::push_batch) return push_batch(body.value, done);
  Fields f(body.value, limits_);

  switch (route) {
    case Route::push: {
      JobSpec spec;
      if (Status s = wire::read_spec(body.value, spec, limits_); !s.ok())
        return done(bad_request(s.message()));
      auto id = queue_.push(std::move(spec));
      if (!id) return done(fail(id.status()));
      Writer w;
      w.begin_object().key("id").value(*id).end_object();
      return done(ok("pushed", w.str()));
    }

    case Route::finish:
    case Route::nack:
    case Route::touch:
    case Route::dead_letter:
      return settle(route, f, done);

    case Route::del: {
      f.only({"id"}, "/delete");
      auto id = f.name("id", true);
      if (!f.ok()) return done(bad_request(f));
      Status s = queue_.cancel(*id);
      forget(*id);
      // ouqiang/delay-queue answers success for an id it does not have: deleting is idempotent.
      if (s.is(Errc::not_found))
        return done(ok("no such job: already finished or deleted", "{\"deleted\":false}"));
      if (!s.ok()) return done(fail(s));
      return done(ok("deleted", "{\"deleted\":true}"));
    }

    case Route::get: {
      f.only({"id"}, "/get");
      auto id = f.name("id", true);
      if (!f.ok()) return done(bad_request(f));
      auto info = queue_.get(*id);
      if (info.is(Errc::not_found)) return done(ok("no such job"));  // data: null, as ouqiang
      if (!info) return done(fail(info.status()));
      Writer w;
      wire::write_job(w, *info);
      return done(ok("ok", w.str()));
    }

    case Route::reschedule: {
      f.only({"id", "delay", "delay_ms", "due_at_ms"}, "/reschedule");
      auto id = f.name("id", true);
      const int times = f.has("delay") + f.has("delay_ms") + f.has("due_at_ms");
      if (times != 1) f.fail_with("give exactly one of \"delay\", \"delay_ms\" and \"due_at_ms\"");
      const TimePoint now = SystemClock::instance().now();
      auto delay = f.duration("delay", "delay_ms", "use 0 for 'now'");
      auto due_at = f.time_ms("due_at_ms", now);
      if (!f.ok()) return done(bad_request(f));
      // delay <= max_delay (at most 100 years), so the sum stays far inside a TimePoint.
      Status s = queue_.reschedule(*id, delay ? now + *delay : *due_at);
      if (!s.ok()) return done(fail(s));
      return done(ok("rescheduled"));
    }

    case Route::stats: {
      f.only({}, "/stats");
      if (!f.ok()) return done(bad_request(f));
      const Stats st = queue_.stats();
      Writer w;
      wire::write_stats(w, st, {{"waiting_pops", waiting_pops_.load()}});
      return done(ok("ok", w.str()));
    }

    case Route::dead_list:
      return dead_list(f, done);

    case Route::backup:
      return backup(f, done);

    case Route::dead_requeue: {
      f.only({"id", "topic"}, "/dead/requeue");
      if (f.ok() && f.has("id") == f.has("topic"))
        f.fail_with("give \"id\" (one job) or \"topic\" (all of its dead letters), one of them");
      if (!f.ok()) return done(bad_request(f));
      if (f.has("id")) {
        auto id = f.name("id", true);
        if (!f.ok()) return done(bad_request(f));
        Status s = queue_.requeue_dead(*id);
        if (!s.ok()) return done(fail(s));
        return done(ok("requeued", "{\"requeued\":1}"));
      }
      auto topic = f.name("topic", true);
      if (!f.ok()) return done(bad_request(f));
      auto n = queue_.requeue_dead_topic(*topic);
      if (!n) return done(fail(n.status()));
      return done(ok("requeued", "{\"requeued\":" + std::to_string(*n) + "}"));
    }

    case Route::dead_purge: {
      f.only({"topic"}, "/dead/purge");
      auto topic = f.name("topic", true);
      if (!f.ok()) return done(bad_request(f));
      auto n = queue_.purge_dead(*topic);
      if (!n) return done(fail(n.status()));
      return done(ok("purged", "{\"purged\":" + std::to_string(*n) + "}"));
    }

    default:
      return done(fail(404, "no_route", "no such route"));
  }
}

std::string Api::metrics_text() {
  std::string out;
  const auto line = [&](std::string_view s) {
    out += s;
    out += '\n';
  };
  const auto counter = [&](const char* name, const char* help, uint64_t v) {
    line(std::string("# HELP ") + name + " " + help);
    line(std::string("# TYPE ") + name + " counter");
    line(std::string(name) + " " + std::to_string(v));
  };
  const Stats st = queue_.stats();
  counter("delayq_pushed_total", "Jobs pushed (since the store was created).", st.pushed);
  counter("delayq_delivered_total", "Deliveries handed out (reservations).", st.delivered);
  counter("delayq_acked_total", "Deliveries acknowledged (finished).", st.acked);
  counter("delayq_retried_total", "Failed attempts scheduled again.", st.retried);
  counter("delayq_dead_lettered_total", "Jobs moved to the dead letters.", st.dead_lettered);
  counter("delayq_leases_expired_total", "Reservations whose ttr ran out.", st.leases_expired);
  counter("delayq_cancelled_total", "Jobs deleted.", st.cancelled);
  counter("delayq_requeued_total", "Dead letters put back.", st.requeued);
  counter("delayq_purged_total", "Dead letters purged.", st.purged);
  counter("delayq_released_total",
          "Deliveries given back uncounted (their client left before the answer).", st.released);

  line(
      "# HELP delayq_jobs Jobs per topic and state (a topic seen since the start reads 0 when "
      "it empties; topics past --metrics-topics are summed under overflow=\"true\").");
  line("# TYPE delayq_jobs gauge");
  const auto jobs = [&](const std::string& labels, const TopicStats& t) {
    const std::string l = "delayq_jobs{" + labels + ",state=\"";
    line(l + "delayed\"} " + std::to_string(t.delayed));
    line(l + "ready\"} " + std::to_string(t.ready));
    line(l + "reserved\"} " + std::to_string(t.reserved));
    line(l + "dead\"} " + std::to_string(t.dead));
  };
  const TopicSeries::View topics = metrics_->topics.update(st.topics);
  for (const auto& [name, t] : topics.named) jobs("topic=\"" + label(name) + "\"", t);
  jobs("overflow=\"true\"", topics.overflow);
  line(
      "# HELP delayq_overflow_topics Topics with jobs that have no delayq_jobs series of their "
      "own (over --metrics-topics).");
  line("# TYPE delayq_overflow_topics gauge");
  line("delayq_overflow_topics " + std::to_string(topics.overflow_topics));
  line("# HELP delayqd_waiting_pops Pops waiting for a job.");
  line("# TYPE delayqd_waiting_pops gauge");
  line("delayqd_waiting_pops " + std::to_string(waiting_pops_.load()));
  line("# HELP delayqd_connections Open HTTP connections.");
  line("# TYPE delayqd_connections gauge");
  line("delayqd_connections " + std::to_string(connections_.load()));

  std::lock_guard lock(metrics_->mu);
  line("# HELP delayqd_http_requests_total HTTP requests answered, by route and status.");
  line("# TYPE delayqd_http_requests_total counter");
  for (const auto& [key, n] : metrics_->requests)
    line(std::string("delayqd_http_requests_total{route=\"") + route_name(key.first) +
         "\",status=\"" + std::to_string(key.second) + "\"} " + std::to_string(n));
  line("# HELP delayqd_http_request_duration_seconds Time to answer, by route (a pop includes "
       "its wait).");
  line("# TYPE delayqd_http_request_duration_seconds histogram");
  for (size_t r = 0; r < metrics_->latency.size(); ++r) {
    const auto& h = metrics_->latency[r];
    if (h.count == 0) continue;
    const std::string name = route_name(static_cast<Route>(r));
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kNumBuckets; ++i) {
      cumulative += h.buckets[i];
      Writer le;
      le.value(kBuckets[i]);
      line("delayqd_http_request_duration_seconds_bucket{route=\"" + name + "\",le=\"" +
           le.str() + "\"} " + std::to_string(cumulative));
    }
    line("delayqd_http_request_duration_seconds_bucket{route=\"" + name + "\",le=\"+Inf\"} " +
         std::to_string(h.count));
    Writer sum;
    sum.value(h.sum);
    line("delayqd_http_request_duration_seconds_sum{route=\"" + name + "\"} " + sum.str());
    line("delayqd_http_request_duration_seconds_count{route=\"" + name + "\"} " +
         std::to_string(h.count));
  }
  return out;
}

}  // namespace delayq::http
