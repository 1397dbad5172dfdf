// After a power loss: is the store the queue as it was after some prefix of the calls?
//
// RocksDB recovers a prefix of its write-ahead log, and each call's changes reach the log
// atomically (alone, or in one write with the calls queued beside it) and in call order, so a
// lost call is always among the latest ones. explain_by_prefix() searches for such a prefix of
// each lane's calls (a worker thread's; with the consumers, also the consumer thread's and the
// consume() loop's: prefix_calls.h), the lanes fitting the order in which calls were made: a
// call that began after another lane's call had returned was written after it, so it cannot be
// kept while that one is lost. A worker thread's lane holds the calls on its jobs and topics; a
// consumer's lane the calls on the jobs of the topic it takes, pushed by a worker thread: a job
// it took must have its push kept, and a job pushed in the cycle that it did not take is in the
// store exactly when its push was kept. An ack_batch is one ack per token, in order. On a store
// of several shards a push_batch is one push per job and a purge_dead or requeue_dead_topic one
// write per shard, so either may be kept in part. A pause or resume is one write (when it
// changes the topic): the topic's state must be what the kept calls left. Thread 0's schedule
// calls (load.h) are in its lane too: each schedule there or gone, paused or running and with
// its rule as the kept calls left it (a pause_schedule or resume_schedule that changed nothing
// writes nothing), and each occurrence job that lane took and acked in the cycle acked exactly
// when the store shows that ack kept (PrefixSchedules::acks; the occurrences the engine fires on
// its own are no call of any lane, and their jobs are not the load's: the search never sees them).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "model.h"

namespace delayq::crash {

// The lanes whose calls the search cuts: one per worker thread a run may have (those of a run
// with fewer threads make no calls), the consumer thread's and the consume() loop's.
constexpr size_t kLanes = kMaxThreads + 2;
constexpr size_t kConsumerLane = kMaxThreads, kConsumeLane = kMaxThreads + 1;
std::string lane_name(size_t lane);  // "worker thread 0", "the consumer thread", ...

struct PrefixVerdict {
  bool explained = false;  // some prefix of the calls (per thread, fitting their order) fits
  uint64_t lost = 0;       // answered calls that changed the queue and were lost, at the least
  uint64_t answered = 0;   // answered calls that changed the queue, kept or lost
  // The best explanation: calls kept, calls made, and answered writes lost, per lane.
  std::array<size_t, kLanes> kept{};
  std::array<size_t, kLanes> calls{};
  std::array<uint64_t, kLanes> lost_in{};
  std::vector<std::string> lost_calls;  // the best explanation's lost answered calls (a few)
  uint64_t lost_schedule_calls = 0;     // ... of them, schedule calls (occurrence acks included)
  std::string why;                      // !explained: what nothing explains
  std::vector<uint64_t> suspects;       // jobs that `why` is about
};

// Is `seen` (every job of `before` and every job pushed in `records`) the queue as it was after
// some prefix of the calls in `records`, starting from `before`? A thread's last call may have
// been in flight when the worker was killed (at `kill_hi` at the latest): kept or not (an ack in
// flight may have been refused, a reserve in flight may have delivered any one job of its
// thread's). `origin`: for times in messages. `consumer`: the workers ran the consumer thread
// and the consume() loop (Model::consumer); `threads`: the worker threads (Model::threads).
struct PrefixPauses {
  uint32_t before = 0;  // the paused topics before the cycle (bit i: kTopics[i])
  uint32_t seen = 0;    // ... in the store after it
};
// A schedule as the search compares it (load.h's schedules, by number).
struct SchedState {
  bool paused = false;
  int rule = -1;  // rule_index()
};
struct PrefixSchedules {
  std::map<uint64_t, SchedState> before;  // those there before the cycle (every one exactly)
  std::map<uint64_t, SchedState> seen;    // ... in the store after it
  // The occurrences (schedule, instant) taken in the cycle, by whether the store shows the ack
  // kept; one missing here may have been either (its schedule is gone: nothing tells).
  std::map<std::pair<uint64_t, int64_t>, bool> acks;
};
PrefixVerdict explain_by_prefix(const std::unordered_map<uint64_t, JobModel>& before,
                                const std::vector<Record>& records,
                                const std::map<uint64_t, Obs>& seen, int64_t kill_hi, size_t shards,
                                int64_t origin, const PrefixPauses& pauses = {},
                                bool consumer = false, size_t threads = kDefaultThreads,
                                const PrefixSchedules& schedules = {});

}  // namespace delayq::crash
