// The harness's picture of the store: what each job's record may be, by the worker's reports.
//
// The driver applies every record a worker sends, in order, as it arrives; the worker, a fork of
// the driver, inherits the picture and applies its own records the same way before sending
// them: one rule book, so the two cannot disagree. apply() also checks each outcome against the
// picture (a token accepted after its lease ran out, a delivery before its due time, a purge
// that missed a dead job, ...) and records a problem when one breaks a promise.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "job_state.h"
#include "load.h"
#include "record.h"

namespace delayq::crash {

struct JobModel {
  // What the store may hold: one record, or several after a kill during a call on the job (the
  // call may or may not have happened) until a reopened store shows which.
  std::vector<Rec> cands;
  // Its push is in flight (pushed at push_t0 with push_delay), and whether a delivery of it was
  // reported meanwhile (then the push cannot be lost: the reservation was written after it).
  bool pushing = false, taken = false;
  int64_t push_t0 = 0, push_delay = 0;
  bool live() const { return cands.size() == 1 && cands[0].st != St::absent; }
  bool gone() const;
};

// What a reopened store showed: every job of the model, and the store's counts.
struct Observation {
  std::map<uint64_t, Obs> jobs;
  std::map<uint64_t, std::string> wrong;  // jobs whose body, topic, ttr or policy differ
  uint64_t stored = 0;                    // jobs counted by stats()
  uint64_t pushed = 0, acked = 0, cancelled = 0, purged = 0;  // stats() totals
  uint32_t paused = 0;  // bit i: kTopics[i] is paused (stats())
  uint64_t limits = 0;  // bits 4i..4i+3: kTopics[i]'s limits, limits_code() (stats().flow)
  bool complete = false;
  // Schedules (load.h): each of the load's by number, and each occurrence job on kScheduleTopic
  // (its schedule's number and instant), taken in one consistent look (observe_schedules()).
  struct Schedule {
    bool paused = false;
    int rule = -1;  // rule_index()
    uint64_t fired = 0;
    std::optional<int64_t> last_fired;
    uint64_t skipped_overlap = 0, skipped_catch_up = 0;
    std::optional<int64_t> next;  // its next occurrence (ScheduleInfo::next's first)
  };
  std::map<uint64_t, Schedule> schedules;
  std::vector<std::pair<uint64_t, int64_t>> occurrences;
  std::vector<std::string> schedule_wrong;  // what the look found that the load never made
  uint64_t occurrence_jobs = 0;             // the jobs on kScheduleTopic, by stats() in that look
  uint64_t occurrences_counted = 0;         // ... by the stats() that gave the totals above
  // The wall clock (the store's) just before the open of the store looked at began.
  int64_t open_began = 0;
};

// What a schedule of the load may be (load.h), by the reports.
struct ScheduleModel {
  static constexpr uint8_t kMayExist = 1, kMayBeGone = 2;
  uint8_t exist_may = kMayBeGone;
  uint8_t pause_may = 1;  // Model::kMayRun / kMayPause
  uint8_t rule_may = 0;   // bit i: kScheduleRules[i]
  // The occurrences (instants, ns) whose job an ack that returned took, and those whose job an
  // ack in flight at a kill may have taken (until a reopened store shows which).
  std::set<int64_t> acked, maybe_acked;
  // Where the occurrences it accounts for may reach back to (schedule_accounting.cc): its next
  // occurrence less an interval for each occurrence counted (fired or skipped). Known exactly
  // from the last reopened store that showed it, or within its creation's call; unknown after a
  // replacement (its rule starts anew from the instant of the call) until a store shows it.
  std::optional<Span> reach;
  // Its counters (fired, skipped_overlap, skipped_catch_up) when the last reopened store showed
  // it paused, until a resume_schedule() on it begins.
  std::optional<std::array<uint64_t, 3>> paused_counters;
};

struct Model {
  uint64_t salt = 0;
  int cycle = 0;
  int64_t origin = 0;  // times in failure messages count from here
  std::string cycle_label;

