// One limited topic's flow control (Queue::set_topic_limits): a token bucket and a count of the
// topic's jobs reserved now. The engine owns one per limited topic (ShardedEngine::limiters_);
// each shard's core points at it from its Topic (Core::set_limiter), so that every shard of the
// queue spends the same tokens and counts the same places.
//
// Locking: a core uses it only under its shard's lock, and takes mu() around every call, since
// the cores of several shards share it. Lock order: the shard's lock, then mu(); never the other
// way (stats() takes mu() alone). All calls but the constructor need mu() held.
//
// The bucket is GCRA (the "generic cell rate algorithm"): one number, the theoretical arrival
// time `tat`, with interval T = per / count. A hand-out at `now` is allowed when
// now >= tat - (burst - 1) * T, and then tat = max(tat, now) + T. Kept as tat * count in 128-bit
// integer nanoseconds, so that T is exactly `per` in those units: N hand-outs per `per` exactly,
// with no rounding drift however long it runs.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

#include "delayq/clock.h"
#include "delayq/job.h"

namespace delayq::engine {

class TopicLimiter {
 public:
  // Why a hand-out is refused now, and when the next token is due (TimePoint::max() when only a
  // freed place can help: the topic is at max_in_flight).
  struct Refusal {
    bool concurrency = false;
    TimePoint next_token = TimePoint::max();
  };

  // `limits` checked by rules::check_topic_limits. The bucket starts full, nothing in flight.
  explicit TopicLimiter(const TopicLimits& limits);

  std::mutex& mu() { return mu_; }
  const TopicLimits& limits() const { return limits_; }
  uint64_t in_flight() const { return in_flight_; }

  // Nullopt when a hand-out may go now; else why not (nothing is spent or counted).
  std::optional<Refusal> refusal(TimePoint now);
  // A hand-out: spends a token and takes a place, or refuses as refusal() would and counts it.
  std::optional<Refusal> take(TimePoint now);
  // Counts a refused hand-out in the throttled counters of stats().
  void count(const Refusal& r);
  // release(): the delivery never reached a consumer, so its token goes back to the bucket (a
  // full bucket stays full). The place is freed by free_place() as for every exit.
  void give_back(TimePoint now);
  // A reserved job of the topic left `reserved`. True when the topic was at max_in_flight: a
  // consumer waiting for a place should look again.
  bool free_place();
  // Adds reserved jobs that were not counted (when the limits are installed, per shard).
  void add_in_flight(uint64_t n) { in_flight_ += n; }
  // New limits, keeping what is in flight and the throttled counts. The bucket keeps the tokens
  // it holds, whole ones, up to the new burst; a new rate's next token is one new interval away.
  void change(const TopicLimits& limits, TimePoint now);
  // What stats() shows (TopicFlow) as of `now`.
  TopicFlow snapshot(TimePoint now);

 private:
  using i128 = __int128;
  i128 scaled(TimePoint t) const;  // t * count, in ns
  // Brings tat_ into [now, now + burst * per] (scaled): below now the bucket is merely full;
  // above the top the clock stepped back, and the topic must not stall for the step's length.
  void clamp(i128 now_x);

  TopicLimits limits_;
  std::mutex mu_;
  i128 tat_;  // scaled by the rate's count; clamp() before every use
  uint64_t in_flight_ = 0;
  uint64_t throttled_rate_ = 0, throttled_concurrency_ = 0;
};

}  // namespace delayq::engine
