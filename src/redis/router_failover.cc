// Following a Sentinel failover (see router.h): where the primary is now.
#include "redis/router.h"

namespace delayq::redis {

bool sent_and_lost(const Status& s) {
  // connection.cc words every transport failure so (Connection::transport_error).
  return s.is(Errc::unavailable) &&
         s.message().starts_with("lost the connection to redis at ");
}

void Router::relocate() {
  using Steady = std::chrono::steady_clock;
  std::lock_guard one(relocate_mu_);
  const Steady::time_point now = Steady::now();
  if (last_relocate_ != Steady::time_point{} &&
      now - last_relocate_ < std::chrono::milliseconds(100))
    return;
  last_relocate_ = now;
  // No primary yet (the old one is gone and none promoted): the node keeps its address, and the
  // next failing call asks again.
  if (Result<Endpoint> primary = locate_(); primary) seed_.retarget(*primary);
}

}  // namespace delayq::redis
