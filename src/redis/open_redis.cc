// open_redis(): the options checked, the queue opened (redis_queue.h).
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "common/format.h"
#include "common/rules.h"
#include "delayq/redis.h"
#include "redis/redis_queue.h"
#include "redis/sentinel.h"

namespace delayq {

namespace {

// Empty when the options are usable, else what is wrong (the option named).
std::string check(const RedisOptions& options) {
  if (options.queue.empty() || options.queue.size() > 64 ||
      options.queue.find_first_of("{}:") != std::string::npos)
    return "queue must be 1 to 64 bytes without '{', '}' or ':', got '" + options.queue + "'";
  if (options.shards < 1 || options.shards > 1024)
    return "shards must be between 1 and 1024, got " + std::to_string(options.shards);
  if (options.claim_batch < 1 || options.claim_batch > 1000)
    return "claim_batch must be between 1 and 1000, got " + std::to_string(options.claim_batch);
  if (options.connections < 1 || options.connections > 64)
    return "connections must be between 1 and 64, got " + std::to_string(options.connections);
  if (std::string why = rules::check_limits(options.limits); !why.empty())
    return why;
  for (auto [name, d] : {std::pair{"connect_timeout", options.connect_timeout},
                         {"call_timeout", options.call_timeout},
                         {"reconnect_min", options.reconnect_min},
                         {"reconnect_max", options.reconnect_max},
                         {"sweep", options.sweep}})
    if (d <= Duration::zero() || d > std::chrono::hours(1))
      return std::string(name) + " must be positive and at most 1h, got " + format_duration(d);
  if (options.reconnect_max < options.reconnect_min)
    return "reconnect_max must be at least reconnect_min";
  if (options.replicas_to_ack > 16)
    return "replicas_to_ack must be between 0 and 16, got " +
           std::to_string(options.replicas_to_ack);
  if (options.replicas_timeout <= Duration::zero() ||
      options.replicas_timeout >= options.call_timeout)
    return "replicas_timeout must be positive and shorter than call_timeout (" +
           format_duration(options.call_timeout) + "), got " +
           format_duration(options.replicas_timeout);
  return "";
}

// Where the queue connects: the url's server, or (Sentinel) a placeholder that the router
// replaces with the primary the sentinels name; `o` gets the sentinels of a sentinel url.
Result<redis::Endpoint> locate(RedisOptions& o) {
  if (redis::is_sentinel_url(o.url)) {
    Result<redis::SentinelUrl> u = redis::parse_sentinel_url(o.url);
    if (!u) return u.status();
    if (!o.sentinels.empty() || !o.sentinel_master.empty())
      return Status(Errc::invalid_argument,
                    "redis options: name the sentinels in the url or in sentinels and "
                    "sentinel_master, not both");
    o.sentinels = std::move(u->sentinels);
    o.sentinel_master = std::move(u->master);
  } else if (!o.sentinels.empty() || !o.sentinel_master.empty()) {
    if (!o.url.empty())
      return Status(Errc::invalid_argument,
                    "redis options: url '" + o.url + "' and sentinels are both given; leave url "
                    "empty with sentinels");
    if (o.sentinels.empty() || o.sentinel_master.empty())
      return Status(Errc::invalid_argument,
                    "redis options: sentinels and sentinel_master go together");
  } else {
    return redis::parse_url(o.url, o.user, o.password);
  }
  for (const std::string& s : o.sentinels)
    if (Result<redis::Endpoint> ep = redis::parse_sentinel(s); !ep) return ep.status();
  if (!o.user.empty() && o.password.empty())
    return Status(Errc::invalid_argument, "redis options: a user needs a password");
  redis::Endpoint ep;
  ep.url = "redis-sentinel master '" + o.sentinel_master + "'";
  ep.user = o.user;
  ep.password = o.password;
  return ep;
}

}  // namespace

Result<std::unique_ptr<Queue>> open_redis(const RedisOptions& options) {
  RedisOptions o = options;
  Result<redis::Endpoint> ep = locate(o);
  if (!ep) return ep.status();
  if (std::string why = check(o); !why.empty())
    return Status(Errc::invalid_argument, "redis options: " + why);
  auto q = std::make_unique<redis::RedisQueue>(o, std::move(*ep));
  if (Status s = q->start(); !s.ok()) return s;
  return std::unique_ptr<Queue>(std::move(q));
}

}  // namespace delayq
