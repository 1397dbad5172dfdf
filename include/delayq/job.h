// What a job is: the spec a producer pushes, the retry policy, what a consumer receives, and
// what get()/stats() report. Plain structs; every backend uses them unchanged.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "delayq/clock.h"
#include "delayq/error.h"

namespace delayq {

using namespace std::chrono_literals;

inline constexpr size_t kMaxTopicBytes = 255;
inline constexpr size_t kMaxIdBytes = 255;

// A job's priority when its spec names none. Smaller numbers are more urgent (beanstalkd's
// convention: a beanstalkd client's priority maps unchanged), so 0..1023 are more urgent than the
// default and 1025..4294967295 less.
inline constexpr uint32_t kDefaultPriority = 1024;

// How long to wait before the next attempt after a failed one (a nack without a delay, a
// handler that failed or threw, a lease that ran out), and how many attempts a job gets.
//
// A job is delivered at most max_attempts times. After the delivery numbered max_attempts
// fails, the job goes to the dead letters of its topic instead of being retried.
struct RetryPolicy {
  enum class Kind : uint8_t { fixed, list, exponential };

  Kind kind = Kind::exponential;
  uint32_t max_attempts = 10;
  // fixed: every retry waits `base`.
  // exponential: retry n (n = 1 after the first failure) waits min(cap, base * factor^(n-1)),
  //   then minus a random share of up to `jitter` (0..1) of that, so that failed jobs spread
  //   out; the wait never exceeds cap.
  Duration base = 1s;
  double factor = 2.0;
  Duration cap = 1h;
  double jitter = 0.0;
  // list: retry n waits delays[n-1]; past the end of the list, the last entry.
  std::vector<Duration> delays{};

  // Retry after the same delay each time.
  static RetryPolicy fixed(Duration delay, uint32_t max_attempts);
  // Retry after each listed delay in turn; max_attempts = delays.size() + 1, so the job is
  // delivered once plus once per listed delay. Example, a payment callback:
  //   RetryPolicy::list({2min, 10min, 10min, 1h, 2h, 6h, 15h})
  static RetryPolicy list(std::vector<Duration> delays);
  static RetryPolicy exponential(Duration base, double factor, Duration cap, double jitter,
                                 uint32_t max_attempts);

  // Empty when the policy is usable, else what is wrong with it.
  std::string validate() const;
  bool operator==(const RetryPolicy&) const = default;
};

// What a producer pushes.
struct JobSpec {
  // Non-empty, at most 255 bytes. Consumers reserve by topic.
  std::string topic{};
  // Optional; unique in the queue while the job lives (delayed, ready, reserved or dead).
  // At most 255 bytes. When empty, the queue generates one and returns it from push().
  std::string id{};
  // When the job becomes due: `delay` after the push (>= 0), or at `due_at`. Set at most one;
  // neither means now. A due_at in the past means now. Either one beyond the queue's max_delay
  // from now is refused.
  std::optional<Duration> delay{};
  std::optional<TimePoint> due_at{};
  // Time to run: how long a consumer holds the job after reserving it before it counts as
  // failed and is retried. Zero means the queue's default_ttr.
  Duration ttr{0};
  // Opaque bytes, at most the queue's max_body_bytes.
  std::string body{};
  // Missing means the queue's default policy.
  std::optional<RetryPolicy> retry{};
  // Among a topic's ready jobs, the smaller number is handed out first (then the earlier due
  // time, then push order). Jobs not yet due are not affected. Retries keep it.
  uint32_t priority = kDefaultPriority;
};

enum class JobState : uint8_t { delayed, ready, reserved, dead };
const char* to_string(JobState s) noexcept;

// Proof of one delivery. ack/nack/touch take it and refuse it once the job has moved on
// (acknowledged, cancelled, redelivered after its lease ran out). `fence` grows with every
// delivery in the queue.
struct Token {
  std::string id{};
  uint64_t fence = 0;

