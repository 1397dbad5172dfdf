// The shape of every delayqd answer (docs/http-api.md), both directions: {"code":0,"message":
// ...,"data":...} for success, and for a failure {"code":1,"message":...,"error":<word>,"data":
// ...}: code 1 for every failure, as ouqiang/delay-queue answers; "message" explains it for
// people, "error" names its kind for programs: the Errc's own name (to_string(Errc)) when the
// queue refused, or the word of one of delayqd's own refusals (Refusal).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "delayq/error.h"
#include "wire/json.h"

namespace delayq::wire {

// The refusals delayqd makes itself, before or beside the queue.
enum class Refusal : uint8_t {
  bad_json,            // the body is not JSON (or not an object)
  bad_request,         // a member is missing, unknown, of the wrong type or out of range
  bad_http,            // not HTTP/1.1
  too_large,           // a body, a batch or the headers over their cap
  unauthorized,        // no bearer token, or the wrong one
  forbidden,           // /backup without --backup-dir
  no_route,            // no such route
  method_not_allowed,  // the route takes another method
  not_supported,       // /backup of a Redis queue
  overloaded,          // too many connections or waiting pops, or out of memory
  shutting_down,       // the daemon is draining
  client_closed,       // the client left before its answer (counted, never sent)
  internal_error,      // an exception while answering
};
const char* to_string(Refusal r) noexcept;

// The Errc a client reports for an answer's "error" word: an Errc's own name, for a Refusal the
// nearest Errc (invalid_argument for what the request got wrong, unavailable for the rest), and
// unavailable for any other word.
Errc errc_of(std::string_view error);

// {"code":<code>,"message":...,"data":<data>} and a newline (so that an answer printed in a
// terminal ends its line), `data` already JSON. code 0 is success; a batch
// that was partly refused has code 1 and no "error" (its data says which jobs).
std::string answer_json(int code, std::string_view message, std::string_view data = "null");
// {"code":1,"message":...,"error":<error>,"data":<data>} and a newline.
std::string refusal_json(std::string_view error, std::string_view message,
                         std::string_view data = "null");

// An answer as read back. "data" is null when absent.
struct Answer {
  int64_t code = -1;
  std::string message;
  std::string error;  // "" for a success
  json::Value data;
  bool ok() const { return code == 0; }
};
// Reads an answer body (with the reply limits: a long dead-letter list is fine); nullopt when
// the text is not a JSON object (an answer from something else than delayqd).
std::optional<Answer> read_answer(std::string_view body);

}  // namespace delayq::wire
