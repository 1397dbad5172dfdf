// The crash harness's load: the jobs a worker pushes, and what both processes know of them.
//
// Each of the worker's `threads` threads (a run's setting, Model::threads: 1 to kMaxThreads, 2 in
// the in-tree tests) owns two topics and the jobs on them (ids with job % threads == its index),
// so that its calls never race another thread's on one job while their writes to the store
// overlap (and share fsyncs); with the consumers, threads 0 and 1 only push the jobs of their
// second topic, which the consumer thread or consume() take (below): their reservations race
// those pushes, as intended, and nothing else does. Everything about a job that the driver
// checks (topic, body, ttr, retry policy, priority) is a function of its number, the run's salt
// and the number of threads, so both processes know it without sending it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "delayq/job.h"
#include "delayq/schedule.h"

namespace delayq::crash {

using namespace std::chrono_literals;

// The number of racing worker threads: a run's setting, from 1 to kMaxThreads (which bounds the
// arrays kept per thread); the in-tree tests run kDefaultThreads.
constexpr size_t kMaxThreads = 8;
constexpr size_t kDefaultThreads = 2;
// The kill and power-loss cycles run one more worker thread, the consumer (its records' thread
// is kConsumer, numbered after every worker thread a run may have): it takes the jobs of the first
// thread's second topic as they are pushed, waiting in reserve(), so that it reserves jobs whose
// push has not returned yet (the group-commit race, docs/durability.md), and acks or releases them.
// The pushing thread makes no other call on the jobs or the topics the consumer takes
// (Model::handler_of).
constexpr size_t kConsumer = kMaxThreads;
constexpr size_t kConsumerTopic = 1;  // kTopics[1]: the second topic of thread 0
// And a consume() loop (one thread, its handler acking every job) takes the second topic of
// thread 1, as it is pushed too (with one worker thread no thread pushes there: the loop waits
// on an empty topic). Its handler reports each delivery when it gets it, its reserve
// as made by thread kConsumeReserves (from the previous handler's end), and its ack as made by
// thread kConsumeAcks (from the handler's end until the next delivery, which comes after it).
constexpr size_t kConsumeTopic = 3;
constexpr size_t kConsumeAcks = kMaxThreads + 1;
constexpr size_t kConsumeReserves = kMaxThreads + 2;
constexpr size_t kWorkers = kMaxThreads + 3;
inline const std::array<std::string, 2 * kMaxThreads> kTopics = {
    "crash-a", "crash-b", "crash-c", "crash-d", "crash-e", "crash-f", "crash-g", "crash-h",
    "crash-i", "crash-j", "crash-k", "crash-l", "crash-m", "crash-n", "crash-o", "crash-p"};
static_assert(kTopics.size() <= 32, "paused topics travel as the bits of a uint32_t");
static_assert(kWorkers < 256, "a record's thread is a uint8_t");
constexpr Duration kMaxPushDelay = 300ms;
// Most jobs hold a lease longer than a worker lives; one in four has a short one, so that leases
// run out while the worker runs (and, with kMaxAttempts, send jobs to the dead letters).
constexpr Duration kLongTtr = 200ms;
constexpr Duration kShortTtr = 15ms;
constexpr Duration kRetryDelay = 20ms;
// Small, so that dead letters happen: by nacks, by leases that run out, and by dead_letter().
constexpr uint32_t kMaxAttempts = 3;
constexpr size_t kLiveCap = 96;  // the worker stops pushing above this many jobs

uint64_t mix(uint64_t x);  // splitmix64's finaliser

TimePoint wall_now();
inline int64_t ns_of(TimePoint t) {
  return t.time_since_epoch().count();
}
inline TimePoint at_ns(int64_t ns) {
  return TimePoint(Duration(ns));
}
std::string ms_text(Duration d);

std::string job_id(uint64_t job);
std::optional<uint64_t> parse_job_id(std::string_view id);

// Where a job lives in a run of `threads` worker threads: the thread that pushes it, and its
// topic. A push_batch pushes a thread's next jobs: job, job + threads, ...
inline size_t owner_of(uint64_t job, size_t threads) {
  return job % threads;
}
inline size_t topic_index_of(uint64_t job, size_t threads) {
  return 2 * owner_of(job, threads) + (job / threads) % 2;
}
inline const std::string& topic_of(uint64_t job, size_t threads) {
  return kTopics[topic_index_of(job, threads)];
}
inline Duration ttr_of(uint64_t job) {
  return mix(job ^ 0x77) % 4 == 0 ? kShortTtr : kLongTtr;
}
// Its priority (JobSpec::priority): more urgent than the default, the default, or less urgent,
// so that ready jobs of a topic come out of order of push and every priority goes through the
// journal, a reopen and the disk tier.
inline constexpr std::array<uint32_t, 3> kPriorities = {0, kDefaultPriority, 5000};
inline uint32_t priority_of(uint64_t job) {
  return kPriorities[mix(job ^ 0x5e) % kPriorities.size()];
}
inline RetryPolicy harness_policy() {
  return RetryPolicy::fixed(kRetryDelay, kMaxAttempts);
}

// The limits a worker sets on its topics (set_topic_limits), one at a time or none: loose
// enough (many hand-outs a second, a large burst, more jobs at once than the load ever holds)
// that they never hold a job back, so that every other promise the harness checks is as
// without them; what is checked is that they survive a kill once set_topic_limits() returned.
inline const std::array<TopicLimits, 2> kTopicLimits = {
    TopicLimits{.rate = TopicLimits::Rate{.count = 100'000, .per = 1s, .burst = 100'000},
                .max_in_flight = 10'000},
    TopicLimits{.rate = TopicLimits::Rate{.count = 50'000, .per = 100ms, .burst = 20'000}}};
// A topic's limits as a number (an observed record's arg holds 4 bits per topic): 0 none,
// i + 1 kTopicLimits[i], kOtherLimits anything else.
constexpr uint8_t kOtherLimits = 15;
static_assert(kTopicLimits.size() < kOtherLimits);
uint8_t limits_code(const std::optional<TopicLimits>& l);

// Schedules (delayq/schedule.h), in the kill and power-loss cycles: thread 0 creates (under a
// new number each time, "sched-<n>", so that a schedule's occurrence jobs are its own and never
// an earlier one's of the same id), replaces, unschedules, pauses and resumes at most
// kMaxSchedules at once, with the rules of kScheduleRules, and takes their occurrence jobs
// (reserve, then ack at once) off kScheduleTopic, a topic no other call of the load touches.
inline const std::string kScheduleTopic = "crash-sched";
// A second or more apart, so that the occurrence jobs the load takes keep up with those fired:
// most fire as a schedule is created or replaced, or when a store opens (the catch-up).
inline constexpr std::array<const char*, 2> kScheduleRules = {"every 1s", "every 3s"};
// ... their intervals, for the arithmetic of a schedule's occurrences (schedule_accounting.cc).
inline constexpr std::array<Duration, kScheduleRules.size()> kScheduleIntervals = {1s, 3s};
constexpr size_t kMaxSchedules = 3;
std::string schedule_id(uint64_t n);
// The spec of schedule n with rule kScheduleRules[rule]: its catch-up policy by n (one, all of
// the latest 4, or skip), its jobs' body naming it.
ScheduleSpec schedule_spec(uint64_t n, size_t rule);
// The schedule number and instant (ns) of an occurrence job id of the load's schedules, or
// nullopt when `id` is not exactly occurrence_job_id(schedule_id(n), instant).
std::optional<std::pair<uint64_t, int64_t>> parse_occurrence(std::string_view id);
// The rule index of `rule` in kScheduleRules, or -1.
int rule_index(std::string_view rule);

// The body pushed for a job: empty, short, or up to 16 KiB of arbitrary bytes, with a NUL and a
// 0xff in every body of two bytes or more.
std::string body_of(uint64_t salt, uint64_t job);

// The spec of a job as the worker pushes it (in a run of `threads` worker threads).
JobSpec spec_of(uint64_t salt, uint64_t job, Duration delay, size_t threads);

}  // namespace delayq::crash
