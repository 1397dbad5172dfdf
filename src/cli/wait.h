// `delayq wait`: until the delayqd at a URL answers GET /health with 200, for shells and scripts
// that start the daemon in the background and call it next (docs/cli.md, "Waiting for
// delayqd"). Kept apart from commands.cc: it polls, where every other command makes one call.
#pragma once

#include <string>
#include <string_view>

#include "delayq/clock.h"
#include "delayq/error.h"
#include "wire/http_client.h"

namespace delayq::cli {

// The longest --timeout `delayq wait` takes.
inline constexpr Duration kMaxWaitTimeout = std::chrono::hours(1);

// The value of `wait --timeout`: a duration (parse.h) from 0 to kMaxWaitTimeout. Errors:
// invalid_argument, saying what is wrong ("'2h' is more than the longest wait, 1h").
Result<Duration> parse_wait_timeout(std::string_view text);

// What /health said once it answered 200.
struct Health {
  std::string version;
  std::string backend;
};

// What `wait` prints once the daemon is ready: "delayqd 0.1.0 at URL is ready (store)", or with
// `json` {"status":"ok","url":...,"version":...,"backend":...}.
std::string ready_line(const Health& health, const std::string& url, bool json);

// Asks GET /health of `at` every 50 ms until it answers 200 with delayqd's JSON, for at most
// `timeout` (0: one try). Not answering, refusing the connection, or answering 503 (a queue that
// cannot serve, a daemon shutting down) count as "not yet". `url` names the daemon in messages.
// Errors: unavailable (no 200 within the timeout; says what the last try got), io_error (an
// answer that is not delayqd's: another program on that port, or a wrong path in the URL;
// reported at once).
Result<Health> wait_for_health(const wire::HttpEndpoint& at, const std::string& url,
                               Duration timeout);

}  // namespace delayq::cli
