// After a power loss: is the store the queue as it was after some prefix of the calls?
//
// RocksDB recovers a prefix of its write-ahead log, and each call's changes reach the log
// atomically (alone, or in one write with the calls queued beside it) and in call order, so a
// lost call is always among the latest ones. explain_by_prefix() searches for such a prefix of
// each worker thread's calls (the threads own disjoint jobs), the two fitting the order in which
// calls were made: a call that began after another thread's call had returned was written after
// it, so it cannot be kept while that one is lost. An ack_batch is one ack per token, in order.
// On a store of several shards a push_batch is one push per job and a purge_dead or
// requeue_dead_topic one write per shard, so either may be kept in part. A pause or resume
// changes no job: whether it was kept is not part of the search (the Sync::always check, which
// loses nothing, checks it).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "model.h"

namespace delayq::crash {

struct PrefixVerdict {
  bool explained = false;  // some prefix of the calls (per thread, fitting their order) fits
  uint64_t lost = 0;       // answered calls that changed the queue and were lost, at the least
  uint64_t answered = 0;   // answered calls that changed the queue, kept or lost
  std::array<size_t, kThreads> kept{};   // the best explanation: calls kept, per thread
  std::array<size_t, kThreads> calls{};  // calls made, per thread
  std::vector<std::string> lost_calls;   // the best explanation's lost answered calls (a few)
  std::string why;                       // !explained: what nothing explains
  std::vector<uint64_t> suspects;        // jobs that `why` is about
};

// Is `seen` (every job of `before` and every job pushed in `records`) the queue as it was after
// some prefix of the calls in `records`, starting from `before`? A thread's last call may have
// been in flight when the worker was killed (at `kill_hi` at the latest): kept or not (an ack in
// flight may have been refused, a reserve in flight may have delivered any one job of its
// thread's). `origin`: for times in messages.
PrefixVerdict explain_by_prefix(const std::unordered_map<uint64_t, JobModel>& before,
                                const std::vector<Record>& records,
                                const std::map<uint64_t, Obs>& seen, int64_t kill_hi, size_t shards,
                                int64_t origin);

}  // namespace delayq::crash
