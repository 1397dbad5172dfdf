// ShardedEngine: the Engine behind delayq/engine.h. Each public call checks that the queue is
// open and runs on the shard that owns its job (shard.h: the commit protocol); consumers wait
// through the shared waiting component (common/waiting.h), told when to look again by the
// driver (driver.h). Opened by open_engine() (store_seam.h), on a durable store or none.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "common/waiting.h"
#include "delayq/engine.h"
#include "engine/driver.h"
#include "engine/limiter.h"
#include "engine/schedules.h"
#include "engine/shard.h"

namespace delayq::engine {

class ShardedEngine final : public Engine {
 public:
  // The engine's parts, not yet serving: open_engine() adds the shards, restores them, then
  // start()s it.
  ShardedEngine(const EngineOptions& options, Clock& clock, std::unique_ptr<Persistence> store);
  ~ShardedEngine() override;

  Result<std::string> push(JobSpec spec) override;
  std::vector<Result<std::string>> push_batch(std::vector<JobSpec> specs) override;
  Result<Delivery> reserve(std::span<const std::string> topics, Duration timeout) override;
  using Queue::reserve;
  void reserve_async(std::vector<std::string> topics, Duration timeout,
                     std::function<void(Result<Delivery>)> done, std::stop_token stop) override;
  using Queue::reserve_async;
  Status ack(const Token& token) override;
  Status nack(const Token& token, std::optional<Duration> delay = std::nullopt) override;
  Status dead_letter(const Token& token) override;
  Status release(const Token& token) override;
  Result<TimePoint> touch(const Token& token) override;
  Status cancel(std::string_view id) override;
  Result<JobInfo> get(std::string_view id) override;
  Status reschedule(std::string_view id, TimePoint when) override;
  Result<std::vector<JobInfo>> list_dead(std::string_view topic, size_t limit) override;
  Status requeue_dead(std::string_view id) override;
  Result<uint64_t> requeue_dead_topic(std::string_view topic) override;
  Result<uint64_t> purge_dead(std::string_view topic) override;
  // engine_browse.cc.
  Result<JobPage> list_jobs(std::string_view topic, JobState state, size_t limit,
                            std::string_view cursor = {}) override;
  Status pause(std::string_view topic) override { return set_paused(topic, true); }
  Status resume(std::string_view topic) override { return set_paused(topic, false); }
  // engine_limits.cc: as pause() (journaled first, then every shard), see limiter.h.
  Status set_topic_limits(std::string_view topic, const TopicLimits& limits) override;
  Status clear_topic_limits(std::string_view topic) override;
  // engine_schedules.cc: the table of schedules.h, each fired occurrence's job written with
  // the schedule's record in one batch.
  Status schedule(const ScheduleSpec& spec) override;
  Status unschedule(std::string_view id) override;
  Result<ScheduleInfo> get_schedule(std::string_view id) override;
  Result<SchedulePage> list_schedules(size_t limit, std::string_view cursor = {}) override;
  Status pause_schedule(std::string_view id) override { return set_schedule_paused(id, true); }
  Status resume_schedule(std::string_view id) override { return set_schedule_paused(id, false); }
  Stats stats() override;
  Status health() override;
  void close() override;
  Clock& clock() override { return clock_; }

  // Counters that must not repeat across restarts (fences, generated ids) and the shards'
  // shared job sequence numbers, for the cores' options.
  std::atomic<uint64_t>& fences() { return fences_; }
  std::atomic<uint64_t>& seqs() { return seqs_; }
  std::atomic<uint64_t>& next_id() { return next_id_; }
  Shards& shards() { return shards_; }
  // For tests (test_hooks.h): Schedules::index_damage() under the table's mutex.
  std::string schedule_index_damage();
  // Catches up with the time that passed while the queue was down (overdue jobs become ready in
  // due order, leases that ran out are retried, and journaled), then follows the clock.
  // Errors: the store could not record the catch-up.
  Status start();
  // Pauses the topics a store recorded as paused, before start(): nothing is journaled.
  void restore_paused(const std::vector<std::string>& topics);
  // Limits the topics as a store recorded them, before start(): nothing is journaled; each
  // bucket starts full, and in_flight counts the restored reserved jobs.
  void restore_limits(const std::vector<std::pair<std::string, TopicLimits>>& limits);
  // Puts back the schedules a store recorded (schedule/record.h), before start(), which fires
  // what fell due while the store was closed. A record that does not decode: corrupt, or with
  // `skip` reported and left out.
  Status restore_schedules(const std::vector<std::string>& records, const SkipReport& skip);

 protected:
  Result<Delivery> reserve_interruptible(std::span<const std::string> topics, Duration timeout,
                                         const std::atomic<bool>& stop) override;
  void wake_waiters() override { waiting_.interrupt(); }

