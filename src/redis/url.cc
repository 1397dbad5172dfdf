// Where a server is and how to log in (see connection.h): parse_url and mask_url. A password
// must never reach a message or a log, so every message here shows the url masked.
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "redis/connection.h"

namespace delayq::redis {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `s` with each %XX replaced by its byte; false on a '%' not followed by two hex digits.
bool percent_decode(std::string_view s, std::string& out) {
  out.clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return false;
    const int hi = hex_digit(s[i + 1]), lo = hex_digit(s[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

// Masks the value of every "password=" parameter of a query (from `from` on) in `out`.
void mask_query(std::string& out, size_t from) {
  for (size_t at = from; (at = out.find("password=", at)) != std::string::npos;) {
    if (at > 0 && out[at - 1] != '?' && out[at - 1] != '&') {
      at += 9;
      continue;
    }
    const size_t b = at + 9, e = std::min(out.find('&', b), out.size());
    out.replace(b, e - b, "***");
    at = b + 3;
  }
}

}  // namespace

std::string mask_url(std::string_view url) {
  std::string out(url);
  const size_t scheme = out.find("://");
  const size_t auth = scheme == std::string::npos ? 0 : scheme + 3;
  // Everything between the first ':' of the authority and the last '@' is taken for the
  // password, so that a malformed url (a raw '/', '?' or '@' in the password) shows no more of
  // it than a good one. A unix socket's url holds one in its query only: its path may have both.
  const size_t at = url.starts_with("unix://") ? std::string::npos : out.rfind('@');
  if (at != std::string::npos && at >= auth) {
    const size_t colon = out.find(':', auth);
    if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
  }
  if (const size_t q = out.find('?', auth); q != std::string::npos) mask_query(out, q + 1);
  return out;
}

Result<Endpoint> parse_url(std::string_view url) {
  Endpoint ep;
  ep.url = mask_url(url);
  auto bad = [&](const std::string& why) {
    return Status(Errc::invalid_argument,
                  "redis url '" + ep.url + "': " + why +
                      " (use unix:///path/to/redis.sock or redis://host:port, a password as "
                      "redis://[user]:password@host:port or unix:///path?password=...&user=...)");
  };
  if (url.starts_with("unix://")) {
    std::string_view rest = url.substr(7);
    const size_t q = rest.find('?');
    ep.unix_path = std::string(rest.substr(0, q));
    if (ep.unix_path.empty() || ep.unix_path[0] != '/')
      return bad("the socket path must be absolute");
    if (q == std::string_view::npos) return ep;
    std::string_view params = rest.substr(q + 1);
    while (!params.empty()) {
      const size_t amp = params.find('&');
      const std::string_view param = params.substr(0, amp);
      params = amp == std::string_view::npos ? std::string_view() : params.substr(amp + 1);
      const size_t eq = param.find('=');
      const std::string_view name = param.substr(0, eq);
      std::string* slot = name == "password" ? &ep.password : name == "user" ? &ep.user : nullptr;
      if (slot == nullptr)
        return bad("unknown parameter '" + std::string(name) + "' (known: password, user)");
      if (eq == std::string_view::npos) return bad("parameter '" + std::string(name) + "' has no value");
      if (!slot->empty()) return bad("parameter '" + std::string(name) + "' given twice");
      if (!percent_decode(param.substr(eq + 1), *slot))
        return bad("a bad percent escape in the " + std::string(name) + " (use %XX, two hex digits)");
    }
    return ep;
  }
  if (!url.starts_with("redis://")) return bad("unknown scheme");
  std::string_view rest = url.substr(8);
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    // A trailing "/" or "/0" (database 0) is harmless; other databases are not supported, since
    // Redis Cluster has only database 0.
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && db != "0") return bad("only database 0 is supported");
    rest = rest.substr(0, slash);
  }
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const size_t colon = userinfo.find(':');
    if (!percent_decode(userinfo.substr(0, colon), ep.user))
      return bad("a bad percent escape in the user name (use %XX, two hex digits)");
    if (colon != std::string_view::npos &&
        !percent_decode(userinfo.substr(colon + 1), ep.password))
      return bad("a bad percent escape in the password (use %XX, two hex digits)");
  }
  const size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos) {
    const std::string_view port = rest.substr(colon + 1);
    const auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), ep.port);
    if (ec != std::errc() || p != port.data() + port.size() || ep.port <= 0 || ep.port > 65535)
      return bad("the port is not a number between 1 and 65535");
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return bad("the host is missing");
  ep.host = std::string(rest);
  return ep;
}

Result<Endpoint> parse_url(std::string_view url, const std::string& user,
                           const std::string& password) {
  Result<Endpoint> ep = parse_url(url);
  if (!ep) return ep;
  const auto twice = [&](const char* what) {
    return Status(Errc::invalid_argument, std::string("redis options: the ") + what +
                                              " is given twice, in url '" + ep->url +
                                              "' and in RedisOptions::" + what + "; give it once");
  };
  if (!password.empty()) {
    if (!ep->password.empty()) return twice("password");
    ep->password = password;
  }
  if (!user.empty()) {
    if (!ep->user.empty()) return twice("user");
    ep->user = user;
  }
  if (!ep->user.empty() && ep->password.empty())
    return Status(Errc::invalid_argument, "redis options: user '" + ep->user +
                                              "' has no password; AUTH needs one (in the url, "
                                              "or RedisOptions::password)");
  return ep;
}

Result<std::string> read_password_file(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return Status(Errc::invalid_argument,
                  "cannot read the Redis password file " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string pw = ss.str();
  if (pw.ends_with('\n')) pw.pop_back();
  if (pw.ends_with('\r')) pw.pop_back();
  if (pw.empty()) return Status(Errc::invalid_argument, "the Redis password file " + path + " is empty");
  if (pw.find_first_of("\r\n") != std::string::npos)
    return Status(Errc::invalid_argument, "the Redis password file " + path +
                                              " must hold the password alone on one line");
  return pw;
}

}  // namespace delayq::redis
