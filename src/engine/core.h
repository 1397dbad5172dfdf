// The engine core: the whole queue as a single-threaded state machine.
//
// It owns the jobs table, the timing wheel (due times and lease deadlines), the per-topic ready
// lines (one per priority in use) and dead-letter lists, and the counters. Every call takes `now` and first advances the wheel
// to it, so a core needs no clock, no thread and no I/O: tests drive it with any sequence of
// instants, the Engine wraps it in a mutex and a timer, and the durable store journals what it
// reports. A call that fails changes nothing.
//
// One class, defined over six files, each owning one part of it (its first comment lists its
// methods):
//   core.cc              the calls: the constructor and every public call (push ... purge_dead,
//                        evict, seq_of), each a check followed by transitions;
//   core_transitions.cc  the transitions: timers (arm, advance, on_timer, next_deadline), the
//                        moves between states (schedule, make_ready, detach, fail, to_dead,
//                        erase), the counts by state and the ready and dead lines;
//   core_tables.cc       the tables: topic and policy interning, job slots, lookups by id and
//                        token;
//   core_records.cc      the records: take_effects() and what it journals, restore();
//   core_stats.cc        what stats() shows: add_stats(), publish(), the TopicView;
//   core_limits.cc       a limited topic's hold on reserve() (limiter.h): set_limiter(),
//                        throttled(), take_place(), place_freed(), wake_at().
//   core_browse.cc       list_jobs(): browse() and finish_restore().
// The private declarations below are grouped the same way. The retry wait is backoff.h.
// Over 400 lines: it is one class's declaration (the structures its files share and their
// inline hot-path helpers), split across files by definition, not by declaration.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/cursor.h"
#include "common/rules.h"
#include "delayq/detail/slab.h"
#include "delayq/error.h"
#include "delayq/job.h"
#include "delayq/limits.h"
#include "delayq/timing_wheel.h"
#include "engine/backoff.h"
#include "engine/core_view.h"
#include "engine/due_bins.h"
#include "engine/id_index.h"
#include "engine/record.h"