 private:
  // One try to take a job of `topics`: one pass over the shards, from a rotating start so that
  // no shard is favoured.
  Waiting::Attempt try_reserve(std::span<const std::string> topics);
  Result<Delivery> wait_reserve(std::span<const std::string> topics, Duration timeout,
                                const std::atomic<bool>* stop);
  // Pushes `spec` through push_as(spec); a spec without an id gets generated ones, drawn until
  // one is free (a user may have taken one already). Both push() and push_batch() use it.
  template <class PushAs>
  Result<std::string> push_with_id(JobSpec&& spec, PushAs&& push_as);
  // f(shard, now) on the shard of job `id`, or the closed status.
  template <class F>
  auto on_job(std::string_view id, F&& f);
  // f(core, now) on the shard of the token's job; a not_found for a job on disk: stale_token.
  template <class F>
  auto on_token(const Token& t, F&& f);
  // One push on `s`, under its lock: where the placement says (placement.h).
  Status push_one(Shard& s, JobSpec&& spec, TimePoint now);
  // A count-returning core call on every shard, the counts added up. A shard whose journal
  // write fails ends it with that error.
  template <class F>
  Result<uint64_t> sum_over_shards(F&& call);
  // pause() and resume(): journaled first (so that a reservation made after a resume is
  // written after it), then every shard's core, under pause_mu_ so that the journal's order of
  // pauses and resumes of a topic is the cores' order.
  Status set_paused(std::string_view topic, bool paused);
  // set_topic_limits() (a value) and clear_topic_limits() (nullopt), checked: the same protocol
  // as set_paused(), under limits_mu_.
  Status change_limits(std::string_view topic, const std::optional<TopicLimits>& limits);
  // Points every shard's core at `limiter` (null: none) for `topic`, each under its lock; a new
  // limiter (`seed`) first counts the topic's jobs reserved in that shard.
  void point_shards(std::string_view topic, TopicLimiter* limiter, bool seed);
  // Schedules (engine_schedules.cc, schedule_firing.cc). Each under schedules_.mu.
  struct Firing;
  struct Occurrence;
  // Fires what is due of every running schedule, then publishes the next deadline. False when
  // something due could not fire (Schedules::start says what the thread does then).
  bool fire_schedules();
  // Fires what is due at `now` of each running schedule in `slots` (schedule/planner.h), the
  // occurrences' jobs in batches with their records (schedule_firing.cc), then indexes each
  // again. The first failure: a refused push, or the engine's stop.
  Status fire_due(std::span<ScheduleSlot* const> slots, TimePoint now);
  Status fire_plans(std::span<ScheduleSlot* const> slots, TimePoint now);
  // Pushes `batch` in one call on `shard`, each job's record staged beside it; each
  // Occurrence::pushed says how its push went. Not ok: the engine stopped, nothing was written.
  Status push_occurrences(Shard& shard, std::span<Occurrence> batch);
  // Writes `stored` as it is (a store: alone in its batch) and waits for it.
  Status write_schedule(const std::string& id, const schedule::StoredSchedule* stored);
  // Writes schedule records (a store: in one batch, nothing else in it) and waits for them.
  Status write_records(const std::vector<MetaPut>& records);
  // Whether the job `id` lives (delayed, ready or reserved).
  bool job_lives(const std::string& id);
  ScheduleInfo info_of(const ScheduleEntry& e);
  Status set_schedule_paused(std::string_view id, bool paused);
  // How late a schedule's occurrence may be handled and still be on time (planner.h's tick).
  Duration schedule_tick() const;
  // Adds Stats::flow: every limited topic as of now.
  void add_flow(Stats& st);
  bool closed() const { return waiting_.closed(); }
  Status closed_status() const { return waiting_.closed_status(); }

  const EngineOptions opt_;
  Clock& clock_;
  std::atomic<uint64_t> fences_{0};   // shared by the shards' cores
  std::atomic<uint64_t> seqs_{0};     // job sequence numbers (the journal's keys), shared too
  std::atomic<uint64_t> next_id_{1};  // generated ids
  std::atomic<uint32_t> next_shard_{0};
  std::atomic<bool> shut_{false};  // close() has run
  std::mutex pause_mu_;
  std::set<std::string, std::less<>> paused_;  // the paused topics; under pause_mu_
  // The limited topics' limiters (limiter.h), pointed at by the cores; under limits_mu_ (taken
  // before any shard's lock, and never under one).
  std::mutex limits_mu_;
  std::map<std::string, std::unique_ptr<TopicLimiter>, std::less<>> limiters_;
  // What owns threads, locks and the store, in one allocation: in a child forked after the open,
  // the destructor leaves it as it is (common/fork_guard.h), since joining, closing or freeing
  // any of it there could hang on a thread that stayed in the parent or touch the parent's store.
  struct Parts {
    Parts(Clock& clock, std::unique_ptr<Persistence> store, Duration timer_slack)
        : shards(clock, waiting, std::move(store)),
          driver(shards, clock, timer_slack),
          waiting([this] { return driver.next_look(); }) {}
    Shards shards;
    Driver driver;
    Waiting waiting;  // its thread, which calls into the shards, goes before them
    Schedules schedules;  // declared last: its thread, which calls into the shards, goes first
  };
  std::unique_ptr<Parts> parts_;
  Shards& shards_ = parts_->shards;
  Driver& driver_ = parts_->driver;
  Waiting& waiting_ = parts_->waiting;
  Schedules& schedules_ = parts_->schedules;
  uint64_t schedule_subscription_ = 0;  // a manual clock's moves fire the schedules
};

}  // namespace delayq::engine
