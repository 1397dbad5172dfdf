// The engine's shards and the commit protocol of every call.
//
// A shard is one Core behind its own mutex. Shards::apply() runs one core call on one shard:
// under the lock it runs the call, takes the core's effects, queues the changed records for the
// durable store and publishes the shard's next deadline; after the lock it waits until the store
// has the changes, and only then tells waiting consumers and answers. A write the store refuses
// stops the engine (fail-stop): nothing a caller was told failed can be handed out.
// Shards::apply_all() is the same protocol for work that holds every shard's lock at once (the
// disk tier's refill).
//
// Where jobs live is the placement's (placement.h), chosen at open: it gives each call its
// `now` (a tiered placement first makes sure that no disk-only job is due by it) and queues the
// call's changes with whatever it staged beside them, in the same batch.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/waiting.h"
#include "delayq/clock.h"
#include "engine/core.h"
#include "engine/placement.h"
#include "engine/shard_mutex.h"
#include "engine/store_seam.h"

namespace delayq::engine {

struct Shard {
  Shard(size_t i, const CoreOptions& o, TimePoint now) : index(i), core(o, now) {}
  const size_t index;  // in Shards::all()
  ShardMutex mu;
  Core core;
  // Under mu: the shard's next deadline as last looked at (never left in the past by a call),
  // and a copy (ns since the epoch; INT64_MAX for none) that waiters read without the lock.
  std::optional<TimePoint> armed;
  std::atomic<int64_t> armed_ns{INT64_MAX};
  // Under mu: meta keys a call staged to go in the same batch as its changes (a fired
  // schedule's record, engine_schedules.cc); the placement takes them with the changes.
  std::vector<MetaPut> staged_meta;

  // Under mu, after a call at `now` that scheduled `earliest`: keeps `armed` current. True when
  // the call moved it earlier (waiters sleeping until the old one must look again).
  bool publish(const std::optional<TimePoint>& earliest, TimePoint now);

 private:
  void set_armed(std::optional<TimePoint> t);
};

class Shards {
 public:
  // `store`: where every call's changes go before it answers (null: the in-memory engine).
  // `waiting` is told of jobs made ready, deadlines moved earlier and a failed store. Every job
  // lives in memory until set_placement() says otherwise.
  Shards(Clock& clock, Waiting& waiting, std::unique_ptr<Persistence> store)
      : clock_(clock),
        waiting_(waiting),
        store_(std::move(store)),
        placement_(std::make_unique<MemoryPlacement>(*this)) {}

  void add(const CoreOptions& o, TimePoint now) {
    all_.push_back(std::make_unique<Shard>(all_.size(), o, now));
  }
  size_t size() const { return all_.size(); }
  Shard& operator[](size_t i) { return *all_[i]; }
  const std::vector<std::unique_ptr<Shard>>& all() const { return all_; }
  // The shard a job lives in: by hash of its id.
  size_t index_of(std::string_view id) const {
    return all_.size() == 1 ? 0 : std::hash<std::string_view>()(id) % all_.size();
  }
  Shard& of(std::string_view id) { return *all_[index_of(id)]; }
  Persistence* store() const { return store_.get(); }
  // Where the jobs live (placement.h): set once, at open, before the engine serves.
  Placement& placement() const { return *placement_; }
  void set_placement(std::unique_ptr<Placement> p) { placement_ = std::move(p); }
  Clock& clock() const { return clock_; }
  Waiting& waiting() const { return waiting_; }
  // The clock's reading for a call. A durable store keeps instants as nanoseconds since 1970
  // (docs/journal-format.md) and takes an earlier one for damage when it reopens: on a clock
  // that reads before 1970 it reads 1970-01-01T00:00:00Z instead, so that it never writes a time
  // it would refuse. Jobs are then late by as long as the clock is behind, never early.
  TimePoint now() const {
    const TimePoint t = clock_.now();
    return store_ && t < TimePoint{} ? TimePoint{} : t;
  }

  // Runs f(core, now) on the shard under its lock, with the commit protocol above. A call whose
  // changes the store refused returns the fail-stop error instead (when its result can hold a
  // Status).
  template <class F>
  auto apply(Shard& s, F&& f);
  // Runs f(now) with every shard's lock held (taken in order), at the clock's `now`, for work
  // that spans the shards and writes its own batch: f returns that batch's ticket (nullopt:
  // nothing written), or an error, returned at once. Then as apply(): the deadlines published,
  // the locks released, the write waited for, waiters told. A failed wait is returned as it is:
  // the caller decides how the engine stops.
  template <class F>
  Status apply_all(F&& f);
  // advance(now) on every shard: what fell due happens. The first store failure, if any.
  Status advance_all();
  // A write to the store failed after the core had applied the call: the engine stops serving
  // (waiting is closed with the returned io_error); what is on disk stays consistent.
  Status fail(const Status& why);
  // The engine stops serving with `why` (waiting is closed with it); returns it.
  Status stop(const Status& why);

 private:
  // The protocol's end, after the lock(s): waits for the ticket's write (its failure returned at
  // once), then tells waiters that jobs were made ready, or that a deadline moved earlier.
  Status finish(const std::optional<uint64_t>& ticket, bool made_ready, bool earlier);

  Clock& clock_;
  Waiting& waiting_;
  std::unique_ptr<Persistence> store_;
  std::vector<std::unique_ptr<Shard>> all_;
  std::unique_ptr<Placement> placement_;
};

template <class F>
auto Shards::apply(Shard& s, F&& f) {
  std::unique_lock lock(s.mu, std::defer_lock);
  const TimePoint now = placement_->lock_at_now(lock);
  auto result = f(s.core, now);
  auto stop_with = [&](const Status& stopped) {
    if constexpr (std::is_constructible_v<decltype(result), Status>) result = stopped;
  };
  Effects fx = s.core.take_effects();
  // Journal the call's changes: queued here, in call order, under the lock; written and waited
  // for below, after the lock, so that calls can share writes and fsyncs. The caller learns of
  // the call's effect only once it is durable. (Other callers may act on it a little earlier: a
  // consumer can reserve a job whose push is still being written. Its own reservation is written
  // after the push, so a crash loses both or neither.)
  std::optional<uint64_t> ticket;
  if (Result<std::optional<uint64_t>> w = placement_->queue(s, fx); w)
    ticket = *w;
  else
    stop_with(fail(w.status()));
  const bool earlier = s.publish(fx.earliest_scheduled, now);
  lock.unlock();
  if (Status d = finish(ticket, fx.made_ready, earlier); !d.ok()) stop_with(fail(d));
  return result;
}

template <class F>
Status Shards::apply_all(F&& f) {
  std::vector<std::unique_lock<ShardMutex>> locks;
  locks.reserve(all_.size());
  for (const auto& s : all_) locks.emplace_back(s->mu);
  const TimePoint now = this->now();
  Result<std::optional<uint64_t>> ticket = f(now);
  if (!ticket) return ticket.status();
  bool made_ready = false, earlier = false;
  for (const auto& s : all_) {
    const Effects fx = s->core.take_effects();
    made_ready = made_ready || fx.made_ready;
    earlier = s->publish(fx.earliest_scheduled, now) || earlier;
  }
  locks.clear();
  return finish(*ticket, made_ready, earlier);
}

}  // namespace delayq::engine