namespace delayq::engine {

class TopicLimiter;  // limiter.h

struct CoreOptions {
  Duration tick = std::chrono::milliseconds(1);  // 1 ms to 1 s
  Limits limits;
  uint64_t seed = 1;  // for retry jitter
  // Where delivery fences come from. Shards of one queue share one counter so that fences grow
  // across the whole queue; nullptr: the core's own.
  std::atomic<uint64_t>* fences = nullptr;
  // Where job sequence numbers come from (shared by shards, like fences); nullptr: the core's own.
  std::atomic<uint64_t>* seqs = nullptr;
  // Keep a list of changed records for take_effects() (the durable store needs it; the
  // in-memory engine does not pay for it).
  bool record_changes = false;
  // Jobs to make room for up front (EngineOptions::expected_jobs, this core's share); 0: none.
  uint32_t expected_jobs = 0;
  // Topics that hold no job and are not paused, kept for their lateness in stats() (the most
  // recently emptied ones); beyond this many, the one emptied longest ago is forgotten.
  uint32_t idle_topics = 1024;
};

// What calls did beyond their results (Core::take_effects()).
struct Effects {
  // The records that changed, one per job (its latest state), erases included. Empty unless
  // CoreOptions::record_changes.
  std::vector<Change> changes;
  // How much the totals of stats() grew with `changes`, to be journaled with them. Left zero
  // while `changes` is empty: growth then carries over to the next effects that have changes.
  Stats totals;
  // Jobs were made ready: consumers waiting for them should look again.
  bool made_ready = false;
  // The earliest wheel deadline scheduled (nullopt if none): a driver re-arms its timer only
  // when this moves its next deadline earlier.
  std::optional<TimePoint> earliest_scheduled;
};

// Empty when the options are usable, else what is wrong (the tick, or rules::check_limits).
std::string check_options(const CoreOptions& o);

class Core {
 public:
  Core(const CoreOptions& options, TimePoint now);
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  // Precondition: spec.id is not empty (the Engine generates missing ids).
  Status push(JobSpec&& spec, TimePoint now);
  // Errc::timeout when no listed topic has a ready job. Never waits.
  Result<Delivery> reserve(std::span<const std::string> topics, TimePoint now);
  Status ack(const Token& t, TimePoint now);
  Status nack(const Token& t, std::optional<Duration> delay, TimePoint now);
  Status dead_letter(const Token& t, TimePoint now);
  // Undoes a delivery: ready again in its due-order place, the attempt uncounted (see
  // Queue::release).
  Status release(const Token& t, TimePoint now);
  Result<TimePoint> touch(const Token& t, TimePoint now);
  Status cancel(std::string_view id, TimePoint now);
  Result<JobInfo> get(std::string_view id, TimePoint now);
  Status reschedule(std::string_view id, TimePoint when, TimePoint now);
  std::vector<JobInfo> list_dead(std::string_view topic, size_t limit, TimePoint now);
  Status requeue_dead(std::string_view id, TimePoint now);
  uint64_t requeue_dead_topic(std::string_view topic, TimePoint now);
  uint64_t purge_dead(std::string_view topic, TimePoint now);
  // Pauses or resumes a topic (Queue::pause): a paused topic's ready jobs stay in its line and
  // reserve() passes it over. A resume of a topic with ready jobs counts as jobs made ready
  // (Effects::made_ready), so that waiting consumers look again. The topic is checked by the
  // caller. Records no change: the engine journals the pause itself.
  void set_paused(std::string_view topic, bool paused, TimePoint now);
  // Pauses a topic as a store recorded it (recovery): like restore(), no advance().
  void restore_paused(std::string_view topic) {
    const uint32_t i = topic_index(topic);
    topics_[i].counts.paused = true;
    changed(i);
  }
  // Points a topic at its limiter (Queue::set_topic_limits), or at none (nullptr): reserve()
  // then passes the topic over while the limiter refuses. Counts as jobs made ready when the
  // topic has ready jobs (new limits may let more through). The limiter, shared by the shards,
  // outlives the pointer (the engine clears it under this shard's lock before freeing it).
  void set_limiter(std::string_view topic, TopicLimiter* limiter);
  // The topic's jobs reserved in this core (seeds a new limiter's in_flight).
  uint64_t reserved_of(std::string_view topic) const;

  // For a durable store's disk tier (docs/tiered-store.md): takes a delayed or ready job out of
  // this core, as cancel() would but counting nothing (it moves, it is not cancelled), and
  // returns its record. Records the erase of its seq. Errors: not_found, invalid_state (reserved
  // or dead: those stay in memory).
  Result<JobRecord> evict(std::string_view id, TimePoint now);
  // The job's seq (push order), if this core holds it.
  std::optional<uint64_t> seq_of(std::string_view id) const;

  // list_jobs() on this core (core_browse.cc). Where a page starts, for browse(): after `key`
  // (cursor.h: the state's order; shard ignored), and, for the lines (ready, dead), right after
  // anchors[0] (the job this core listed last) if it is still in its line, else at `next` (the
  // job that followed it) if that one is, else after the first of the older anchors still there.
  struct BrowseFrom {
    cursor::Key key;
    // Delayed and reserved: a job whose key equals `key` comes after it (this shard sorts after
    // the boundary's). Lines: unused (seqs are unique within a core).
    bool equal_is_after = false;
    std::vector<std::string> anchors;  // latest first
    std::string next;                  // empty: none
  };
  struct BrowseItem {
    cursor::Key key;  // shard left 0
    JobInfo info;
  };
  // Up to `limit` of `topic`'s jobs in `state`, in that state's order, after `from` (nullptr:
  // from the first). Cost, beyond the page:
  //   ready, dead: none while an anchor (or `next`) is still in its line; else the jobs of the
  //     line up to the cursor (walked from the line's head, skipped by key);
  //   reserved: the topic's reserved jobs on this core are sorted, O(r log page): r is bounded
  //     by the consumers holding leases;
  //   delayed: the jobs of each second visited (sorted per second) and the probes of
  //     DueBins::next_second() over empty time.
  std::vector<BrowseItem> browse(std::string_view topic, JobState state, const BrowseFrom* from,
                                 size_t limit, TimePoint now);
  // After the last restore(): puts each topic's dead line in the order the jobs died
  // (dead since, then seq), since records come back in seq order.
  void finish_restore();

