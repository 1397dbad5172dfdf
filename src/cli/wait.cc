// `delayq wait` (see wait.h).
#include "cli/wait.h"

#include <algorithm>
#include <optional>
#include <thread>

#include "cli/human_text.h"
#include "cli/parse.h"
#include "wire/answer.h"
#include "wire/json.h"

namespace delayq::cli {

namespace {

using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

constexpr milliseconds kPollEvery{50};
// A request's own deadline when little of the wait is left: enough for a loopback answer.
constexpr milliseconds kShortestTry{100};

// One try: the health on a 200, nullopt for "not yet" (the reason in `last`), or an error
// that waiting longer would not change.
Result<std::optional<Health>> try_once(const wire::HttpEndpoint& at, const std::string& url,
                                       Duration budget, std::string& last) {
  wire::HttpClient client(at, {.timeout = std::max<Duration>(budget, kShortestTry),
                               .user_agent = "delayq-cli"});
  auto reply = client.request("GET", "/health", "");
  if (!reply) {
    last = reply.status().message();
    return std::optional<Health>();
  }
  const std::optional<wire::Answer> answer = wire::read_answer(reply->body);
  const std::string path = at.prefix + "/health";
  if (!answer || (reply->status != 200 && reply->status != 503) ||
      (reply->status == 200 && !answer->ok())) {
    std::string said = answer ? answer->message : reply->body.substr(0, 200);
    said.erase(said.find_last_not_of(" \r\n") + 1);
    return Status(Errc::io_error, url + " answered GET " + path + " with HTTP " +
                                      std::to_string(reply->status) +
                                      (answer ? " " + answer->error : "") + ": " + printable(said) +
                                      " (not a delayqd's health answer: is the URL, its path "
                                      "included, the daemon's?)");
  }
  if (reply->status == 503) {
    last = "HTTP 503 " + answer->error + ": " + answer->message;
    return std::optional<Health>();
  }
  return std::optional<Health>(Health{wire::json::member_string(answer->data, "version"),
                                      wire::json::member_string(answer->data, "backend")});
}

}  // namespace

std::string ready_line(const Health& health, const std::string& url, bool json) {
  if (!json)
    return "delayqd " + printable(health.version) + " at " + printable(url) + " is ready (" +
           printable(health.backend) + ")";
  wire::json::Writer w;
  w.begin_object().key("status").value("ok").key("url").value(url);
  w.key("version").value(health.version).key("backend").value(health.backend).end_object();
  return w.take();
}

Result<Duration> parse_wait_timeout(std::string_view text) {
  auto d = parse_duration(text);
  if (!d) return d.status();
  if (*d > kMaxWaitTimeout)
    return Status(Errc::invalid_argument, "'" + std::string(text) +
                                              "' is more than the longest wait, " +
                                              format_span(kMaxWaitTimeout));
  return *d;
}

Result<Health> wait_for_health(const wire::HttpEndpoint& at, const std::string& url,
                               Duration timeout) {
  const Steady::time_point start = Steady::now();
  const Steady::time_point deadline =
      start + std::chrono::duration_cast<Steady::duration>(timeout);
  std::string last;
  for (;;) {
    auto got = try_once(at, url, deadline - Steady::now(), last);
    if (!got) return got.status();
    if (*got) return std::move(**got);
    const Steady::time_point now = Steady::now();
    if (now >= deadline)
      return Status(Errc::unavailable,
                    "no answer from /health of the delayqd at " + url + " within " +
                        format_span(timeout) + "; the last try: " + last);
    std::this_thread::sleep_for(std::min<Steady::duration>(kPollEvery, deadline - now));
  }
}

}  // namespace delayq::cli
