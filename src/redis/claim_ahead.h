// The claim-ahead cache (RedisOptions::claim_batch > 1): the jobs a batched claim took beyond the
// one asked for, kept in this client, leased already, for the next reserve() calls of their
// topic; and which topics this client reserves on its own, so that an ack of one of their jobs
// may take the next ones along (the ack_claim script).
//
// A kept job's lease is timed on the server's clock; the cache notes how much of it was left when
// the job arrived (server deadline minus this client's wall clock, read once) and the job's age
// on the steady clock, so that a step of this client's wall clock changes neither. A job with
// less than half its lease left is not handed out but given back. Giving back (a nack with delay
// 0: a failed attempt, as a lease running out) is the caller's: the cache only holds jobs.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "delayq/job.h"

namespace delayq::redis {

class ClaimAhead {
 public:
  // `claim_batch` as RedisOptions::claim_batch. Thread-safe.
  explicit ClaimAhead(uint32_t claim_batch) : claim_batch_(claim_batch) {}

  // How many jobs a reserve() of `topics` claims: claim_batch for one topic, else 1. A batched
  // reserve marks its topic as one this client reserves on its own (see refill_wanted()).
  uint32_t claim_size(std::span<const std::string> topics);
  // How many jobs an ack of a job of `topic` should take along: claim_batch when this client
  // reserves that topic on its own and keeps none of it, else 0 (also after close()).
  uint32_t refill_wanted(const std::string& topic);
  // A kept job of `topics` (a single topic) with more than half of its lease left. Those found
  // on the way with less are appended to `give_back`.
  std::optional<Delivery> take(std::span<const std::string> topics,
                               std::vector<Delivery>* give_back);
  // Keeps `jobs`, all of one topic, just taken. After close() they are returned instead, to be
  // given back.
  std::vector<Delivery> keep(std::vector<Delivery> jobs);
  // Keeps nothing from now on. Returns every job kept, to be given back.
  std::vector<Delivery> close();

 private:
  struct Kept {
    Delivery d;
    std::chrono::steady_clock::time_point taken;
    Duration lease_left;  // when it was taken
  };

  const uint32_t claim_batch_;
  std::mutex mu_;
  std::unordered_map<std::string, std::deque<Kept>> kept_;  // a key per topic reserved alone
  bool closed_ = false;                                     // under mu_
};

}  // namespace delayq::redis
