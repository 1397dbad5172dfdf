// The HTTP client backend: a Queue whose jobs live in a delayqd reached over its HTTP API
// (docs/http-api.md), for a C++ program that shares a daemon with others.
//
//   delayq::HttpOptions opt;
//   opt.token_file = "/etc/delayq/token";               // when delayqd runs with --token-file
//   auto q = delayq::open_http("http://127.0.0.1:9277", opt).value();
//   q->push({.topic = "order-timeout", .id = "order-42", .delay = 30min});
//
// Every Queue call is one request (or a few: a batch over 1000 jobs, stats over many topics),
// made on one of a few kept-alive connections; reserve() is a /pop long poll. Errors are those
// of every backend (delayq/queue.h), plus Errc::unavailable when the daemon cannot be reached,
// the connection broke, no answer came within call_timeout, or the daemon refused the request
// for reasons of its own (its bearer token, overload, draining: the message says which). Such
// a call may or may not have taken effect, as with Redis.
//
// What differs from the embedded backends:
//  - Ids and bodies are UTF-8 text, which delayqd's JSON carries unchanged: a call given one that
//    is not is refused with invalid_argument (a store or Redis keeps any bytes). Times travel
//    exactly (unix nanoseconds beside the milliseconds of the ouqiang-era fields).
//  - The limits (max_delay, max_body_bytes, default_ttr, default_retry) are the daemon's; the
//    options' `limits` are checked by this client too, before a request is sent, so that a
//    client can hold itself to tighter ones (as RedisOptions::limits).
//  - stats() cannot say why it failed: it answers an empty Stats when the daemon did not answer.
//    After close() it still asks the daemon (whose queue goes on), on a connection of its own.
//  - A reserve() whose wait is withdrawn (close(), a reserve_async() stop) ends its request by
//    closing its connection: the daemon then withdraws the pop and gives back a job it had just
//    taken (docs/http-api.md, "Differences"). A reserve longer than the daemon's --pop-timeout is
//    asked again until its own timeout. reserve_async() waits on a thread of its own; its
//    callback runs there, also with `closed` when the queue closes (close() waits for it).
//  - Nothing is done at open_http(): the first call connects. health() asks the daemon.
// Every Queue call is supported (release: POST /release; reserve over several topics: /pop's
// "topics"; set_topic_limits, clear_topic_limits: /limits/set, /limits/clear; list_jobs:
// /jobs/list; the schedule calls: /schedules/*). docs/http-api.md, "The C++ client", maps each call to its route.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "delayq/error.h"
#include "delayq/job.h"
#include "delayq/limits.h"
#include "delayq/queue.h"

namespace delayq {

struct HttpOptions {
  // delayqd's bearer token (its --token-file), sent with every request. Or token_file: a file
  // that holds it (one token, no spaces or line breaks; surrounding blank space is dropped),
  // read once by open_http(). At most one of the two.
  std::string token{};
  std::string token_file{};
  // The longest a call waits for its answer, connecting included (a reserve() waits its own
  // timeout on top of this).
  Duration call_timeout = std::chrono::seconds(10);
  // Connections kept open for calls made at once (more are made when needed and closed after
  // their call). 1 to 64.
  uint32_t connections = 4;
  // Checked by this client before a request is sent (see above). The daemon checks its own.
  Limits limits{};
  // Sent as the User-Agent header.
  std::string user_agent = "delayq-http";
};

// A Queue over the delayqd at `url`: "http://HOST[:PORT][/PREFIX]" (port 80 when none is given;
// PREFIX when a proxy serves the daemon under a path). No TLS.
// Errors: invalid_argument (a bad url, naming what is wrong with it; a bad option; a token file
// that cannot be read or does not hold one token).
Result<std::unique_ptr<Queue>> open_http(std::string_view url, const HttpOptions& options = {});

}  // namespace delayq
