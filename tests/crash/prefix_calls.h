// The calls of a power-loss cycle as the prefix search (prefix.cc) sees them: one list per lane
// of calls that are written in order. Internal to prefix.cc.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "prefix.h"
#include "record.h"

namespace delayq::crash {

// The lanes (prefix.h): the worker threads, the consumer thread, and the consume() loop (whose
// reserves and acks are reported as two threads, kConsumeReserves and kConsumeAcks, but are one
// thread's calls, each begun after the last returned). Each lane's calls are written to the
// store in the order it made them.
size_t lane_of_thread(size_t thread);

// One call of a lane: its intent and, if it returned before the kill, its outcome. An in-flight
// call gets an outcome made up as if it succeeded at the kill (`answered` false): kept, it is
// the call done; not kept, the call not done or refused (which changes nothing).
struct Call {
  Record intent;
  std::optional<Record> done;
  bool answered = false;
  std::vector<uint64_t> listed;  // purge_dead, requeue_dead_topic: the jobs it deleted, requeued
  size_t intent_at = 0;          // positions in the cycle's records (the order they were sent)
  size_t done_at = SIZE_MAX;
  uint64_t item = 0;                 // push_batch split into pushes: this call's job
  bool flips = false;  // a pause or resume answered that changed the topic's (schedule's) state
  size_t threads = kDefaultThreads;  // the run's worker threads (a push_batch's stride)
  // The reserve and ack of an occurrence job: the occurrence (schedule, instant) it was given.
  std::optional<std::pair<uint64_t, int64_t>> occurrence;
};

// Each lane's calls, from the cycle's records. In-flight calls get a made-up outcome. An
// ack_batch is one ack per token, and on several shards a push_batch one push per job.
// `paused_before`: the paused topics before the cycle (bit i: kTopics[i]), to tell which
// pauses and resumes changed anything; `sched_before`: the same for the schedules'.
// `threads`: the run's worker threads.
std::array<std::vector<Call>, kLanes> calls_of(const std::vector<Record>& records, int64_t kill_hi,
                                               size_t shards, uint32_t paused_before,
                                               size_t threads,
                                               const std::map<uint64_t, SchedState>& sched_before);

// Whether the call was answered and changed the queue: one atomic write to the store.
bool answered_write(const Call& c);
// The jobs a call changes.
std::vector<uint64_t> jobs_of(const Call& c);
std::string call_text(const Call& c);

}  // namespace delayq::crash