  // Makes due jobs ready and handles leases that ran out, up to `now`.
  void advance(TimePoint now);
  // When advance() next has work: a lower bound, see TimingWheel::next_deadline().
  std::optional<TimePoint> next_deadline() const;
  // What the calls since the last take_effects() did beyond their results: the driver takes it
  // after each call, under the same lock, to journal, wake consumers and re-arm its timer.
  Effects take_effects();

  // Puts a job back as its record says (recovery). Nothing fires until the next advance(): then
  // pending jobs whose due time has passed become ready, all in due order, and reserved jobs
  // whose lease has passed run out (a failed attempt, retried per policy from the lease's end).
  // Records no change. A record no call could have written (see check_record in
  // core_records.cc) is refused and changes nothing.
  // Errors: corrupt, naming the record (its seq and id) and what is wrong with it.
  Status restore(JobRecord&& r, TimePoint now);

  // Adds totals kept by the store (recovery).
  void restore_totals(const Stats& t) { add_totals(totals_, t); add_totals(journaled_, t); }

  // Adds this core's counts and timing as of `now` into `s` (call advance(now) first: the
  // windows of what fires when expect no delayed job due by `now`).
  void add_stats(Stats& s, TimePoint now) const;
  // Copies into view() (its lock held) the topics that changed since the last publish(), and
  // drops those freed since: work in proportion to what changed, not to the topics held. The
  // engine's stats() calls it under the shard's lock, then view().add_to() without that lock.
  // Call advance(now) first, as for add_stats(). At most `limit` topics are done: true when
  // nothing is left, and then the view is the core's as of this call (a topic done in an earlier
  // call that changed since is listed again), to be read with this call's `now`.
  bool publish(size_t limit = SIZE_MAX);
  // The one part of a core used without the shard's lock: it has its own (TopicView::lock()).
  TopicView& view() { return view_; }
  // The totals of stats() (add_stats() adds them too).
  const Stats& totals() const { return totals_; }
  size_t jobs() const { return ids_.size(); }
  // The topic and retry-policy slots this core holds, used or free for reuse: at most the topics
  // with a job or paused plus CoreOptions::idle_topics, and the policies of live jobs plus the
  // default one, at their peak.
  size_t topic_slots() const { return topics_.size(); }
  size_t policy_slots() const { return policies_.size(); }
  const CoreOptions& options() const { return opt_; }

 private:
  static constexpr uint32_t kNil = 0xffffffffu;

  struct Job {
    std::string id;
    std::string body;
    TimePoint due{};
    TimePoint lease_deadline{};
    Duration ttr{0};
    uint64_t fence = 0;  // of the current delivery
    TimingWheel::Handle timer;
    // Bumped by every arm/detach: marks entries of `soon_` stale. It must survive the reuse of
    // a slot by a new job, or a stale entry of the old job would match the new one and fire it
    // early (found by the crash harness).
    uint32_t timer_gen = 0;
    uint32_t topic = 0;
    uint32_t policy = 0;
    uint32_t attempts = 0;
    // Links of the list the job is in: its topic's ready, dead or reserved line, or (delayed)
    // its second's list in the topic's DueBins.
    uint32_t prev = kNil, next = kNil;
    uint64_t seq = 0;                   // push order (the journal's key; ties in release())
    JobState state = JobState::delayed;
    bool dirty = false;  // listed in dirty_ (its record changed since take_changes())
    // JobSpec::priority: which ready line the job joins (line_of()). Kept by retries, release()
    // and requeue_dead(): it is the job's, like its id. In the padding after `dirty`.
    uint32_t priority = kDefaultPriority;
  };
  // A job is 144 bytes with or without `priority` (it fills the padding): a queue at the default
  // priority pays no memory for priorities.
  static_assert(sizeof(Job) == 144, "Core::Job grew: check the priority field's placement");

