// Reading what the server answers: the replies of the backend's scripts (scripts.h, one reply
// shape per script; lua/prelude.lua lists the codes) and of CLUSTER SLOTS, turned into typed
// outcomes: the values of the Queue interface, or a refusal with the engine's Errc and message
// (redis_rules.h), returned to the caller.
//
// These are functions of a Reply alone (and of what the call asked, for the wording of a
// refusal), apart from the connections and the queue, so that tests and the fuzzer
// (tests/fuzz/redis_reply_fuzz.cc, through parse_resp() in resp.h) reach them without a server.
// The read_* functions of a whole reply take any reply; the ones of elements (read_job_info,
// read_server_now) state the length they need. Within that, any reply (wrong types, numbers at
// either end of int64) gives a value or a refusal, never undefined behaviour; a reply of no
// known shape is Errc::corrupt ("unexpected reply from the redis script '<name>'").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "delayq/error.h"
#include "delayq/job.h"
#include "redis/redis_rules.h"
#include "redis/resp.h"
#include "redis/scripts.h"

namespace delayq::redis {

// The reply code of a script (the first element, scripts.h ReplyCode), or -1.
int64_t code_of(const Reply& r);
// A job state as stored (scripts.h StoredState); anything unknown reads as dead.
JobState to_state(int64_t stored);
// Microseconds from the server back to a Duration or a TimePoint, saturating at the ends of
// representable time (a due time rounded up to the microsecond can lie just past
// TimePoint::max()).
Duration duration_us(int64_t us);
TimePoint from_us(int64_t us);

// A job's retry policy as get and list_dead send it: {kind (0 fixed, 1 list, else exponential),
// base, factor, cap, jitter, {delays}}, durations in microseconds, factor and jitter as text.
// A missing or malformed part keeps RetryPolicy's default.
RetryPolicy read_policy(const Reply& policy, uint32_t max_attempts);

// A job's priority as a script sends it: a u32, else (a reply no script sends) the default.
uint32_t read_priority(const Reply& r);

// A JobInfo from the kJobInfoFields fields at e[i..i+9] (get, list_dead): id, state, attempts,
// max_attempts, due, lease deadline, ttr (all times in microseconds), body, retry policy (as
// read_policy reads it), priority. The strings are moved out of `e`. Precondition:
// i + kJobInfoFields <= e.size().
inline constexpr size_t kJobInfoFields = 10;
JobInfo read_job_info(std::vector<Reply>& e, size_t i, std::string topic);

// The jobs of a claim or ack_claim reply ({0, then kDeliveryFields per job: id, topic, body,
// attempt, max_attempts, fence, due, lease deadline, priority}), appended to `out`; the strings
// are moved out of `e`. False (and nothing appended) when the reply is malformed.
inline constexpr size_t kDeliveryFields = 9;
bool read_deliveries(std::vector<Reply>& e, std::vector<Delivery>* out);

// A claim reply that found nothing ready ({6, microseconds until the next due time or lease
// deadline of the topics, or -1 for none}): the wait, if there is one.
std::optional<Duration> read_next_wait(const std::vector<Reply>& e);

// A reschedule the script refused as too far away ({1, how far `when_us` lies beyond the
// server's now, in microseconds}): the server's now. Precondition: e.size() >= 2.
TimePoint read_server_now(int64_t when_us, const std::vector<Reply>& e);

// Adds the totals of a stats reply's last element (name, value, name, value, ...) to `st`, and
// the lateness counters kept there (late:<f|r>:<bucket|su|cl>:<topic>, lua/prelude.lua) to
// st.timing. Unknown names are skipped.
void read_totals(const Reply& kv, Stats& st);
// The counts of one topic in a stats reply ({delayed, ready, reserved, dead, ...}), if well
// formed.
std::optional<TopicStats> read_topic_counts(const Reply& c);
// The rest of that topic's row ({..., the delayed jobs due before each of the four ends of the
// windows, the age of the front of the ready line in µs}): its windows and oldest ready job.
std::optional<TopicTiming> read_topic_timing(const Reply& c);

// The failure of a reply of no known shape from `script`: corrupt.
Status bad_reply(ScriptId script);

// ---- Scripts about one job (ack, nack, dead_letter, release, touch, ack_claim, cancel, get,
// reschedule, requeue_dead) ----

// Why such a script did not do its work, as its reply says.
struct Refusal {
  int64_t code = kNotFound;         // kNotFound, kStaleToken, kInvalidState or kInvalidArgument
  JobState state = JobState::dead;  // kStaleToken, kInvalidState: the job's state
  uint32_t attempts = 0;            // kStaleToken: the job's deliveries
  int64_t beyond_us = 0;  // kInvalidArgument (reschedule): how far the time asked lies beyond
                          // the server's now, in µs
};
// The job lives in another topic than the call said: the call is to be sent again with its keys.
struct Elsewhere {
  std::string topic;
};
// What such a script answered: done (its whole reply, code kOk first), refused, or elsewhere.
using JobAnswer = std::variant<Reply, Refusal, Elsewhere>;
Result<JobAnswer> read_job_answer(Reply r, ScriptId script);

// What a call about one job asked, for the wording of its refusals.
struct JobCall {
  ScriptId script = kGet;
  std::string_view id;
  const Token* token = nullptr;  // the calls of a delivery: its token
  // reschedule: the time asked, as given and as sent (rounded up to the µs), and this client's
  // clock when it asked.
  TimePoint when{};
  int64_t when_us = 0;
  TimePoint client_now{};
};
// A refusal in the engine's words (redis_rules.h): the Errc and message the engine gives for the
// same call on a job in the state the script found. A refusal that `call.script` never gives is a
// corrupt reply.
Status refusal_status(const Refusal& r, const JobCall& call, const Rules& rules);

// ---- Each script's own reply, once it did its work ----

// push: nothing when the job was stored, else the state of the job that holds its id already.
Result<std::optional<JobState>> read_push(const Reply& r);
// push_many of `jobs` jobs: per job, as read_push.
Result<std::vector<std::optional<JobState>>> read_push_many(const Reply& r, size_t jobs);

// claim: the jobs taken (leased already), or, when none was ready, how long until the next due
// time or lease deadline of the topics, if there is one.
struct Claimed {
  std::vector<Delivery> jobs;
  std::optional<Duration> next;
  // kAdmitFirst (several shards): the listed topics with limits and ready jobs, each its index
  // among the topics and how many of its jobs are ready.
  std::vector<std::pair<size_t, uint32_t>> admit;
};
Result<Claimed> read_claim(Reply r);
// ack_claim: the jobs taken after the ack (none when nothing was ready).
Result<std::vector<Delivery>> read_ack_claim(Reply r);
// touch: the new lease deadline.
Result<TimePoint> read_touch(const Reply& r);
// get: the job.
Result<JobInfo> read_get(Reply r);
// list_dead of `topic`: its dead letters, appended to `out`.
void read_dead_list(Reply r, std::string_view topic, std::vector<JobInfo>* out);
// requeue_dead_topic, purge_dead: how many jobs this run took, and how many dead are left.
struct DeadBatch {
  uint64_t done = 0;
  uint64_t left = 0;
};
Result<DeadBatch> read_dead_batch(const Reply& r, ScriptId script);

// One range of a CLUSTER SLOTS reply: slots lo..hi, served by the master at host:port (an empty
// host: the node that answered).
struct SlotRange {
  int lo = 0, hi = 0;
  std::string host;
  int port = 0;
};
// The well-formed ranges of a CLUSTER SLOTS reply (each entry: start, end, then the master as
// {host, port, id, ...}, then its replicas); entries out of range or of the wrong shape are
// skipped. "?" as a host (a node that does not know its address) reads as empty.
std::vector<SlotRange> read_slot_map(const Reply& r);

// "host:port" of a redirection or a slot map entry; an empty host means "the node that said it".
bool parse_address(std::string_view addr, std::string& host, int& port);

}  // namespace delayq::redis
