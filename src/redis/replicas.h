// WAIT after the writing scripts (RedisOptions::replicas_to_ack): a call answers only once that
// many replicas have its writes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "delayq/clock.h"
#include "delayq/error.h"
#include "redis/resp.h"

namespace delayq::redis {

class ReplicaWait {
 public:
  ReplicaWait() = default;
  // `replicas` 0: no WAIT. `timeout` positive (WAIT's 0 would wait for ever).
  ReplicaWait(uint32_t replicas, Duration timeout);

  bool on() const { return replicas_ > 0; }
  // WAIT <replicas> <milliseconds>, sent on the connection right after the writing calls.
  std::vector<std::string_view> command() const { return {"WAIT", replicas_text_, timeout_text_}; }
  // Whether WAIT's reply says enough replicas have the connection's writes. `calls`: the calls'
  // replies; when every one is an error reply nothing was written and WAIT's answer does not
  // matter (a replica answers WAIT with an error too). Errors: unavailable, saying that the call
  // may or may not have taken effect (the primary ran it; a failover may lose it).
  Status check(const Reply& wait, const std::vector<Reply>& calls, const std::string& url) const;

 private:
  uint32_t replicas_ = 0;
  std::string replicas_text_, timeout_text_;
};

}  // namespace delayq::redis