  struct List {
    uint32_t head = kNil, tail = kNil;
  };

  // A topic's ready jobs at priorities other than kDefaultPriority (those stay in Topic::ready),
  // made when the topic first sees such a priority. One line per priority that has ready jobs,
  // each in due order like Topic::ready; a line that empties is taken out (its map node kept in
  // `spare` for the next new priority, so that a steady flow of urgent jobs allocates nothing),
  // so the first line is never empty and front() needs no scan. A std::map rather than sorted
  // vectors: a topic may hold many distinct priorities (one per job, at worst), and each line
  // is then found and added in O(log lines).
  struct PriorityLines {
    using Lines = std::map<uint32_t, List>;
    Lines line;
    Lines::node_type spare;
  };

  // A job whose tick has come but whose exact instant has not. Ordered by (at, seq).
  struct Soon {
    TimePoint at;
    uint64_t seq;
    uint32_t job;
    uint32_t gen;
    bool operator>(const Soon& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  struct Topic {
    std::string name;
    List ready, dead;  // ready: the jobs at kDefaultPriority (other priorities: `more`)
    std::unique_ptr<PriorityLines> more;  // null until the topic's first other priority
    // The reserved jobs, in no particular order (Core::browse sorts them by lease deadline).
    List reserved;
    TopicStats counts;      // counts.paused: the topic hands out nothing
    DueBins due;            // the delayed jobs by due time (what fires when)
    Lateness first, retry;  // how late deliveries were handed out (reserve())
    // Holds no job and is neither paused nor limited: in the list of idle topics
    // (idle_prev/idle_next).
    bool idle = false;
    uint32_t idle_prev = kNil, idle_next = kNil;
    // Listed in changed_ (it changed since the last publish()); kept when the slot is freed, so
    // that a reused slot is listed once.
    bool changed = false;
    bool published = false;  // in the view: when freed, the view must drop it
    TopicLimiter* limiter = nullptr;  // its limits, if any (core_limits.cc); keeps the slot
    uint64_t jobs() const { return counts.delayed + counts.ready + counts.reserved + counts.dead; }
  };

  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  // ---- core.cc: the calls' own checks ----

  // What push() refuses `spec` for (rules::check_spec, or a duplicate id), or ok.
  Status check_push(const JobSpec& spec, uint64_t id_hash, TimePoint now) const;

  // ---- core_tables.cc (and inline): the tables ----

  int64_t lookup(std::string_view id, uint64_t h) const {
    return ids_.find(id, h, [this](uint32_t j) -> std::string_view { return jobs_[j].id; });
  }
  // The slot of topic `name`, made if need be, and no longer idle: the caller is about to give
  // it a job or pause it.
  uint32_t topic_index(std::string_view name);
  // A topic that holds no job and is neither paused nor limited joins the idle ones; beyond
  // CoreOptions::idle_topics of them, the one idle longest is freed.
  void unused_topic(uint32_t i);
  void unlink_idle(uint32_t i);
  // Notes that what stats() shows of topic `i` changed (see publish()).
  void changed(uint32_t i) {
    Topic& t = topics_[i];
    if (t.changed) return;
    t.changed = true;
    changed_.push_back(i);
  }
  void free_topic(uint32_t i);
  // The slot of retry policy `p` with one more job using it; release_policy() lets go of it.
  uint32_t policy_index(const RetryPolicy& p);
  void release_policy(uint32_t i);
  // A job whose token checks out, or the error that says why not.
  Result<uint32_t> holder(const Token& t);
  Result<uint32_t> find(std::string_view id) const;
  JobInfo info(uint32_t j) const;
  uint32_t alloc_job();

  // ---- core_transitions.cc (and inline): the transitions ----

  uint64_t to_tick_floor(TimePoint t) const;
  TimePoint from_tick(uint64_t tick) const;
  void arm(uint32_t j, TimePoint when);
  void on_timer(uint32_t j, TimePoint at, TimePoint now);
  // The instant a job's timer stands for: its due time, or its lease deadline.
  TimePoint timer_instant(const Job& j) const {
    return j.state == JobState::reserved ? j.lease_deadline : j.due;
  }
  // Moves a job to delayed at `due`, or ready if due <= now.
  void schedule(uint32_t j, TimePoint due, TimePoint now);
  void make_ready(uint32_t j);
  // Detaches a job from wherever it is (wheel, lists), leaving its state count in place.
  void detach(uint32_t j);
  // A failed attempt: retry after `delay` (or the policy's) or dead-letter when none remain.
  // `at`: when the attempt failed (a lease can run out before the call that notices it).
  // `in_catch_up`: called by advance() (a lease ran out), whose heap of instants then takes a
  // retry that fell due by `now`.
  void fail(uint32_t j, std::optional<Duration> delay, TimePoint at, TimePoint now,
            bool in_catch_up = false);
  // `at`: when it died (JobInfo::dead_since).
  void to_dead(uint32_t j, TimePoint at);
  void erase(uint32_t j);
  TopicStats& counts(const Job& j) { return topics_[j.topic].counts; }
  uint64_t& state_count(TopicStats& c, JobState s);
  // Moves a job to another state in its topic's counts (and out of its due bins when it leaves
  // delayed). Entering delayed goes through delay_until(), which also bins the due time.
  void set_state(Job& j, JobState s);
  // The job is delayed until `due` (from any state, delayed included): counts and bins follow.
  void delay_until(uint32_t j, TimePoint due);
  // The job leaves the counts (and bins) of its topic: it is gone.
  void uncount(Job& j);
  void link(List& l, uint32_t j);
  // Links `j` into its ready line (line_of()) before the first job due after it (ties: pushed
  // after it), where the engine would have put it had it never left.
  void link_in_due_order(uint32_t j);
  void unlink(List& l, uint32_t j) { unlink(l, jobs_[j]); }
  void unlink(List& l, Job& job);
  // The ready line of `j`'s priority: its topic's `ready` at kDefaultPriority (the default path:
  // one compare), else its line in `more`, made if need be (priority_line()).
  List& line_of(const Job& j) {
    if (j.priority == kDefaultPriority) return topics_[j.topic].ready;
    return priority_line(j);
  }
  List& priority_line(const Job& j);
  // Unlinks a ready job from its line (the default path: one compare more than unlink()); a
  // priority line it leaves empty is taken out (unlink_priority()).
  void unlink_ready(uint32_t j) {
    const Job& job = jobs_[j];
    if (job.priority == kDefaultPriority) return unlink(topics_[job.topic].ready, j);
    unlink_priority(j);
  }
  void unlink_priority(uint32_t j);
  // The topic's most urgent ready job (reserve()'s candidate), or kNil: the head of the first
  // line in (priority, line order). With no other priority ready, Topic::ready's head.
  uint32_t front(const Topic& t) const {
    if (!t.more || t.more->line.empty()) return t.ready.head;  // the default path
    const auto& [priority, line] = *t.more->line.begin();  // never empty
    return priority < kDefaultPriority || t.ready.head == kNil ? line.head : t.ready.head;
  }
  // The earliest due time among the topic's ready jobs (stats()' oldest_ready): the least of
  // the lines' heads. nullopt when none is ready.
  std::optional<TimePoint> oldest_ready_due(const Topic& t) const;
  // Whether `a` is handed out before `b` (both ready, any topics): priority, then due time.
  static bool more_urgent(const Job& a, const Job& b) {
    return a.priority != b.priority ? a.priority < b.priority : a.due < b.due;
  }

  // ---- core_limits.cc: a limited topic's hold on reserve() ----

  // Whether the limiter of `t` refuses a hand-out now; its next token's instant then becomes a
  // deadline (wake_at). `count`: count the refusal in its throttled counters.
  bool throttled(const Topic& t, TimePoint now, bool count);
  // Spends the token and place of handing out job `j` (true), or refuses (another shard took
  // the last one since throttled() looked).
  bool take_place(uint32_t j, TimePoint now);
  // Job `j`, reserved, leaves that state: its place is free again.
  void place_freed(const Job& j);
  // A throttled topic's next token is due at `at`: advance() past it counts as made ready.
  void wake_at(TimePoint at);
  // release(): the token job `j`'s delivery spent goes back to its topic's bucket.
  void give_back(const Job& j, TimePoint now);


  // ---- core_browse.cc: list_jobs() ----

  // A line of ready or dead jobs, and the priority its jobs' keys carry.
  struct Line {
    const List* list;
    uint32_t priority;
  };
  // The ready lines of topic `ti` in hand-out order: the priority lines below kDefaultPriority,
  // Topic::ready, then the lines above it (empty lines are never kept in `more`).
  std::vector<Line> ready_lines(uint32_t ti) const;
  // The priority of a ready job (its key's first part).
  static uint32_t ready_priority(const Job& j) { return j.priority; }
  cursor::Key key_of(const Job& j) const;
  // Appends to `out` the jobs of `lines` (in state `s`) after `from`, up to `limit` in all.
  void browse_lines(uint32_t ti, JobState s, const std::vector<Line>& lines,
                    const BrowseFrom* from, size_t limit, std::vector<BrowseItem>& out);
  void browse_delayed(uint32_t ti, const BrowseFrom* from, size_t limit, TimePoint now,
                      std::vector<BrowseItem>& out);
  void browse_reserved(uint32_t ti, const BrowseFrom* from, size_t limit,
                       std::vector<BrowseItem>& out);

  // ---- core_records.cc (and inline): the records ----

  // Notes that a job's record changed (when recording changes).
  void mark(uint32_t j) {
    if (!opt_.record_changes || jobs_[j].dirty) return;
    jobs_[j].dirty = true;
    dirty_.push_back(j);
  }
  JobRecord record_of(const Job& j) const;
  // take_effects()'s parts: the changed records, and the totals' growth.
  std::vector<Change> take_changes();
  Stats take_totals_delta();

  CoreOptions opt_;
  int64_t tick_ns_;
  TimingWheel wheel_;
  detail::Slab<Job, 10> jobs_;
  uint32_t free_ = kNil;
  IdIndex ids_;
  uint32_t last_topic_ = kNil;  // the topic of the previous push: skips a lookup
  std::vector<Topic> topics_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> topic_ids_;
  std::vector<uint32_t> free_topics_;
  uint32_t idle_head_ = kNil, idle_tail_ = kNil;  // the idle topics, emptied longest ago first
  uint32_t idle_count_ = 0;
  std::vector<uint32_t> changed_;  // topics that changed since the last publish()
  std::vector<std::string> gone_;  // published topics freed since the last publish()
  TopicView view_;
  std::vector<RetryPolicy> policies_;  // [0]: the default, always kept
  std::vector<uint32_t> policy_refs_;  // the jobs using each policy
  std::vector<uint32_t> free_policies_;
  std::unordered_multimap<size_t, uint32_t> policy_ids_;
  std::mt19937_64 rng_;
  std::atomic<uint64_t> own_fences_{0};
  std::atomic<uint64_t>* fences_;
  std::atomic<uint64_t> own_seqs_{0};
  std::atomic<uint64_t>* seqs_;
  uint64_t local_seq_ = 0;  // push order when the journal's sequence numbers are not needed
  std::vector<uint32_t> dirty_;
  std::vector<uint64_t> erased_;
  uint64_t ready_added_ = 0;
  std::vector<Soon> soon_;  // a min-heap (std::push_heap with greater<>)
  uint64_t soon_seq_ = 0;
  std::optional<TimePoint> earliest_scheduled_;
  std::optional<TimePoint> throttle_wake_;  // the earliest next token a reserve() was refused
  Stats totals_;
  Stats journaled_;  // totals_ as of the last take_totals_delta()
};

}  // namespace delayq::engine
