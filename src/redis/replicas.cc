// WAIT after the writing scripts (see replicas.h).
#include "redis/replicas.h"

#include <algorithm>
#include <chrono>

namespace delayq::redis {

ReplicaWait::ReplicaWait(uint32_t replicas, Duration timeout)
    : replicas_(replicas),
      replicas_text_(std::to_string(replicas)),
      timeout_text_(std::to_string(std::max<int64_t>(
          1, std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()))) {}

Status ReplicaWait::check(const Reply& wait, const std::vector<Reply>& calls,
                          const std::string& url) const {
  if (std::all_of(calls.begin(), calls.end(), [](const Reply& r) { return r.is_error(); }))
    return {};
  if (wait.is_error())
    return Status(Errc::unavailable, "redis at " + url + " refused WAIT: " + wait.str +
                                         "; the call may or may not have taken effect");
  const int64_t got = wait.as_int(-1);
  if (got >= static_cast<int64_t>(replicas_)) return {};
  return Status(Errc::unavailable,
                "only " + std::to_string(std::max<int64_t>(got, 0)) + " of the " + replicas_text_ +
                    " replicas asked for (replicas_to_ack) acknowledged the write within " +
                    timeout_text_ + " ms at redis " + url +
                    "; the primary ran it, and a failover may lose it: the call may or may not "
                    "have taken effect");
}

}  // namespace delayq::redis
