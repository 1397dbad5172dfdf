// /ui, /ui/app.js, /ui/topic.js, /ui/schedules.js, /ui/style.css: the dashboard's page, its scripts
// and style (see routes.h, docs/dashboard.md). They hold no data and are served without the
// token; the page asks the operator for it and sends it with every call it makes to the other
// routes.
#include "delayqd/responses.h"
#include "delayqd/routes.h"
#include "delayqd/ui_files.h"

namespace delayq::http::routes {

namespace {

// The browser runs only what came from this daemon (no inline script, no other origin), the
// page cannot be framed by another site, and a content type is never guessed.
Response page(const UiFile& f) {
  Response r{200, std::string(f.content_type), std::string(f.body)};
  r.headers = {
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
       "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"Cache-Control", "no-cache"},
      {"Referrer-Policy", "no-referrer"},
  };
  return r;
}

}  // namespace

void ui(RouteContext&, const Request& request, const wire::json::Value&, Done& done) {
  std::string_view path = path_of(request.target);
  if (path == "/ui/") path = "/ui";
  for (size_t i = 0; i < kUiFileCount; ++i)
    if (kUiFiles[i].path == path) return done(page(kUiFiles[i]));
  done(fail(404, wire::Refusal::no_route, "no dashboard file " + std::string(path)));
}

}  // namespace delayq::http::routes
