// The Response values (api.h) delayqd's routes build, their JSON in wire/answer.h's shape:
// success, the queue's refusals with the HTTP status of their Errc, delayqd's own refusals, and
// the reading of a request body, which refuses what is not a JSON object, saying what it is
// instead. (wire/answer.h holds the JSON shape alone, which the CLI reads too; this file adds the
// HTTP status and the daemon's side.)
#pragma once

#include <new>
#include <optional>
#include <string>
#include <string_view>

#include "delayq/error.h"
#include "delayqd/api.h"
#include "wire/answer.h"
#include "wire/json.h"

namespace delayq::http {

// 200 {"code":0,"message":...,"data":<data>}, `data` already JSON.
Response ok(std::string_view message, std::string_view data = "null");
// {"code":1,"message":...,"error":<error>,"data":<data>} with `status`.
Response fail(int status, std::string_view error, std::string_view message,
              std::string_view data = "null");
Response fail(int status, wire::Refusal why, std::string_view message);
// The queue refused: the Errc's name as the error, and its HTTP status (400 invalid_argument,
// 404 not_found, 409 duplicate_id / stale_token / invalid_state, 503 timeout / closed /
// unavailable, 500 for the rest).
Response fail(const Status& s);
// 400 bad_request: what is wrong with the request's members.
Response bad_request(std::string_view message);

// The Errc's name of a refusal (to_string(Errc)).
const char* errc_name(const Status& s);

// A request body that must be a JSON object (or an array, where `array_ok`): the parsed value, or
// the 400 answer that says what is wrong with it.
struct Body {
  wire::json::Value value;
  std::optional<Response> refusal;
};
Body read_body(std::string_view text, bool array_ok);

// Runs `work`, which answers through `done`; an exception it lets out is answered instead of
// reaching the server's threads. Out of memory is 503 (a retry may well succeed), anything else
// 500. Either way the call may or may not have taken effect before the exception.
template <typename Work>
void guarded(const Api::Done& done, Work&& work) noexcept {
  const auto answer = [&](int status, wire::Refusal why, const std::string& what) {
    try {
      done(fail(status, why,
                "delayqd failed while answering (" + what +
                    "); the request may or may not have taken effect: check (e.g. /get) "
                    "before retrying"));
    } catch (...) {
      // Not even the refusal could be built: nothing more can be done for this request.
    }
  };
  try {
    work();
  } catch (const std::bad_alloc&) {
    answer(503, wire::Refusal::overloaded, "out of memory");
  } catch (const std::exception& e) {
    answer(500, wire::Refusal::internal_error, e.what());
  } catch (...) {
    answer(500, wire::Refusal::internal_error, "an unknown exception");
  }
}

}  // namespace delayq::http