  // Every job that may exist. Jobs a reopened store showed gone are dropped (a soak must not
  // grow without bound): an id below next_job that is not listed here is gone for good.
  std::unordered_map<uint64_t, JobModel> jobs;
  uint64_t next_job = 1;  // ids are never reused

  // Per worker thread: its call in flight (the intent), and the jobs a purge_dead or
  // requeue_dead_topic in flight found gone or requeued so far.
  std::array<std::optional<Record>, kWorkers> in_flight;
  std::array<std::vector<uint64_t>, kWorkers> listed;
  // Per topic: whether it may be running (kMayRun), paused (kMayPause), or either (after a kill
  // during a pause or resume, until a reopened store shows which).
  static constexpr uint8_t kMayRun = 1, kMayPause = 2;
  std::array<uint8_t, kTopics.size()> pause_may = [] {
    std::array<uint8_t, kTopics.size()> all{};
    all.fill(kMayRun);
    return all;
  }();
  // Per topic: the limits it may have (bit c: limits_code() c), one after a set or clear that
  // returned, more after a kill during one (until a reopened store shows which).
  std::array<uint16_t, kTopics.size()> limits_may = [] {
    std::array<uint16_t, kTopics.size()> all{};
    all.fill(1);
    return all;
  }();
  // The load's schedules by number, and the next number (numbers are never reused).
  std::map<uint64_t, ScheduleModel> schedules;
  uint64_t next_schedule = 1;
  // Per worker thread: the occurrence job (schedule, instant) its occ_intent call was delivered.
  std::array<std::optional<std::pair<uint64_t, int64_t>>, kWorkers> occ_taken;
  // Per worker thread: the span of a reserve() in flight at the last kill. It may have
  // delivered one job, unreported: that job may show one attempt more.
  std::array<std::optional<Span>, kWorkers> unreported;
  // Kills since the last look at a reopened store.
  bool unchecked = false;

  // Fences: each delivery's is above every fence of an earlier worker (fence_floor) and above
  // the last one its thread saw.
  uint64_t max_fence = 0, fence_floor = 0;
  std::array<uint64_t, kWorkers> last_fence{};
  // The worker threads that push and call (load.h): 1 to kMaxThreads, fixed for the model's
  // life (a job's thread and topic follow from it).
  size_t threads = kDefaultThreads;
  size_t owner(uint64_t job) const { return owner_of(job, threads); }
  size_t topic_index(uint64_t job) const { return topic_index_of(job, threads); }
  // Whether the workers run the consumer thread (load.h): the kill and power-loss cycles do.
  bool consumer = false;
  // The topics the consumers take: the second of threads 0 and 1 (the second topics of threads
  // 2 and up are their own threads', like their first).
  bool consumed_topic(size_t topic) const {
    return consumer && (topic == kConsumerTopic || topic == kConsumeTopic);
  }
  // The worker thread that makes the calls on a job (other than its push, by owner()), and
  // the one that reserves it.
  size_t handler_of(uint64_t job) const {
    if (!consumer) return owner(job);
    const size_t topic = topic_index(job);
    return topic == kConsumerTopic ? kConsumer : topic == kConsumeTopic ? kConsumeAcks : owner(job);
  }
  size_t reserver_of(uint64_t job) const {
    const size_t t = handler_of(job);
    return t == kConsumeAcks ? kConsumeReserves : t;
  }
  // RocksDB flushes and compactions running in the worker (bg_begin, bg_end).
  int background = 0;
  // Disk-tier refills writing in the worker (refill_begin, refill_end).
  int refilling = 0;
  // The totals a reopened store showed last (a crash never takes one back).
  Observation last_totals;
  bool totals_may_drop = false;  // power losses: a lost call is lost with its totals

  Observation pending;  // an observation arriving as `seen` records
  std::vector<std::string> problems;
  std::map<uint64_t, std::vector<std::string>> violations;  // by job, until report_violations()

  struct Event {
    int cycle;
    Record r;
  };
  std::unordered_map<uint64_t, std::vector<Event>> history;  // the last events of each job
  static constexpr size_t kHistoryCap = 24;

