// open_redis(): the options checked, the queue opened (redis_queue.h).
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "common/format.h"
#include "common/rules.h"
#include "delayq/redis.h"
#include "redis/redis_queue.h"

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
  return "";
}

}  // namespace

Result<std::unique_ptr<Queue>> open_redis(const RedisOptions& options) {
  Result<redis::Endpoint> ep = redis::parse_url(options.url, options.user, options.password);
  if (!ep) return ep.status();
  if (std::string why = check(options); !why.empty())
    return Status(Errc::invalid_argument, "redis options: " + why);
  auto q = std::make_unique<redis::RedisQueue>(options, std::move(*ep));
  if (Status s = q->start(); !s.ok()) return s;
  return std::unique_ptr<Queue>(std::move(q));
}

}  // namespace delayq
