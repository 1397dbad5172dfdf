// Reading what the server answers: the replies of the backend's scripts (scripts.h, one reply
// shape per script) and of CLUSTER SLOTS, turned into the values of the Queue interface.
//
// These are functions of a Reply alone, apart from the connections and the queue, so that tests
// and the fuzzer (tests/fuzz/redis_reply_fuzz.cc, through parse_resp() in reply.h) reach them
// without a server. Callers check a reply's length before handing it over where a function says
// so; within that, any reply (wrong types, numbers at either end of int64) gives a value or a
// refusal, never undefined behaviour.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "delayq/job.h"
#include "redis/reply.h"

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

// A JobInfo from the 8 fields at e[i..i+7] (get, list_dead): id, state, attempts, max_attempts,
// due, lease deadline, ttr (all times in microseconds), body. The strings are moved out of `e`.
// Precondition: i + 8 <= e.size().
JobInfo read_job_info(std::vector<Reply>& e, size_t i, std::string topic);

// The jobs of a claim or ack_claim reply ({0, then 8 fields per job: id, topic, body, attempt,
// max_attempts, fence, due, lease deadline}), appended to `out`; the strings are moved out of
// `e`. False (and nothing appended) when the reply is malformed.
bool read_deliveries(std::vector<Reply>& e, std::vector<Delivery>* out);

// A claim reply that found nothing ready ({6, microseconds until the next due time or lease
// deadline of the topics, or -1 for none}): the wait, if there is one.
std::optional<Duration> read_next_wait(const std::vector<Reply>& e);

// A reschedule the script refused as too far away ({1, how far `when_us` lies beyond the
// server's now, in microseconds}): the server's now. Precondition: e.size() >= 2.
TimePoint read_server_now(int64_t when_us, const std::vector<Reply>& e);

// Adds the totals of a stats reply's last element (name, value, name, value, ...) to `st`.
// Unknown names are skipped.
void read_totals(const Reply& kv, Stats& st);
// The counts of one topic in a stats reply ({delayed, ready, reserved, dead}), if well formed.
std::optional<TopicStats> read_topic_counts(const Reply& c);

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
