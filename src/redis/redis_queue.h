// RedisQueue: the Queue interface over the backend's Lua scripts (src/redis/lua/).
//
// Each call finds its shard (keys.h: the job's, or every shard for the calls over topics), runs
// the script on the node that holds it (router.h) and reads the reply into a typed outcome
// (script_replies.h): the server makes every state change and every time decision, this side
// turns its answers into Deliveries, JobInfos and Statuses in the engine's words. The parts it
// composes:
//  - job_calls.h: calls about one job (ack, nack, get, ...) and the topic each needs up front;
//  - claim_ahead.h: the jobs a batched claim took ahead (claim_batch > 1);
//  - common/waiting.h (shared with the engine): blocking and async reserves, driven by look()
//    and try_claim() below;
//  - listener.h: the wake channel subscription that tells the waiters to look again.
//
// One class over several files, all named redis_queue*, one per kind of call, each holding the
// calls of its kind and the private helpers only they use (the private section below is grouped
// by file):
//  - redis_queue.cc: opening and closing (start, the destructor, close) and the calls about one
//    job (ack, nack, dead_letter, release, touch, cancel, get, reschedule, requeue_dead; about,
//    give_back);
//  - redis_queue_push.cc: push and push_batch (settle_group, next_id);
//  - redis_queue_ack_batch.cc: ack_batch, pipelined per shard (ack_shard, settle_acks);
//  - redis_queue_reserve.cc: reserves and the jobs kept ahead (reserve, reserve_async,
//    reserve_interruptible, reserve_batch_interruptible; try_claim, look, look_batch,
//    remember_topics, take_kept, keep);
//  - redis_queue_every_shard.cc: the calls run on every shard (list_dead, requeue_dead_topic,
//    purge_dead, pause and resume through set_paused, health, stats; over_dead,
//    add_shard_stats);
//  - redis_queue_limits.cc: set_topic_limits, clear_topic_limits (write_limits) and the limits'
//    part of stats (add_shard_flow).
//  - redis_queue_browse.cc: list_jobs, each shard's page merged (issue 22).
//  - redis_queue_schedules.cc: schedules (issue 23): the six calls, and firing them (a
//    compare-and-set of the record on the home shard, then the jobs' pushes);
//  - redis_queue_home.cc: limits on several shards, kept by the home shard (shard 0): the
//    admitted claim (claim_admitted), the places that follow a job's exits (follow_place), and
//    the places of jobs reserved before limits were set (seed_places).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/waiting.h"
#include "delayq/queue.h"
#include "delayq/redis.h"
#include "redis/args.h"
#include "redis/claim_ahead.h"
#include "redis/job_calls.h"
#include "redis/keys.h"
#include "redis/listener.h"
#include "redis/redis_rules.h"
#include "redis/router.h"
#include "redis/script_replies.h"
#include "schedule/record.h"
#include "schedule/rule.h"

namespace delayq::redis {

class RedisQueue final : public Queue {
 public:
  // `opt` checked by open_redis(); `ep` where its url points.
  RedisQueue(const RedisOptions& opt, Endpoint ep);
  ~RedisQueue() override;

  // Connects, checks the queue's shard count, draws this opening's number and starts the
  // listener and waiting threads.
  Status start();

