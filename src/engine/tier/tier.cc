// The disk tier's horizon and refill (tier.h; docs/tiered-store.md).
#include "engine/tier/tier.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "common/rules.h"
#include "engine/shard.h"
#include "engine/test_hooks.h"

namespace delayq::engine {

namespace {

int64_t ns(TimePoint t) {
  return t.time_since_epoch().count();
}

// The first key past the jobs due before `t`; at the end of time (now + span saturated), past
// every key, so that jobs due at the end of time itself are loaded too.
FarKey up_to(TimePoint t) {
  return FarKey{t, t == TimePoint::max() ? std::numeric_limits<uint64_t>::max() : 0};
}

std::atomic<RefillObserver> refill_observer{nullptr};

// Tells the observer, if any, that a refill's write began, and that it ended when this goes.
class ObservedRefill {
 public:
  ObservedRefill() : f_(refill_observer.load(std::memory_order_acquire)) {
    if (f_ != nullptr) f_(true);
  }
  ~ObservedRefill() {
    if (f_ != nullptr) f_(false);
  }
  ObservedRefill(const ObservedRefill&) = delete;
  ObservedRefill& operator=(const ObservedRefill&) = delete;

 private:
  const RefillObserver f_;
};

}  // namespace

void set_refill_observer(RefillObserver observer) noexcept {
  refill_observer.store(observer, std::memory_order_release);
}

Tier::Tier(FarStore& store, Shards& shards, size_t shard_count, SkipReport skip)
    : store_(store),
      shards_(shards),
      skip_(std::move(skip)),
      span_(store.horizon_span()),
      budget_(span_ == Duration::max() ? 0 : store.memory_budget()),
      min_lead_(span_ / kMinLeadDivisor),
      fars_(shard_count) {
  // Every disk-only key is at or above the stored horizon, so any horizon below it is a true one
  // too. A store last opened with a longer span (or none: Duration::max()) stored a horizon far
  // ahead; starting from now + span instead lets the pushes beyond that go to disk again (the
  // jobs in memory beyond it stay there, as retried ones do).
  const FarKey now_plus_span = up_to(rules::plus(shards.now(), span_));
  set_horizon(std::min(store.stored_horizon(), now_plus_span));
}

Status Tier::open() {
  // A lowered horizon is stored before anything is pushed below the old one: the stored horizon
  // must stay a lower bound of every disk-only key, which is what the next open reads from.
  if (!(horizon_ < store_.stored_horizon())) return Status();
  FarBatch lowered;
  lowered.horizon = horizon_;
  Result<uint64_t> w = store_.write({}, lowered, Stats(), {});
  if (!w) return w.status();
  return shards_.store()->wait_durable(*w);
}

void Tier::set_horizon(const FarKey& k, bool limited) {
  horizon_ = k;
  horizon_ns_.store(ns(k.due), std::memory_order_release);
  // Refill once less than half the span is left (held by the budget: less than the minimum
  // lead); never again once the horizon is the end of time (a span of Duration::max(): every
  // job in memory).
  const int64_t lead = limited ? min_lead_.count() : span_.count() / 2;
  const int64_t at =
      k.due == TimePoint::max() ? std::numeric_limits<int64_t>::max() : ns(k.due) - lead;
  refill_at_ns_.store(at, std::memory_order_release);
}

uint64_t Tier::in_memory() const {
  uint64_t n = 0;
  for (const auto& s : shards_.all()) n += s->core.jobs();
  return n;
}

bool Tier::refill_due() const {
  // INT64_MAX is "never", even for a clock at the end of time (which reads INT64_MAX itself).
  const int64_t at = refill_at_ns();
  return at != std::numeric_limits<int64_t>::max() && ns(shards_.now()) >= at;
}

Status Tier::keep_ahead() {
  if (!refill_due()) return Status();
  std::lock_guard g(refill_mu_);
  while (refill_due())
    if (Status s = warm_then_step(); !s.ok())
      return shards_.stop(Status(s.is(Errc::corrupt) ? Errc::corrupt : Errc::io_error,
                                 "the store's disk tier could not be loaded, so the queue "
                                 "stopped (reopen it to continue from what was stored): " +
                                     s.to_string()));
  return Status();
}

FarShard& Tier::far(const Shard& s) {
  return fars_.at(s.index);
}

Result<std::optional<JobRecord>> Tier::find(FarShard& s, std::string_view id) {
  s.overlay.purge([this](uint64_t t) { return store_.written(t); });
  if (const FarOverlay::Entry* e = s.overlay.find(id)) return e->record;
  return store_.find(id);
}

Result<uint64_t> Tier::commit(FarShard& s, const Effects& fx, const std::vector<MetaPut>& meta) {
  std::vector<Change> changes = std::move(s.jobs);
  changes.insert(changes.end(), fx.changes.begin(), fx.changes.end());
  Stats totals = fx.totals;
  add_totals(totals, s.totals);
  Result<uint64_t> w = store_.write(changes, s.far, totals, meta);
  if (w)
    s.written_as(*w);
  else
    s.clear_staged();
  return w;
}

Status Tier::warm_then_step() {
  // The step reads with every shard locked: read the same records first without the locks, so
  // that the step finds their blocks in RocksDB's cache instead of waiting for the disk. (The
  // horizon is read through its atomic copy: a lower bound of it is all this needs.)
  const FarKey from{TimePoint(Duration(horizon_ns_.load(std::memory_order_acquire))), 0};
  const FarKey below = up_to(rules::plus(shards_.now(), span_));
  store_.prefetch(from, below, kStep + 1);
  return step();
}

// One step under every shard's lock, with the commit protocol of Shards::apply_all: load(), then
// one write that puts the moved jobs into "jobs" and takes them off the disk tier.
Status Tier::step() {
  std::optional<ObservedRefill> observed;  // from the write until it is durable
  return shards_.apply_all([&](TimePoint now) -> Result<std::optional<uint64_t>> {
    Result<Loaded> loaded = load(now);
    if (!loaded) return loaded.status();
    if (loaded->moved.changes.empty()) return std::optional<uint64_t>();
    observed.emplace();
    Result<uint64_t> w = store_.write(loaded->puts, loaded->moved, Stats(), {});
    if (!w) return w.status();
    for (const FarChange& c : loaded->moved.changes) far(shards_.of(c.record.id)).note(c, *w);
    return std::optional<uint64_t>(*w);
  });
}

// Loads the disk-only jobs keyed in [horizon, now + span), at most kStep of them, from the store
// and from the overlays (whose entries speak for their ids), in key order; raises the horizon to
// the first key not loaded.
Result<Tier::Loaded> Tier::load(TimePoint now) {
  const bool limited = budget_ != 0 && in_memory() >= budget_;
  const FarKey limit = up_to(rules::plus(now, limited ? 2 * min_lead_ : span_));
  if (!(horizon_ < limit)) {
    set_horizon(horizon_, limited);
    return Loaded();
  }
  std::vector<JobRecord> pending;
  for (FarShard& f : fars_) {
    f.overlay.purge([this](uint64_t t) { return store_.written(t); });
    f.overlay.for_each([&](const std::string&, const FarOverlay::Entry& e) {
      if (e.record && on_disk(far_key(*e.record)) && far_key(*e.record) < limit)
        pending.push_back(*e.record);
    });
  }
  std::sort(pending.begin(), pending.end(), by_far_key);
  std::vector<JobRecord> stored;
  Status read = store_.scan(horizon_, limit, [&](JobRecord&& r) {
    if (far(shards_.of(r.id)).overlay.find(r.id) != nullptr) return true;
    stored.push_back(std::move(r));
    return stored.size() <= kStep;
  });
  if (!read.ok()) return read;
  std::vector<JobRecord> taken;
  std::merge(std::make_move_iterator(pending.begin()), std::make_move_iterator(pending.end()),
             std::make_move_iterator(stored.begin()), std::make_move_iterator(stored.end()),
             std::back_inserter(taken), by_far_key);
  // At most a step, and, with a budget not yet reached, at most what it has room for (but one).
  const size_t room =
      budget_ != 0 && !limited
          ? static_cast<size_t>(std::clamp<uint64_t>(budget_ - in_memory(), 1, kStep))
          : kStep;
  FarKey next = limit;
  if (taken.size() > room) {
    next = far_key(taken[room]);
    taken.resize(room);
  }

  Loaded out;
  for (JobRecord& r : taken) {
    FarChange removal{false, r};
    JobRecord copy = r;
    if (Status st = shards_.of(r.id).core.restore(std::move(r), now); st.ok())
      out.puts.push_back(Change{copy.seq, std::move(copy)});
    else if (skip_ && st.is(Errc::corrupt))
      skip_(st.message() + " (dropped from the disk tier)");
    else
      return st;
    out.moved.changes.push_back(std::move(removal));
  }
  set_horizon(next, limited || (budget_ != 0 && next < limit));
  if (!out.moved.changes.empty()) out.moved.horizon = next;
  return out;
}

}  // namespace delayq::engine
