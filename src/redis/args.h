// The arguments of the backend's scripts, as the scripts read them (lua/prelude.lua,
// "Conventions"; each script's file lists its own).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "delayq/clock.h"
#include "delayq/job.h"
#include "redis/keys.h"

namespace delayq::redis {

// Nanoseconds to whole microseconds, rounded up: a due time or a wait is never shortened.
int64_t ceil_us(Duration d);
int64_t ceil_us(TimePoint t);

// The arguments every script starts with (ARGV[1..3]): the shard's wake channel, max_delay in µs
// and a fresh seed for the script's jitter, followed by ":<now in µs>" when the queue runs on a
// test clock (RedisOptions::clock). Thread-safe.
class CommonArgs {
 public:
  // `seed`: where the jitter seeds start (RedisOptions::seed, drawn at random when 0); `clock`:
  // RedisOptions::clock (nullptr: the scripts read the server's TIME).
  CommonArgs(Duration max_delay, uint64_t seed, const Clock* clock);
  std::vector<std::string> operator()(const ShardKeys& shard);

 private:
  std::string max_delay_us_;
  std::atomic<uint64_t> rng_;
  const Clock* clock_;
};

// A checked job's arguments, appended to `args` as push (`with_topic`) and push_many (without,
// and with the number of delays before them) take them: id, [topic], body (moved out of the
// spec), delay, due_at, ttr, priority, the retry policy (kind, max_attempts, base, factor, cap,
// jitter, [number of delays], delays). A spec without its own ttr or policy gets the defaults
// given.
void add_job_args(JobSpec& spec, bool with_topic, Duration default_ttr,
                  const RetryPolicy& default_retry, std::vector<std::string>& args);

}  // namespace delayq::redis
