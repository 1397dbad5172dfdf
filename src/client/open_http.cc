// open_http(): the URL, the options and the token file (see delayq/http.h).
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "client/http_queue.h"
#include "common/bad_input.h"
#include "common/rules.h"

namespace delayq {

namespace {

// The one token in `path` (blank space around it dropped).
Result<std::string> read_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return bad("cannot read the token file " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const size_t b = text.find_first_not_of(" \t\r\n");
  const size_t e = text.find_last_not_of(" \t\r\n");
  std::string token = b == std::string::npos ? "" : text.substr(b, e - b + 1);
  if (token.empty() || token.find_first_of(" \t\r\n") != std::string::npos)
    return bad("the token file " + path + " must hold one token (no spaces or line breaks)");
  return token;
}

}  // namespace

Result<std::unique_ptr<Queue>> open_http(std::string_view url, const HttpOptions& options) {
  auto at = wire::parse_http_url(url);
  if (!at)
    return bad("bad delayqd url '" + std::string(url) + "': " + at.status().message() +
               " (expected http://HOST:PORT, e.g. http://127.0.0.1:9277)");
  HttpOptions o = options;
  if (!o.token.empty() && !o.token_file.empty())
    return bad("HttpOptions: set token or token_file, not both");
  if (o.token.find_first_of(" \t\r\n") != std::string::npos)
    return bad("HttpOptions::token must not hold spaces or line breaks");
  if (!o.token_file.empty()) {
    auto token = read_token_file(o.token_file);
    if (!token) return token.status();
    o.token = std::move(*token);
  }
  if (o.connections < 1 || o.connections > 64)
    return bad("HttpOptions::connections is " + std::to_string(o.connections) +
               "; it must be 1 to 64");
  if (o.call_timeout <= Duration::zero() || o.call_timeout > std::chrono::hours(24))
    return bad("HttpOptions::call_timeout must be positive and at most 24 h");
  if (o.user_agent.empty() || o.user_agent.find_first_of("\r\n") != std::string::npos)
    return bad("HttpOptions::user_agent must be one line of text");
  if (std::string why = rules::check_limits(o.limits); !why.empty())
    return bad("HttpOptions::limits: " + why);
  return std::unique_ptr<Queue>(new client::HttpQueue(std::move(*at), std::move(o)));
}

}  // namespace delayq
