// JobRecord: everything about a job that must survive a restart, and Change: what one call (or
// one wake-up) did to the records. The durable store writes changes to its journal and feeds
// records back through Core::restore() when it opens.
//
// What is not recorded, because it follows from a record: whether a job whose due time has passed
// is ready yet (delayed and ready are both "waiting for `due`"), its place in the ready line (its
// priority's line, in due order), its timers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "delayq/job.h"

namespace delayq::engine {

struct JobRecord {
  uint64_t seq = 0;  // push order, unique in the queue: the journal's key
  std::string id;
  std::string topic;
  std::string body;
  JobState state = JobState::delayed;  // delayed and ready mean the same here
  TimePoint due{};
  TimePoint lease_deadline{};  // meaningful when reserved
  Duration ttr{0};
  uint32_t attempts = 0;
  uint64_t fence = 0;  // of the current or last delivery
  RetryPolicy retry;
  uint32_t priority = kDefaultPriority;  // JobSpec::priority
  bool operator==(const JobRecord&) const = default;
};

// The running totals of stats() (every counter, not the per-topic counts) are kept by the
// journal too, so that they survive a restart. Applies `f(a.field, b.field)` to each counter, in
// the order the journal stores them (a counter added later goes last: older stores lack it).
template <class F>
void for_each_total(Stats& a, const Stats& b, F f) {
  f(a.pushed, b.pushed);
  f(a.delivered, b.delivered);
  f(a.acked, b.acked);
  f(a.retried, b.retried);
  f(a.dead_lettered, b.dead_lettered);
  f(a.leases_expired, b.leases_expired);
  f(a.cancelled, b.cancelled);
  f(a.requeued, b.requeued);
  f(a.purged, b.purged);
  f(a.released, b.released);
}
inline void add_totals(Stats& into, const Stats& more) {
  for_each_total(into, more, [](uint64_t& x, uint64_t y) { x += y; });
}

// The engine's counters that must never go back, so they cannot come from the wall clock alone,
// which can step back: the last delivery fence issued and the next generated id to draw; and the
// last job seq handed out, which a store whose disk-only jobs are not read at open cannot learn
// from its records (docs/tiered-store.md). The durable store keeps the highest values it was
// given, written with the changes that used them, and a reopened engine continues above them.
struct Counters {
  uint64_t fences = 0;
  uint64_t next_id = 0;
  uint64_t seqs = 0;
  bool operator==(const Counters&) const = default;
};

struct Change {
  uint64_t seq = 0;
  std::optional<JobRecord> record;  // nullopt: the job is gone (acked, cancelled, purged)
};

// A put (a value) or a delete (nullopt) of a key of the store's family "meta", written in the
// same atomic batch as the changes it comes with: a schedule's record (schedule/record.h) with
// the job of the occurrence it fired.
struct MetaPut {
  std::string key;
  std::optional<std::string> value;
};

}  // namespace delayq::engine
