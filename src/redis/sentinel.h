// Redis Sentinel discovery: which server is the primary of a monitored group, asked of the
// sentinels (SENTINEL get-master-addr-by-name) and checked on the server itself (ROLE), and the
// "redis-sentinel://" url. The Router asks again when its primary fails (router.h).
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "delayq/clock.h"
#include "delayq/error.h"
#include "redis/connection.h"

namespace delayq::redis {

// "redis-sentinel://host1:26379,host2:26379/master": the sentinels (host:port, the port 26379
// when left out) and the master's name. Errors: invalid_argument, naming what is wrong.
struct SentinelUrl {
  std::vector<std::string> sentinels;
  std::string master;
};
bool is_sentinel_url(std::string_view url);
Result<SentinelUrl> parse_sentinel_url(std::string_view url);

// One sentinel's "host[:port]" (26379 when left out). Errors: invalid_argument.
Result<Endpoint> parse_sentinel(std::string_view address);

// The sentinels of one monitored group. Thread-safe.
class Sentinels {
 public:
  // `primary_auth`: the user and password of the data nodes (RedisOptions), which the primary
  // named gets, for the ROLE check and for the queue's connections to it.
  Sentinels(std::vector<Endpoint> sentinels, std::string master, Duration timeout,
            Endpoint primary_auth = {});

  // The primary now: the first sentinel that names one whose ROLE says "master" (starting with
  // the sentinel that answered last). Errors: unavailable, with each sentinel's reason (a
  // failover in progress names a server that is still a replica, or none).
  Result<Endpoint> primary();
  const std::string& master() const { return master_; }

 private:
  // The primary according to sentinel `i`, checked with ROLE; else why not.
  Result<Endpoint> ask(size_t i);

  std::vector<Endpoint> sentinels_;
  std::string master_;
  Duration timeout_;
  Endpoint primary_auth_;
  std::mutex mu_;
  size_t first_ = 0;  // the sentinel that answered last, under mu_
};

// Sentinels::primary() of the given sentinels (checked already with parse_sentinel), for the
// Router; an empty function when there are none (no Sentinel).
std::function<Result<Endpoint>()> sentinel_locator(const std::vector<std::string>& sentinels,
                                                   const std::string& master, Duration timeout,
                                                   const Endpoint& primary_auth = {});

}  // namespace delayq::redis
