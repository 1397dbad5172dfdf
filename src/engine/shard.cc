// The shards' non-template parts (see shard.h).
#include "engine/shard.h"

namespace delayq::engine {

void Shard::set_armed(std::optional<TimePoint> t) {
  armed = t;
  armed_ns.store(t ? t->time_since_epoch().count() : INT64_MAX);  // seq_cst: see waiting.h
}

bool Shard::publish(const std::optional<TimePoint>& earliest, TimePoint now) {
  if (armed && *armed <= now) {
    // Every call catches the core up to `now`, so that deadline is behind us now.
    set_armed(core.next_deadline());
    return false;
  }
  if (earliest && (!armed || *earliest < *armed)) {
    set_armed(earliest);
    return true;
  }
  return false;
}

Status Shards::advance_all() {
  Status first;
  for (auto& s : all_) {
    const Status st = apply(*s, [](Core& c, TimePoint now) {
      c.advance(now);
      return Status();
    });
    if (first.ok()) first = st;
  }
  return first;
}

Status Shards::finish(const std::optional<uint64_t>& ticket, bool made_ready, bool earlier) {
  // A failed write wakes nobody: the caller stops the engine, which wakes every waiter.
  if (ticket)
    if (Status d = store_->wait_durable(*ticket); !d.ok()) return d;
  if (made_ready) waiting_.ready();
  // Waiters sleep until the old deadline: let them look again (a manual clock wakes them itself).
  if (earlier && !clock_.manual()) waiting_.sooner();
  return Status();
}

Status Shards::stop(const Status& why) {
  // Waiters, blocked and async, learn it now, not when their wait runs out.
  waiting_.close(why);
  return why;
}

Status Shards::fail(const Status& why) {
  return stop(Status(Errc::io_error,
                     "the store could not be written, so the queue stopped (reopen it to "
                     "continue from what was stored): " +
                         why.to_string()));
}

}  // namespace delayq::engine
