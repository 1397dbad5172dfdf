// The queue's input rules and refusals, as free functions: what every backend checks before it
// changes anything, and the exact words it answers with. The engine core calls them, and so do
// the Redis backend (whose state lives in a server), delayqd and the CLI, so that a bad input
// gets the same Errc and message from every backend (the contract in delayq/queue.h).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "delayq/error.h"
#include "delayq/job.h"
#include "delayq/limits.h"

namespace delayq::rules {

// t + d for d >= 0, saturating at the end of representable time (April 2262): sums near that end
// must not wrap around into the past, where a job would fire at once.
TimePoint plus(TimePoint t, Duration d);
// to - from, held at Duration::max() or min() where that does not fit (instants read from a
// server's reply can be anywhere).
Duration distance(TimePoint from, TimePoint to);

// The largest max_delay a queue accepts: now + max_delay stays inside int64 nanoseconds
// (year 2262). No call can set a due time, lease or wait further than this from its `now`.
inline constexpr Duration kLongestDelay = std::chrono::hours(24 * 365 * 100);

// The shortest ttr a job may have. A shorter lease would run out before any consumer could
// settle it (every ack stale); a ttr of 0 is not one: it means the queue's default_ttr.
inline constexpr Duration kMinTtr = std::chrono::milliseconds(1);

// Empty when no wait of the policy exceeds max_delay, else what is wrong.
std::string check_waits(const RetryPolicy& p, Duration max_delay);

// Empty when the limits are usable (delayq/limits.h says what is), else what is wrong, naming
// the field.
std::string check_limits(const Limits& limits);

// Everything push() checks that needs no queue state (that is, all but duplicate ids):
// topic, id, delay or due_at, ttr, body and retry policy. Errors: invalid_argument.
Status check_spec(const JobSpec& spec, const Limits& limits, TimePoint now);
// nack()'s delay. Errors: invalid_argument.
Status check_nack_delay(std::optional<Duration> delay, Duration max_delay);
// reschedule()'s new due time. Errors: invalid_argument.
Status check_new_due(TimePoint when, TimePoint now, Duration max_delay);

// The refusals of durations and due times, worded once for the library, delayqd and the CLI.
// `what` names the value as its sender wrote it ("delay", "ttr_ms", "retry.delays[2]"); `shown`
// is the value as a person reads it ("-5s", "8e+09s"); `hint`, if any, follows after "; ".
Status negative_duration(std::string_view what, std::string_view shown, std::string_view hint = {});
Status beyond_max_delay(std::string_view what, std::string_view shown, Duration max_delay);
// A positive duration shorter than `minimum` (a ttr under kMinTtr).
Status below_minimum(std::string_view what, std::string_view shown, Duration minimum,
                     std::string_view hint = {});
// A due time `away` (as shown) from now, beyond max_delay.
Status due_beyond_max_delay(std::string_view what, std::string_view away, Duration max_delay);
// A body over the size limit; `setting` names what changes the limit ("max_body_bytes").
Status body_too_large(size_t size, size_t limit, std::string_view setting);

// A number of seconds or milliseconds that a user sent (JSON, a flag), checked against 0 and
// max_delay BEFORE it becomes a Duration, so that no value can overflow the conversion or a later
// `now + d`. A positive amount under `min_positive` is refused too, before it could round to 0
// (a ttr: 0 means the default, kMinTtr is the shortest). Errors: invalid_argument, in the words
// above.
enum class Unit : uint8_t { seconds, milliseconds };
Result<Duration> user_duration(std::string_view what, double amount, Unit unit, Duration max_delay,
                               std::string_view if_negative = {},
                               Duration min_positive = Duration::zero());
// A point in time a user sent as unix `amount` in `unit`, checked the same way: not negative,
// and at most max_delay after `now` (a time in the past is fine: it means now).
Result<TimePoint> user_time(std::string_view what, double amount, Unit unit, TimePoint now,
                            Duration max_delay);

// Why `topic` cannot be a topic's name beyond what check_spec says about its length: empty when
// it is valid UTF-8, else which byte is not.
std::string topic_text_problem(std::string_view topic);

// A topic's name as push() checks it: 1 to kMaxTopicBytes bytes of valid UTF-8 (pause and
// resume check theirs the same way). Errors: invalid_argument.
Status check_topic(std::string_view topic);

// The refusals, worded once.
Status no_such_job(std::string_view id);                                  // not_found
Status duplicate_id(std::string_view id, JobState state);                 // duplicate_id
// A token that is not the job's current delivery; `attempts` counts the job's deliveries.
Status stale_token(const Token& token, JobState state, uint32_t attempts);  // stale_token
// reschedule() of a reserved or dead job (invalid_state); ok for other states.
Status check_reschedulable(std::string_view id, JobState state);
// requeue_dead() of a job that is not dead (invalid_state); ok for a dead one.
Status check_requeueable(std::string_view id, JobState state);
// reserve() of no topic at all (invalid_argument); ok when there is one.
Status check_topics(std::span<const std::string> topics);
// reserve() that found nothing ready in time (timeout). Names the first kNamedTopics topics and
// says how many more there are, so that a reserve over very many topics gets a short message.
inline constexpr size_t kNamedTopics = 3;
Status reserve_timeout(std::span<const std::string> topics);

// list_dead() over `shards` shards: `all` holds each shard's answer (oldest first) one after
// another. Leaves the `limit` oldest of them, oldest first: by when they died when every job
// says (JobInfo::dead_since, the engine), else by due time (Redis); ties in shard order.
void merge_dead_lists(std::vector<JobInfo>& all, size_t shards, size_t limit);

}  // namespace delayq::rules
