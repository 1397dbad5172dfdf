// The Response values delayqd's routes build (see responses.h).
#include "delayqd/responses.h"

#include <string>

#include "wire/fields.h"

namespace delayq::http {

namespace {

int http_status(Errc e) {
  switch (e) {
    case Errc::invalid_argument:
      return 400;
    case Errc::not_found:
      return 404;
    case Errc::duplicate_id:
    case Errc::stale_token:
    case Errc::invalid_state:
      return 409;
    case Errc::timeout:
    case Errc::closed:
    case Errc::unavailable:
      return 503;
    default:
      return 500;
  }
}

}  // namespace

Response ok(std::string_view message, std::string_view data) {
  return Response{200, "application/json", wire::answer_json(0, message, data)};
}

Response fail(int status, std::string_view error, std::string_view message, std::string_view data) {
  return Response{status, "application/json", wire::refusal_json(error, message, data)};
}

Response fail(int status, wire::Refusal why, std::string_view message) {
  return fail(status, wire::to_string(why), message);
}

const char* errc_name(const Status& s) {
  return to_string(static_cast<Errc>(s.code().value()));
}

Response fail(const Status& s) {
  return fail(http_status(static_cast<Errc>(s.code().value())), errc_name(s), s.message());
}

Response bad_request(std::string_view message) {
  return fail(400, wire::Refusal::bad_request, message);
}

Body read_body(std::string_view text, bool array_ok) {
  namespace json = wire::json;
  constexpr std::string_view kExample = "e.g. {\"topic\":\"order\"}";
  const std::string_view t = wire::trim(text);
  if (t.empty())
    return {{},
            fail(400, wire::Refusal::bad_json,
                 "the body is empty; it must be a JSON object, " + std::string(kExample))};
  Result<json::Value> parsed = json::parse(text);
  if (!parsed && t.front() != '{' && t.front() != '[' && t.front() != '"') {
    // Not JSON at all: most likely a form (topic=order&delay=10) or plain text.
    const std::string start(t.substr(0, 24));
    return {{},
            fail(400, wire::Refusal::bad_json,
                 "the body must be a JSON object, " + std::string(kExample) +
                     "; this one is not JSON (it starts with \"" + start +
                     "\"; a form-encoded body? send the fields as JSON)")};
  }
  if (!parsed) return {{}, fail(400, wire::Refusal::bad_json, parsed.status().message())};
  if (!parsed->is_object() && !(array_ok && parsed->is_array()))
    return {{},
            bad_request("the body must be a JSON object, " + std::string(kExample) + ", not " +
                        (parsed->is_array() ? "an " : "a ") + json::to_string(parsed->type()) +
                        (parsed->is_array() ? " (only /push takes an array: a batch)" : ""))};
  return {std::move(*parsed), std::nullopt};
}

}  // namespace delayq::http