  // "<fence>:<id>", for carrying a token through text protocols.
  std::string to_string() const;
  static Result<Token> parse(std::string_view text);
  bool operator==(const Token&) const = default;
};

// What a consumer receives.
struct Delivery {
  std::string id{};
  std::string topic{};
  std::string body{};
  uint32_t attempt = 0;  // 1 for the first delivery
  uint32_t max_attempts = 0;
  Token token{};
  TimePoint due{};             // when the job became due
  TimePoint lease_deadline{};  // when the reservation runs out unless touched
  uint32_t priority = kDefaultPriority;
};

// A snapshot of one job, from get() and the dead-letter listing.
struct JobInfo {
  std::string id{};
  std::string topic{};
  JobState state = JobState::delayed;
  uint32_t attempts = 0;  // deliveries made so far
  uint32_t max_attempts = 0;
  TimePoint due{};               // next (delayed) or last (other states) due time
  TimePoint lease_deadline{};    // meaningful when reserved
  // The job's lease as reserve() grants it: the ttr it was pushed with, or the queue's
  // Limits::default_ttr when it was pushed with 0. Never 0.
  Duration ttr{0};
  std::string body{};
  // The policy its failed attempts follow: the one it was pushed with, or the queue's
  // Limits::default_retry (as it was at the push) when it was pushed without one.
  // retry.max_attempts == max_attempts.
  RetryPolicy retry{};
  uint32_t priority = kDefaultPriority;
  // Dead jobs: when the job went to the dead letters (dead letters are listed in that order).
  // Zero in the other states.
  TimePoint dead_since{};
};

// Flow control for one topic, for every consumer of the queue together (Queue::set_topic_limits).
struct TopicLimits {
  // A token bucket: at most `count` hand-outs per `per` on average, and at most `burst` at once
  // after a quiet spell. count >= 1, per > 0 (at most the queue's max_delay), 1 <= burst <= 1e6.
  struct Rate {
    uint32_t count = 0;
    Duration per{0};
    uint32_t burst = 1;
    bool operator==(const Rate&) const = default;
  };
  std::optional<Rate> rate{};
  // At most this many of the topic's jobs reserved at once (>= 1).
  std::optional<uint32_t> max_in_flight{};
  bool operator==(const TopicLimits&) const = default;
};

// A limited topic as stats() sees it.
struct TopicFlow {
  TopicLimits limits{};
  uint64_t tokens = 0;     // hand-outs the rate allows right now (<= burst; 0 without a rate)
  uint64_t in_flight = 0;  // the topic's jobs reserved now
  // Hand-outs refused since the queue was opened because of the rate / the concurrency limit:
  // one per reserve() attempt and topic that had a ready job the limits held back (a reserve()
  // that waits looks again at each wake-up, and one over several shards looks at each: such a
  // call may count more than once).
  uint64_t throttled_rate = 0, throttled_concurrency = 0;
  bool operator==(const TopicFlow&) const = default;
};

// One page of Queue::list_jobs().
struct JobPage {
  std::vector<JobInfo> jobs{};
  // Pass it back for the next page; empty when this page is the last.
  std::string cursor{};
};

struct TopicStats {
  uint64_t delayed = 0, ready = 0, reserved = 0, dead = 0;
  // The topic is paused (Queue::pause): it hands out nothing until resumed. A paused topic is
  // listed in Stats::topics even when it holds no job.
  bool paused = false;
  bool operator==(const TopicStats&) const = default;
};

// How late deliveries were handed out: for each delivery, the time from its job's due time to
// the reserve() that handed it out, counted in fixed buckets. The buckets are the same in every
// backend and in delayqd's /metrics (a Prometheus histogram, delayq_lateness_seconds).
struct Lateness {
  // The buckets' upper bounds, inclusive: 100 µs to 4 h. A delivery late by exactly 5 ms counts
  // in the 5 ms bucket; one late by more than 4 h in the last bucket (+Inf).
  static constexpr std::array<Duration, 22> kBounds{
      100us, 250us, 500us, 1ms,   2500us, 5ms, 10ms, 25ms, 50ms, 100ms, 250ms,
      500ms, 1s,    2500ms, 5s, 10s,    30s, 1min, 5min, 15min, 1h, 4h};

  // buckets[i]: deliveries late by more than kBounds[i-1] and at most kBounds[i] (not
  // cumulative); buckets[22]: late by more than 4 h.
  std::array<uint64_t, kBounds.size() + 1> buckets{};
  uint64_t count = 0;        // deliveries counted (the sum of buckets)
  double sum_seconds = 0;    // their lateness added up
  // Deliveries handed out while the clock read earlier than their due time (the wall clock
  // stepped back after the job became ready): counted as late by 0, and here too.
  uint64_t clamped = 0;
  bool operator==(const Lateness&) const = default;
};

// The delayed jobs of a topic by when they fall due, as of the stats() call: each delayed job in
// exactly one window, so the five add up to TopicStats::delayed. The windows' ends are whole
// units after `now` rounded down (docs/semantics.md, "What fires when"):
//   next_minute  due before  floor(now, 1 s)   + 60 s
//   next_hour    due before  floor(now, 1 min) + 60 min
//   next_day     due before  floor(now, 1 h)   + 24 h
//   next_week    due before  floor(now, 1 h)   + 168 h
//   beyond       the rest (on a store with a disk tier: also every job that lives on disk)
struct DueWindows {
  uint64_t next_minute = 0, next_hour = 0, next_day = 0, next_week = 0, beyond = 0;
  bool operator==(const DueWindows&) const = default;
};

// What an operator watches per topic besides the counts by state.
struct TopicTiming {
  DueWindows due{};  // the delayed jobs by when they fall due
  // How long the oldest ready job has been due (zero when none is ready): a consumer that
  // cannot keep up shows here first.
  Duration oldest_ready{0};
  // The deliveries handed out since the queue was opened (Redis: since its keys were created),
  // first attempts and retries apart. A requeued dead letter starts again at attempt 1.
  Lateness first{}, retry{};
  bool operator==(const TopicTiming&) const = default;
};

struct Stats {
  std::map<std::string, TopicStats> topics{};  // topics with at least one live job, or paused
  // Topics with a live job or a delivery since the queue was opened, while the queue keeps them
  // (the engine forgets the topics emptied longest ago: docs/semantics.md, "Topics that are
  // gone"): when their jobs fall due, how long the ready ones have waited, and how late
  // deliveries were handed out.
  std::map<std::string, TopicTiming> timing{};
  // Every topic with limits set (Queue::set_topic_limits), whether or not it holds jobs.
  std::map<std::string, TopicFlow> flow{};
  // Totals since the queue was opened (a durable store: since it was created).
  uint64_t pushed = 0;          // pushes that succeeded
  uint64_t delivered = 0;       // deliveries handed out (reservations)
  uint64_t acked = 0;
  uint64_t retried = 0;         // failed attempts that were scheduled again
  uint64_t dead_lettered = 0;
  uint64_t leases_expired = 0;  // reservations that ran out (each also counts as retried or dead)
  uint64_t cancelled = 0;
  uint64_t requeued = 0;        // dead letters put back
  uint64_t purged = 0;          // dead letters deleted
  uint64_t released = 0;        // deliveries given back by release(), their attempt not counted
};

}  // namespace delayq
