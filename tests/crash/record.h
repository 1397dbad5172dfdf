// What a worker reports to the driver over its pipe: one fixed-size Record per event.
//
// Before each call the worker sends an intent, after it the outcome (a *_done, or `reserved`),
// so that the driver knows which calls were in flight when the worker died. Times are the wall
// clock (the store's clock) read just before the call (t0) and just after it returned (t1): the
// store's own `now` for the call lies between them.
#pragma once

#include <limits.h>

#include <cstdint>
#include <string>

#include "delayq/error.h"

namespace delayq::crash {

enum class Kind : uint8_t {
  opened,          // the store is open (and, if asked, observed): the load starts
  push_intent,     // job; arg = delay (ns)
  push_done,       // code
  batch_intent,    // push_batch of n jobs: job, job + threads, ...; arg = delay of each
  batch_done,      // code: the first failure among the jobs, or ok
  reserve_intent,  // a reserve() starts; `reserved` or `reserve_done` is its outcome
  reserved,        // job, attempt, due, lease, n = fence: a delivery
  reserve_done,    // code: nothing was delivered (timeout)
  ack_intent,      // job, n = the token's fence (for every call on a token)
  ack_done,
  nack_intent,  // arg = delay (ns), or -1: the policy's
  nack_done,
  dead_intent,  // dead_letter()
  dead_done,
  touch_intent,
  touch_done,      // lease = the new lease deadline
  release_intent,  // release(): the delivery given back undone (attempts as before it)
  release_done,
  cancel_intent,
  cancel_done,
  resched_intent,  // arg = the new due time
  resched_done,
  requeue_intent,  // requeue_dead()
  requeue_done,
  purge_intent,    // purge_dead(); arg = the topic's index
  purged,          // job: gone after the purge (the worker looked); sent before purge_done
  purge_done,      // n = the count purge_dead() returned
  ackb_intent,     // ack_batch() of n tokens: items[i], fences[i]; job = items[0]
  ackb_done,       // codes[i]: what each token's ack answered
  rqtopic_intent,  // requeue_dead_topic(); arg = the topic's index
  requeued,        // job: requeued by it (the worker looked); sent before rqtopic_done
  rqtopic_done,    // n = the count requeue_dead_topic() returned
  pause_intent,    // pause(); arg = the topic's index
  pause_done,
  resume_intent,  // resume(); arg = the topic's index
  resume_done,
  limits_intent,  // set_topic_limits(), or clear_topic_limits() when n = 0; arg = the topic's
                  // index, n = the limits: kTopicLimits[n - 1] (load.h)
  limits_done,
  list_intent,  // list_jobs() of a topic's ready (n = 0) or dead (n = 1) jobs, a page or two;
                // arg = the topic's index
  list_done,    // n = the jobs listed
  violation,     // job, text: a broken promise the worker saw
  error,         // text: the worker failed in a way the load does not allow
  seen,          // job: what the worker's reopened store shows (see Obs); t0, t1 around get()
  observed,      // n = jobs stored (stats()), totals = pushed, acked, cancelled, purged;
                 // attempt = the paused topics (bit i: kTopics[i]); arg = each topic's limits
                 // (bits 4i..4i+3 for kTopics[i]: limits_code(), load.h); due = the jobs
                 // on kScheduleTopic (stats()); t0 = the wall clock before the store's
                 // open began
  bg_begin,      // a RocksDB flush (n = 0) or compaction (n = 1) began
  bg_end,        // ... ended
  refill_begin,  // the disk tier's refill began writing the jobs it moves (engine/test_hooks.h)
  refill_end,    // ... that write is durable (or failed)
  // Schedules (load.h), in the kill and power-loss cycles: job = the schedule's number
  // (schedule_id()).
  sched_intent,    // schedule(): n = its rule (kScheduleRules[n]), arg = 1 when it creates the
                   // schedule (a new number), 0 when it replaces it
  sched_done,
  unsched_intent,  // unschedule()
  unsched_done,
  spause_intent,  // pause_schedule()
  spause_done,
  sresume_intent,  // resume_schedule()
  sresume_done,
  occ_intent,     // take an occurrence job: reserve() on kScheduleTopic (no wait), then ack()
  occ_reserved,   // ... it delivered the occurrence `due` (ns) of schedule `job` (not an outcome)
  occ_done,       // n = 1 when a job was delivered, code = its ack's; else code = the reserve's
  seen_schedule,  // a reopened store's schedule `job`: attempt = paused, n = fired, arg = its
                  // rule (rule_index()), lease = 1 with due = last_fired (ns), totals[0] and
                  // [1] = skipped_overlap and skipped_catch_up, t1 = 1 with t0 = its next
                  // occurrence (ns); text: a problem
  seen_occurrence,  // ... an occurrence job: of schedule `job`, due = its instant (ns); text: a
                    // problem the worker saw (an id that is no occurrence of the load's)
  // Never sent: entries of a job's history in the driver.
  settled,  // the worker was killed during the call above
};

constexpr uint8_t kAbsent = 255;
constexpr size_t kMaxAckBatch =
    3;  // tokens in one ack_batch() of the load  // `seen`: the job does not exist

// One record, one write(): at most PIPE_BUF bytes, so a record is never split or interleaved,
// and a worker killed mid-write leaves a whole record or none.
struct Record {
  Kind kind;
  uint8_t code;    // the Errc of an outcome (0: ok); `seen`: the JobState, or kAbsent
  uint8_t thread;  // the worker thread that made the call
  uint8_t pad;
  uint32_t attempt;
  uint64_t job;
  int64_t t0, t1;
  int64_t arg;
  int64_t due, lease;
  uint64_t n;
  uint64_t totals[4];
  uint64_t items[kMaxAckBatch];   // ack_batch: the jobs of its tokens
  uint64_t fences[kMaxAckBatch];  // ... their fences
  uint8_t codes[kMaxAckBatch];    // ... the Errc of each token's ack
  char text[112];                 // NUL-terminated
};
static_assert(sizeof(Record) <= PIPE_BUF);

Record make_record(Kind kind, uint64_t job = 0);
// The outcome of `intent`: its fields, the status and the clock after the call.
Record done_record(Kind kind, const Record& intent, const Status& s, int64_t t1);
void set_text(Record& r, const std::string& s);
std::string text_of(const Record& r);
inline bool has_code(const Record& r, Errc e) {
  return r.code == static_cast<uint8_t>(e);
}
const char* errc_text(uint8_t code);

// The outcome kind of an intent kind (reserve: reserve_done), or the kind itself.
Kind done_of(Kind intent);
bool is_intent(Kind k);
// Calls on a delivery's token: ack, nack, dead_letter, touch, release.
bool is_token_call(Kind intent);
// Calls on a whole topic (arg: the topic's index): purge_dead, requeue_dead_topic, pause,
// resume, set_topic_limits / clear_topic_limits, list_jobs.
bool is_topic_call(Kind intent);
// An ack_batch() as the acks it is made of (the store writes each on its own, in order): the
// intent of the ack of its item `i`, and its outcome from the batch's outcome `done`.
Record ack_of_batch(const Record& batch_intent, size_t i);
Record ack_done_of_batch(const Record& batch_done, size_t i);
const char* call_name(Kind intent);

}  // namespace delayq::crash