  Result<std::string> push(JobSpec spec) override;
  std::vector<Result<std::string>> push_batch(std::vector<JobSpec> specs) override;
  Result<Delivery> reserve(std::span<const std::string> topics, Duration timeout) override;
  void reserve_async(std::vector<std::string> topics, Duration timeout,
                     std::function<void(Result<Delivery>)> done, std::stop_token stop) override;
  Status ack(const Token& t) override;
  std::vector<Status> ack_batch(std::span<const Token> tokens) override;
  Status nack(const Token& t, std::optional<Duration> delay) override;
  Status dead_letter(const Token& t) override;
  Status release(const Token& t) override;
  Result<TimePoint> touch(const Token& t) override;
  Status cancel(std::string_view id) override;
  Result<JobInfo> get(std::string_view id) override;
  Status reschedule(std::string_view id, TimePoint when) override;
  Result<std::vector<JobInfo>> list_dead(std::string_view topic, size_t limit) override;
  Status requeue_dead(std::string_view id) override;
  Result<uint64_t> requeue_dead_topic(std::string_view topic) override;
  Result<uint64_t> purge_dead(std::string_view topic) override;
  Result<JobPage> list_jobs(std::string_view topic, JobState state, size_t limit,
                            std::string_view cursor) override;
  Status pause(std::string_view topic) override { return set_paused(topic, true); }
  Status resume(std::string_view topic) override { return set_paused(topic, false); }
  Status set_topic_limits(std::string_view topic, const TopicLimits& limits) override;
  Status clear_topic_limits(std::string_view topic) override;
  Status health() override;
  Stats stats() override;
  void close() override;
  Status schedule(const ScheduleSpec& spec) override;
  Status unschedule(std::string_view id) override;
  Result<ScheduleInfo> get_schedule(std::string_view id) override;
  Result<SchedulePage> list_schedules(size_t limit, std::string_view cursor) override;
  Status pause_schedule(std::string_view id) override { return set_schedule_paused(id, true); }
  Status resume_schedule(std::string_view id) override { return set_schedule_paused(id, false); }

  // A test hook, never set in production (tests/backends/schedule_redis_test.cc): called by a
  // client firing a schedule once it won the compare-and-set of its occurrences (after_fire) and
  // once it pushed their jobs (after_push); true stops the firing there, as if the client died.
  enum class FireStep { after_fire, after_push };
  static inline std::atomic<bool (*)(FireStep)> fire_stop_hook{nullptr};

 protected:
  Result<Delivery> reserve_interruptible(std::span<const std::string> topics, Duration timeout,
                                         const std::atomic<bool>& stop) override;
  Result<std::vector<Delivery>> reserve_batch_interruptible(std::span<const std::string> topics,
                                                            size_t max, Duration timeout,
                                                            const std::atomic<bool>& stop) override;
  void wake_waiters() override { waiting_.interrupt(); }

 private:
  // ---- redis_queue.cc ----
  // A call about one job: refused after close(); refusals in the engine's words (JobCalls).
  Result<Reply> about(const JobCall& call, const std::vector<std::string>& args);
  // JobCalls::run, then, on several shards, the job's place on the home shard (follow_place()).
  Result<Reply> run_job(const JobCall& call, const std::vector<std::string>& args);
  // `first` failed because its connection broke after the call was sent (sent_and_lost()):
  // `send` again, a few times. Only for a call that is safe to repeat (a push with the caller's
  // id, an ack by token). A resend that could not be sent leaves the outcome unknown: `first`.
  Result<Reply> resend(Result<Reply> first, const std::function<Result<Reply>()>& send);
  // Jobs leased to this client, back to their topic: a failed attempt, as a lease running out.
  void give_back(const std::vector<Delivery>& jobs);

  // ---- redis_queue_ack_batch.cc ----
  // The ack_many runs of one shard (`topics`: each topic's tokens, as indexes into `tokens`),
  // pipelined; each token's Status into `out`.
  void ack_shard(const ShardKeys& sh, const std::map<std::string, std::vector<size_t>>& topics,
                 std::span<const Token> tokens, std::vector<Status>& out);
  void settle_acks(Result<Reply> r, const std::vector<size_t>& idx, std::span<const Token> tokens,
                   std::vector<Status>& out);

  // ---- redis_queue_push.cc ----
  // The results of one push_many run's jobs, from its reply or from why there is none.
  void settle_group(const Result<Reply>& r, const std::vector<size_t>& g,
                    std::vector<JobSpec>& specs, const std::vector<bool>& generated,
                    std::vector<Result<std::string>>& out);
  // The next generated id: a base-36 counter, then '-' and this opening's number.
  std::string next_id();
  // Whether job `id` is stored with this topic and body (a push sent again found its id taken).
  bool stored_already(std::string_view id, std::string_view topic, std::string_view body);

