// Job records for the journal's tests: a plain one and one with every field away from its
// default (non-ASCII id, binary body, times at both ends of the clock, every retry field set).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "engine/record.h"

namespace delayq::wal::test_records {

using engine::JobRecord;

inline JobRecord make(uint64_t seq, std::string body = "body") {
  JobRecord r;
  r.seq = seq;
  r.id = "id-" + std::to_string(seq);
  r.topic = "topic";
  r.body = std::move(body);
  r.state = JobState::delayed;
  r.due = TimePoint(Duration(int64_t{1'700'000'000'123'456'789} + static_cast<int64_t>(seq)));
  r.ttr = 30s;
  r.retry = RetryPolicy::fixed(5s, 3);
  return r;
}

// A record with every field away from its default.
inline JobRecord full(uint64_t seq, RetryPolicy::Kind kind) {
  JobRecord r;
  r.seq = seq;
  r.id = "order-\xC3\xA9t\xC3\xA9-\xF0\x9F\x93\xA6";  // UTF-8: été, a package emoji
  r.topic = "payments/callback";
  r.body = std::string("a\0b\0\xff\xfe binary", 14);
  r.state = JobState::reserved;
  r.due = TimePoint(Duration(-123'456'789));  // before the epoch, negative nanoseconds
  r.lease_deadline = TimePoint(Duration(INT64_MAX));
  r.ttr = Duration(INT64_MIN);
  r.attempts = UINT32_MAX;
  r.fence = UINT64_MAX - 7;
  r.priority = UINT32_MAX - 1;  // not the default: a record of version 2
  switch (kind) {
    case RetryPolicy::Kind::fixed:
      r.retry = RetryPolicy::fixed(7s, 4);
      break;
    case RetryPolicy::Kind::list:
      r.retry = RetryPolicy::list({2min, 10min, 10min, 1h, 2h, 6h, 15h});
      break;
    case RetryPolicy::Kind::exponential:
      r.retry = RetryPolicy::exponential(250ms, 1.7, 90min, 0.35, 12);
      break;
  }
  // Every RetryPolicy field set, whatever the kind says is used.
  r.retry.base = Duration(123);
  r.retry.factor = 3.141592653589793;
  r.retry.cap = Duration(-5);
  r.retry.jitter = 1e-300;
  if (r.retry.delays.empty()) r.retry.delays = {1ns, Duration(INT64_MAX), Duration(INT64_MIN)};
  return r;
}

}  // namespace delayq::wal::test_records