  struct Counts {
    uint64_t opened = 0, pushes = 0, batches = 0, deliveries = 0, acks = 0, nacks = 0,
             dead_letters = 0, touches = 0, releases = 0, cancels = 0, reschedules = 0,
             requeues = 0, purges = 0, purged = 0, ack_batches = 0, requeue_topics = 0,
             requeued = 0, pauses = 0, resumes = 0, seen_paused = 0, limits_set = 0,
             limits_cleared = 0, seen_limited = 0, lists = 0, listed = 0, refills = 0,
             early_deliveries = 0, kept_by_reservation = 0, consumed = 0, refused = 0,
             resolved_present = 0, resolved_missing = 0, seen_dead = 0, seen_expired = 0,
             observations = 0, unreported_deliveries = 0;
    // Schedules: calls that returned, occurrence jobs taken, and what reopened stores showed.
    uint64_t schedules_created = 0, schedules_replaced = 0, unschedules = 0,
             schedule_pauses = 0, schedule_resumes = 0, occurrences_acked = 0,
             seen_schedules = 0, seen_schedule_paused = 0, seen_fired = 0,
             seen_occurrences = 0, schedule_looks = 0;
    // ... and of those, the running ones whose next occurrence was after the open, the ones
    // whose counters and next occurrence were checked against where they reached before, and
    // the paused ones checked unchanged (schedule_accounting.cc).
    uint64_t caught_up = 0, reach_checks = 0, paused_unchanged = 0;
    std::array<uint64_t, 80> killed_in{};        // kills during a call, by its intent kind
    std::array<uint64_t, kWorkers> by_thread{};  // calls begun, by the thread that made them
  } counts;

  // Power-loss cycles: the records of the current cycle, in the order they arrived.
  bool keep_cycle_records = false;
  std::vector<Record> cycle_records;

  // Applies one record. False when it breaks a promise (the reason is in `problems`).
  bool apply(const Record& r);
  // The worker was killed at or before `kill_hi`: each call in flight may or may not have
  // happened. Returns whether one of them was a call that writes (not a reserve()).
  bool settle_in_flight(int64_t kill_hi);
  // A new worker (or the driver) starts calling: fences from here on are above all before.
  void begin_run();
  // A reopened store shows these topics paused (bit i: kTopics[i]), and no other.
  void take_pauses(uint32_t paused);

  void problem(const std::string& s);
  void problem_about(uint64_t job, const std::string& s) { problem(s + explain(job)); }
  void report_violations();
  void note(uint64_t job, const Record& r);
  std::string explain(uint64_t job) const;
  std::string rel(int64_t t) const { return rel_text(t, origin); }

  JobModel* find(uint64_t job);
  const Rec* live_rec(uint64_t job) const;  // the record of a live job, else null
  std::vector<uint64_t> live_jobs() const;  // sorted

 private:
  bool apply_intent(const Record& r);
  bool apply_outcome(const Record& r, const Record& intent);
  bool apply_token_outcome(const Record& r, const Record& intent, Rec& rec);
  bool apply_topic_jobs(const Record& r, const Record& intent);
  bool apply_batch_acks(const Record& r, const Record& intent);
  bool apply_delivery(const Record& r);
  // Schedules (schedules.cc): an intent or outcome of a schedule call, and one in flight at a
  // kill.
  bool apply_schedule_intent(const Record& r);
  bool apply_schedule_outcome(const Record& r, const Record& intent);
  bool apply_occurrence_delivery(const Record& r);
  bool apply_seen_schedule(const Record& r);  // into `pending`
  void settle_schedule(const Record& intent, int64_t kill_hi);
  void settle(const Record& intent, int64_t kill_hi);
};

// Checks an observation against the model (check.cc) and makes it the model's picture.
bool check_observation(Model& m, const Observation& o);
// Its schedules and occurrence jobs (schedules.cc), within check_observation().
void check_schedules(Model& m, const Observation& o);
// Within it, for each schedule a reopened store shows (schedule_accounting.cc): whether every
// occurrence of its rule due by the open is accounted for, fired or skipped, and none twice.
void check_occurrences_accounted(Model& m, uint64_t n, const Observation::Schedule& seen,
                                 int64_t open_began);
bool is_schedule_call(Kind intent);

}  // namespace delayq::crash