  // ---- redis_queue_reserve.cc ----
  // One pass of the claim script over the shards (Waiting's look for async waiters). `call`
  // names the reserve call (next_call()): a topic whose limits hold back a ready job is counted
  // as throttled once per call, however many times the call looks.
  Waiting::Attempt try_claim(std::span<const std::string> topics, const std::string& call,
                             uint32_t want = 1, std::vector<Delivery>* more = nullptr);
  // Waiting's look for a blocking reserve(): a job kept ahead, else a claim.
  Waiting::Attempt look(std::span<const std::string> topics, const std::string& call);
  // The same for consume()'s batches: a job kept ahead, else a claim of up to `max` jobs, the
  // first the result and the others appended to `more`.
  Waiting::Attempt look_batch(std::span<const std::string> topics, const std::string& call,
                              size_t max, std::vector<Delivery>* more);
  std::string next_call();
  // The topics of jobs handed out, for the calls about them (JobCalls).
  void remember_topics(const std::vector<Delivery>& jobs);
  std::optional<Delivery> take_kept(std::span<const std::string> topics);
  void keep(std::vector<Delivery> more);

  // ---- redis_queue_every_shard.cc ----
  // requeue_dead_topic / purge_dead: each shard, a batch per call until none are left.
  Result<uint64_t> over_dead(ScriptId script, std::string_view topic);
  // Adds the counts and totals of shard `sh` to `st`; an unreachable shard adds nothing.
  void add_shard_stats(const ShardKeys& sh, Stats& st);
  // pause() and resume(): the pause script on every shard (each shard's claims check its own
  // set of paused topics).
  Status set_paused(std::string_view topic, bool paused);

  // ---- redis_queue_limits.cc ----
  // The set_limits script on every shard: `text` the limits as lua/flow.lua reads them, or ""
  // to clear them.
  Status write_limits(std::string_view topic, const std::string& text);
  // Adds shard `sh`'s limited topics to st.flow; an unreachable shard adds nothing. On several
  // shards, the home shard's alone (the others keep no bucket or places).
  void add_shard_flow(const ShardKeys& sh, Stats& st);

  // ---- redis_queue_schedules.cc ----
  // A schedule's record as read from the home shard: its bytes (what sched.lua compares), the
  // record and its parsed rule.
  struct SchedRead {
    std::string bytes;
    schedule::StoredSchedule stored;
    schedule::Rule rule;
  };
  // How often a client on a clock other than a manual one looks for due schedules.
  static constexpr Duration kSchedulePoll = std::chrono::seconds(1);
  // How long an occurrence stays pending (fired, its push not recorded) before any client pushes
  // it in its firing client's place: that client died, or its push failed. Longer than a push
  // takes, and than the clocks of two clients may differ.
  static constexpr Duration kPendingGrace = std::chrono::seconds(30);
  // The home shard's keys of schedule `id`: the records, the running ones by next occurrence,
  // its recent jobs, the pending occurrences (lua/sched.lua).
  std::vector<std::string> sched_keys(std::string_view id) const;
  // An occurrence's job: `job` pushed with push_once.lua, whose marker lets it be pushed at most
  // once. True when this call pushed it, false when it had been (the marker, or a job with its
  // id).
  Result<bool> push_occurrence(JobSpec job);
  // Whatever this client's firing of `jobs` left to do once pushed: no longer pending, and the
  // markers of those it pushed itself (`pushed_now`) kept only kPendingGrace more.
  void settle_occurrences(const std::vector<std::string>& jobs, const std::vector<bool>& pushed_now);
  // Every occurrence pending longer than kPendingGrace, pushed (at most once: push_once.lua).
  void push_pending();
  // Empty when there is no such schedule. Errors: corrupt (a damaged record), unavailable.
  Result<std::optional<SchedRead>> read_sched(std::string_view id);
  // sched.lua: `next` replaces the record if it is still `expected` (nullptr: absent when `next`
  // is given, any when not, which deletes it); false when it changed meanwhile.
  // `fired`: the occurrences' jobs and their due times, recorded as pending with the record.
  Result<bool> cas_sched(std::string_view id, const std::string* expected,
                         const schedule::StoredSchedule* next,
                         const std::vector<std::pair<std::string, TimePoint>>& fired);
  // What is due of schedule `id` now: planned, compare-and-set, then its jobs pushed.
  Status fire_sched(std::string_view id);
  // Every schedule whose next occurrence has come (the zset), fired.
  void fire_schedules();
  void run_schedules(std::stop_token stop);  // the thread's loop (clocks other than manual)
  Status set_schedule_paused(std::string_view id, bool paused);
  Result<ScheduleInfo> sched_info(SchedRead& cur);
  bool job_lives(const std::string& id);
  Duration schedule_tick() const;

