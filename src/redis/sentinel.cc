// Redis Sentinel discovery (see sentinel.h).
#include "redis/sentinel.h"

#include <memory>
#include <utility>

namespace delayq::redis {

namespace {

constexpr std::string_view kScheme = "redis-sentinel://";

}  // namespace

bool is_sentinel_url(std::string_view url) {
  return url.starts_with(kScheme);
}

Result<Endpoint> parse_sentinel(std::string_view address) {
  if (address.empty() || address.find_first_of("/,@?") != std::string_view::npos)
    return Status(Errc::invalid_argument,
                  "redis sentinel '" + std::string(address) + "' is not host:port");
  std::string url = "redis://" + std::string(address);
  if (address.find(':') == std::string_view::npos) url += ":26379";
  Result<Endpoint> ep = parse_url(url);
  if (!ep)
    return Status(Errc::invalid_argument,
                  "redis sentinel '" + std::string(address) + "': " + ep.status().message());
  return ep;
}

Result<SentinelUrl> parse_sentinel_url(std::string_view url) {
  // Shown with anything before an '@' of the sentinels' part masked: it may be a password.
  std::string shown(url);
  if (const size_t at = shown.rfind('@', shown.find('/', kScheme.size()));
      is_sentinel_url(url) && at != std::string::npos && at >= kScheme.size())
    shown.replace(kScheme.size(), at - kScheme.size(), "***");
  auto bad = [&](const std::string& why) {
    return Status(Errc::invalid_argument,
                  "redis url '" + shown + "': " + why +
                      " (use redis-sentinel://host1:26379,host2:26379/master-name)");
  };
  if (!is_sentinel_url(url)) return bad("unknown scheme");
  std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return bad("the master's name is missing");
  SentinelUrl out;
  out.master = std::string(rest.substr(slash + 1));
  if (out.master.empty()) return bad("the master's name is missing");
  if (out.master.find_first_of("/?@ ") != std::string::npos)
    return bad("the master's name is malformed");
  rest = rest.substr(0, slash);
  if (rest.find('@') != std::string_view::npos) return bad("passwords are not supported yet");
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view one = rest.substr(0, comma);
    if (Result<Endpoint> ep = parse_sentinel(one); !ep) return bad(ep.status().message());
    out.sentinels.emplace_back(one);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (out.sentinels.empty()) return bad("no sentinel is named");
  return out;
}

Sentinels::Sentinels(std::vector<Endpoint> sentinels, std::string master, Duration timeout,
                     Endpoint primary_auth)
    : sentinels_(std::move(sentinels)),
      master_(std::move(master)),
      timeout_(timeout),
      primary_auth_(std::move(primary_auth)) {}

Result<Endpoint> Sentinels::ask(size_t i) {
  const Endpoint& s = sentinels_[i];
  Result<std::unique_ptr<Connection>> c = Connection::open(s, timeout_, timeout_);
  if (!c) return c.status();
  Result<Reply> r = (*c)->call({"SENTINEL", "get-master-addr-by-name", master_});
  if (!r) return r.status();
  if (r->is_error()) return Status(Errc::unavailable, "sentinel " + s.url + " answered " + r->str);
  if (r->type != Reply::Type::array || r->elements.size() != 2)
    return Status(Errc::unavailable, "sentinel " + s.url + " knows no master named '" + master_ + "'");
  Endpoint ep;
  ep.host = r->elements[0].str;
  ep.port = static_cast<int>(r->elements[1].as_int(0));
  if (ep.host.empty() || ep.port <= 0 || ep.port > 65535)
    return Status(Errc::unavailable, "sentinel " + s.url + " named an unreadable address");
  ep.url = "redis://" + ep.host + ":" + std::to_string(ep.port);
  ep.user = primary_auth_.user;
  ep.password = primary_auth_.password;
  // During a failover a sentinel may still name the old primary, or the new one before it was
  // promoted: only a server that says it is a master takes writes.
  Result<std::unique_ptr<Connection>> p = Connection::open(ep, timeout_, timeout_);
  if (!p) return p.status();
  Result<Reply> role = (*p)->call({"ROLE"});
  if (!role) return role.status();
  // Without the password ROLE is refused: say so, not that a failover is under way.
  if (role->is_error() && role->str.starts_with("NOAUTH"))
    return Status(Errc::invalid_argument,
                  "sentinel " + s.url + " named " + ep.url + ", which requires AUTH and " +
                      (ep.password.empty() ? "no password was given" : "did not take the one given") +
                      ": " + role->str + " (give it as RedisOptions::password)");
  if (role->type != Reply::Type::array || role->elements.empty() ||
      role->elements[0].str != "master")
    return Status(Errc::unavailable, "sentinel " + s.url + " named " + ep.url +
                                         ", which is not a master (yet): a failover is under way");
  return ep;
}

Result<Endpoint> Sentinels::primary() {
  size_t first;
  {
    std::lock_guard lock(mu_);
    first = first_;
  }
  std::string why;
  bool refused_auth = false;
  for (size_t k = 0; k < sentinels_.size(); ++k) {
    const size_t i = (first + k) % sentinels_.size();
    Result<Endpoint> ep = ask(i);
    if (ep) {
      std::lock_guard lock(mu_);
      first_ = i;
      return ep;
    }
    refused_auth = refused_auth || ep.is(Errc::invalid_argument);
    why += (why.empty() ? "" : "; ") + ep.status().message();
  }
  // A primary that refused the credentials is a mistake in the options, not an outage.
  return Status(refused_auth ? Errc::invalid_argument : Errc::unavailable,
                "no primary for redis sentinel master '" + master_ + "': " + why);
}

std::function<Result<Endpoint>()> sentinel_locator(const std::vector<std::string>& sentinels,
                                                   const std::string& master, Duration timeout,
                                                   const Endpoint& primary_auth) {
  if (sentinels.empty()) return {};
  std::vector<Endpoint> eps;
  for (const std::string& s : sentinels)
    if (Result<Endpoint> ep = parse_sentinel(s)) eps.push_back(std::move(*ep));
  auto group = std::make_shared<Sentinels>(std::move(eps), master, timeout, primary_auth);
  return [group] { return group->primary(); };
}

}  // namespace delayq::redis
