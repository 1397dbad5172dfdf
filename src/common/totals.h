// The name of each of Stats's totals, as every form outside the process spells it: the Redis
// backend's stats hash (src/redis/lua), delayqd's /stats (src/wire/stats.cc). One table, so
// that a new total is named once.
#pragma once

#include <cstdint>
#include <string_view>

#include "delayq/job.h"

namespace delayq {

struct TotalName {
  std::string_view name;
  uint64_t Stats::*field;
};

inline constexpr TotalName kTotalNames[] = {
    {"pushed", &Stats::pushed},
    {"delivered", &Stats::delivered},
    {"acked", &Stats::acked},
    {"retried", &Stats::retried},
    {"dead_lettered", &Stats::dead_lettered},
    {"leases_expired", &Stats::leases_expired},
    {"cancelled", &Stats::cancelled},
    {"requeued", &Stats::requeued},
    {"purged", &Stats::purged},
    {"released", &Stats::released},
};

}  // namespace delayq