  // ---- redis_queue_home.cc ----
  bool sharded() const { return keys_.size() > 1; }
  // The claim on shard `sh` after its first look named topics with limits and ready jobs
  // (`first.admit`): admit on the home shard, claim with the grants, settle on the home shard.
  // The result is as the claim's; `next` also holds the wait admit gave for the topics it held
  // back.
  Result<Claimed> claim_admitted(const ShardKeys& sh, std::span<const std::string> topics,
                                 const std::string& call, uint32_t want, const Claimed& first);
  // The claim script on `sh` (`grants`: its ARGV[7] on several shards, empty on one).
  Result<Claimed> claim_on(const ShardKeys& sh, std::span<const std::string> topics,
                           const std::string& call, uint32_t want, const std::string& grants);
  // After `script` about job `id` of `topic` replied `r`: when it says the topic has limits,
  // the job's place on the home shard is freed (given its token back, for a release) or moved
  // (touch). Best effort: a place not freed frees itself at its deadline.
  void follow_place(ScriptId script, std::string_view topic, std::string_view id, const Reply& r);
  void place(const char* op, std::string_view topic, std::string_view id,
             const std::string& lease_us = {});
  // New limits on several shards: the topic's jobs reserved now take their places on the home
  // shard (ZADD NX, scored by their lease deadlines); cleared limits drop the places.
  Status seed_places(std::string_view topic);

  // The client's now: RedisOptions::clock, else the system clock. For input checks only: the
  // scripts decide on the server's clock (or on the one the client sends them, the test hook).
  TimePoint client_now() const {
    return opt_.clock ? opt_.clock->now() : SystemClock::instance().now();
  }

  // Refused: closed, or used in a child forked after the open (common/fork_guard.h).
  bool shut() const { return closed_.load() || waiting_.forked(); }
  Status shut_status() const { return waiting_.forked() ? waiting_.closed_status() : Waiting::closed_error(); }

  // What owns threads, locks and connections, in one allocation: in a child forked after the
  // open, the destructor leaves it as it is (common/fork_guard.h): joining, closing or freeing
  // any of it there could hang on a thread that stayed in the parent.
  struct Parts {
    Parts(const RedisOptions& opt, Endpoint ep, const KeyLayout& keys);
    Router router;
    ClaimAhead ahead;
    Listener listener;
    // Fires schedules on a clock other than a manual one (run_schedules()); stopped by close().
    std::jthread schedules;
    // Last: destroyed first, its thread joined before anything its looks use goes.
    Waiting waiting;
  };

  RedisOptions opt_;
  Rules rules_;
  KeyLayout keys_;
  std::unique_ptr<Parts> parts_;
  Router& router_ = parts_->router;
  CommonArgs common_;
  JobCalls jobs_;
  std::string id_tag_;  // this opening's number, in base 36 (start())
  std::atomic<uint64_t> next_id_{0};
  std::atomic<uint64_t> next_call_{0};  // next_call()'s counter
  std::atomic<uint32_t> next_shard_{0};  // where the next claim pass starts
  std::atomic<bool> closed_{false};
  bool started_ = false;  // start() succeeded: close() has stats to read and jobs to give back
  uint64_t clock_listener_ = 0;  // RedisOptions::clock's subscription, when it is manual
  std::mutex final_stats_mu_;
  std::optional<Stats> final_stats_;  // set by close()
  ClaimAhead& ahead_ = parts_->ahead;
  Listener& listener_ = parts_->listener;
  Waiting& waiting_ = parts_->waiting;
};

// Why a call failed after close().
inline Status closed_error() {
  return Waiting::closed_error();
}

}  // namespace delayq::redis
