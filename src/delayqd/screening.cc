// What a request's headers decide (Api::screen, api.h), once per request: the route it names, the
// bearer token, the method, draining. The Screening made here travels with the request (to the
// server's early refusal, to Api::handle, to the metrics), so nothing here runs twice for one
// request.
#include "delayqd/responses.h"
#include "delayqd/api.h"
#include "delayqd/metrics.h"
#include "delayqd/routes.h"

namespace delayq::http {

namespace {

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

}  // namespace

Screening Api::screen(std::string_view method, std::string_view target,
                      std::string_view authorization) const {
  screenings_.fetch_add(1, std::memory_order_relaxed);
  Screening s;
  const std::string_view path = path_of(target);
  s.spec_ = find_route(path);
  if (s.spec_ == nullptr) {
    s.refusal_ = fail(404, wire::Refusal::no_route,
                      "no route " + std::string(path) + "; see docs/http-api.md for the routes");
    return s;
  }
  s.route_ = s.spec_->route;
  // The dashboard's files hold no data: the page asks for the token and sends it itself.
  const bool open = s.route_ == Route::health || s.route_ == Route::ui;
  if (!options_.bearer_token.empty() && !open)
    if (std::optional<std::string> why = check_bearer(authorization, options_.bearer_token)) {
      s.refusal_ = fail(401, wire::Refusal::unauthorized, *why);
      return s;
    }
  if (!method_fits(s.spec_->methods, method)) {
    s.refusal_ = fail(405, wire::Refusal::method_not_allowed,
                      std::string(path) + " takes " + method_names(s.spec_->methods) + ", not " +
                          std::string(method));
    s.refusal_->allow = allow_header(s.spec_->methods);
    return s;
  }
  s.refusal_ = drain_refusal(s.route_);
  return s;
}

std::optional<Response> Api::drain_refusal(Route route) const {
  if (!draining_.load()) return std::nullopt;
  return fail(503, wire::Refusal::shutting_down,
              route == Route::health ? "delayqd is shutting down"
                                     : "delayqd is shutting down; retry on another instance or "
                                       "after the restart");
}

Response Api::refuse_unread(Screening screening) {
  Response r = screening.refusal_ ? std::move(*screening.refusal_)
                                  : fail(500, wire::Refusal::internal_error,
                                         "internal error: a request that passed its screening "
                                         "was refused unread");
  metrics_->observe(screening.route_, r.status, std::chrono::steady_clock::now());
  r.close = true;
  return r;
}

}  // namespace delayq::http
