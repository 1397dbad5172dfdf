// /release: a delivery given back undone, as if it had never been made (Queue::release): the job
// is ready again in its place, its attempts as before the delivery, counted in "released". For a
// client that took a job it cannot use (the C++ client of delayq/http.h, whose reserve was
// withdrawn as the job came). By token only: releasing is for the holder of the delivery.
#include <string>

#include "delayqd/responses.h"
#include "delayqd/routes.h"

namespace delayq::http::routes {

void release(RouteContext& ctx, const Request&, const wire::json::Value& body, Done& done) {
  wire::Fields f(body, ctx.limits);
  f.only({"token"}, "/release");
  auto text = f.string("token", true);
  if (!f.ok()) return done(bad_request(f.error()));
  auto token = Token::parse(*text);
  if (!token) return done(bad_request(token.status().message()));
  Status s = ctx.queue.release(*token);
  if (s.ok() || s.is(Errc::not_found)) ctx.tokens.forget(token->id);
  if (!s.ok()) return done(fail(s));
  done(ok("released"));
}

}  // namespace delayq::http::routes
