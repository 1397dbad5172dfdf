// The core's transitions: how a job moves between states and what keeps the wheel, the counts
// and the lines in step with it. Here live
//   - the timers: arm(), advance(), on_timer(), next_deadline(), to_tick_floor(), from_tick();
//   - the moves: schedule(), make_ready(), detach(), fail(), to_dead(), erase();
//   - the counts by state: state_count(), set_state(), delay_until(), uncount();
//   - the ready, dead and reserved lines: link(), link_in_due_order(), unlink(), and the lines by
//     priority: priority_line(), unlink_priority(), oldest_ready_due().
// For list_jobs() (core_browse.cc), the counts by state also keep two lists in step: a delayed
// job is in its second's list of its topic's DueBins (due_bins.h), and a reserved job in its
// topic's `reserved` line (joined in reserve() and restore(), left in the functions that move it
// out of reserved: set_state(), delay_until(), uncount()).
// The calls (core.cc) and restore() (core_records.cc) use only these to change a job's state,
// so every way a job can move is in this file.
#include "engine/core.h"

#include <algorithm>

namespace delayq::engine {

// ---- the timers ----

uint64_t Core::to_tick_floor(TimePoint t) const {
  const int64_t ns = t.time_since_epoch().count();
  if (ns <= 0) return 0;
  return static_cast<uint64_t>(ns) / tick_ns_;
}

TimePoint Core::from_tick(uint64_t tick) const {
  return TimePoint(Duration(static_cast<int64_t>(tick) * tick_ns_));
}


// Timers are exact. The wheel files a job under the tick in which its instant falls (rounding
// down); when that tick comes and the instant has not, the job waits in soon_, a small heap
// ordered by exact instant, and the driver sleeps until that instant. So the tick sets how
// finely the wheel sorts, not how late a job may fire: never early, and no rounding lateness.
void Core::arm(uint32_t j, TimePoint when) {
  Job& job = jobs_[j];
  ++job.timer_gen;
  const uint64_t tick = to_tick_floor(when);
  job.timer = wheel_.schedule(tick, j);
  const TimePoint at = from_tick(tick);
  if (!earliest_scheduled_ || at < *earliest_scheduled_) earliest_scheduled_ = at;
}

void Core::on_timer(uint32_t j, TimePoint at, TimePoint now) {
  Job& job = jobs_[j];
  if (job.state == JobState::delayed) {
    make_ready(j);
  } else if (job.state == JobState::reserved) {
    ++totals_.leases_expired;
    fail(j, std::nullopt, at, now, true);  // the retry counts from when the lease ran out
  }
}

void Core::advance(TimePoint now) {
  wheel_.advance(to_tick_floor(now), [&](uint64_t payload, uint64_t) {
    const uint32_t j = static_cast<uint32_t>(payload);
    Job& job = jobs_[j];
    job.timer = {};
    // Everything whose tick came goes through soon_, due now or not, so that the jobs of one
    // catch-up (and those already waiting there) come out in exact (instant, order) order.
    const TimePoint at = timer_instant(job);
    soon_.push_back(Soon{at, soon_seq_++, j, job.timer_gen});
    std::push_heap(soon_.begin(), soon_.end(), std::greater<>());
    if (at > now && (!earliest_scheduled_ || at < *earliest_scheduled_)) earliest_scheduled_ = at;
  });
  while (!soon_.empty() && soon_.front().at <= now) {
    const Soon s = soon_.front();
    std::pop_heap(soon_.begin(), soon_.end(), std::greater<>());
    soon_.pop_back();
    if (jobs_[s.job].timer_gen == s.gen) on_timer(s.job, s.at, now);
  }
  // A throttled topic's next token (core_limits.cc) is due: waiters look again.
  if (throttle_wake_ && *throttle_wake_ <= now) {
    throttle_wake_.reset();
    ++ready_added_;
  }
}

std::optional<TimePoint> Core::next_deadline() const {
  std::optional<TimePoint> next;
  if (const std::optional<uint64_t> t = wheel_.next_deadline()) next = from_tick(*t);
  // A stale soon_ entry only makes the driver wake once for nothing.
  if (!soon_.empty() && (!next || soon_.front().at < *next)) next = soon_.front().at;
  if (throttle_wake_ && (!next || *throttle_wake_ < *next)) next = throttle_wake_;
  return next;
}

// ---- the moves ----

void Core::make_ready(uint32_t j) {
  Job& job = jobs_[j];
  set_state(job, JobState::ready);
  link(line_of(job), j);  // its priority's line
  ++ready_added_;
}

void Core::schedule(uint32_t j, TimePoint due, TimePoint now) {
  mark(j);
  Job& job = jobs_[j];
  if (due <= now) {
    make_ready(j);  // before the due time changes: leaving delayed unbins the old one
    job.due = now;
    return;
  }
  delay_until(j, due);
  arm(j, job.due);
}

void Core::detach(uint32_t j) {
  Job& job = jobs_[j];
  if (job.timer) {
    wheel_.cancel(job.timer);
    job.timer = {};
  }
  ++job.timer_gen;  // a pending soon_ entry of this job is void now
  if (job.state == JobState::ready) unlink_ready(j);
  if (job.state == JobState::dead) unlink(topics_[job.topic].dead, j);
}

void Core::to_dead(uint32_t j, TimePoint at) {
  mark(j);
  Job& job = jobs_[j];
  set_state(job, JobState::dead);
  // A dead job has no lease: the field holds when it died (JobInfo::dead_since, and the record's
  // lease_deadline, docs/journal-format.md), the key the dead line is in (Core::browse).
  job.lease_deadline = at;
  link(topics_[job.topic].dead, j);
  ++totals_.dead_lettered;
}

void Core::fail(uint32_t j, std::optional<Duration> delay, TimePoint at, TimePoint now,
                bool in_catch_up) {
  Job& job = jobs_[j];
  const RetryPolicy& p = policies_[job.policy];
  if (job.attempts >= p.max_attempts) {
    to_dead(j, at);
    return;
  }
  // check_waits() keeps listed and capped waits within max_delay; the clamp covers the rest.
  const Duration d = std::min(delay ? *delay : backoff(p, job.attempts, rng_), opt_.limits.max_delay);
  ++totals_.retried;
  const TimePoint due = rules::plus(at, d);
  if (!in_catch_up || due > now) return schedule(j, due, now);
  // The retry fell due within the catch-up that ran the lease out (a ManualClock jump, a late
  // wake-up, the first advance after a reopen): it waits in soon_ for its instant like the
  // catch-up's other jobs, so that it becomes ready in its place in due order, with its own due
  // time, as if the clock had been read at every instant. Ready at once (as schedule() makes
  // it), it would go ahead of jobs due before it.
  mark(j);
  delay_until(j, due);
  soon_.push_back(Soon{due, soon_seq_++, j, ++job.timer_gen});
  std::push_heap(soon_.begin(), soon_.end(), std::greater<>());
}

void Core::erase(uint32_t j) {
  detach(j);
  Job& job = jobs_[j];
  uncount(job);
  ids_.erase(IdIndex::hash(job.id), j);
  if (opt_.record_changes) {
    erased_.push_back(job.seq);
    job.dirty = false;  // its entry in dirty_ (if any) is void now
  }
  job.body = std::string();
  job.next = free_;
  free_ = j;
}

// ---- the counts by state ----

uint64_t& Core::state_count(TopicStats& c, JobState s) {
  switch (s) {
    case JobState::delayed:
      return c.delayed;
    case JobState::ready:
      return c.ready;
    case JobState::reserved:
      return c.reserved;
    case JobState::dead:
      break;
  }
  return c.dead;
}

void Core::set_state(Job& j, JobState s) {
  changed(j.topic);
  TopicStats& c = counts(j);
  if (j.state == JobState::delayed) topics_[j.topic].due.remove(j.due, j, jobs_);
  if (j.state == JobState::reserved) {
    unlink(topics_[j.topic].reserved, j);
    if (topics_[j.topic].limiter) place_freed(j);  // limits
  }
  --state_count(c, j.state);
  ++state_count(c, s);
  j.state = s;
}

void Core::delay_until(uint32_t ji, TimePoint due) {
  Job& j = jobs_[ji];
  changed(j.topic);
  if (j.state == JobState::delayed) {
    topics_[j.topic].due.remove(j.due, j, jobs_);
  } else {
    if (j.state == JobState::reserved) {
      unlink(topics_[j.topic].reserved, j);
      if (topics_[j.topic].limiter) place_freed(j);  // limits
    }
    TopicStats& c = counts(j);
    --state_count(c, j.state);
    ++c.delayed;
    j.state = JobState::delayed;
  }
  j.due = due;
  topics_[j.topic].due.add(due, ji, jobs_);
}

void Core::uncount(Job& j) {
  changed(j.topic);
  if (j.state == JobState::delayed) topics_[j.topic].due.remove(j.due, j, jobs_);
  if (j.state == JobState::reserved) {
    unlink(topics_[j.topic].reserved, j);
    if (topics_[j.topic].limiter) place_freed(j);  // limits
  }
  --state_count(counts(j), j.state);
  unused_topic(j.topic);
  release_policy(j.policy);
}

// ---- the ready, dead and reserved lines ----

void Core::link(List& l, uint32_t j) {
  Job& job = jobs_[j];
  job.prev = l.tail;
  job.next = kNil;
  if (l.tail != kNil)
    jobs_[l.tail].next = j;
  else
    l.head = j;
  l.tail = j;
}

void Core::link_in_due_order(uint32_t j) {
  Job& job = jobs_[j];
  List& line = line_of(job);  // its priority's line
  // The line is in due order already (jobs join it as they fall due), and a released job was
  // at its front when reserved: the walk ends at once unless the clock stepped back.
  uint32_t at = line.head;
  while (at != kNil &&
         (jobs_[at].due < job.due || (jobs_[at].due == job.due && jobs_[at].seq < job.seq)))
    at = jobs_[at].next;
  if (at == kNil) return link(line, j);
  Job& next = jobs_[at];
  job.next = at;
  job.prev = next.prev;
  if (next.prev != kNil)
    jobs_[next.prev].next = j;
  else
    line.head = j;
  next.prev = j;
}

void Core::unlink(List& l, Job& job) {
  if (job.prev != kNil)
    jobs_[job.prev].next = job.next;
  else
    l.head = job.next;
  if (job.next != kNil)
    jobs_[job.next].prev = job.prev;
  else
    l.tail = job.prev;
  job.prev = job.next = kNil;
}

// ---- the lines by priority (core.h: PriorityLines) ----

Core::List& Core::priority_line(const Job& j) {
  Topic& t = topics_[j.topic];
  if (!t.more) t.more = std::make_unique<PriorityLines>();
  PriorityLines& m = *t.more;
  auto it = m.line.lower_bound(j.priority);
  if (it != m.line.end() && it->first == j.priority) return it->second;
  if (m.spare.empty()) return m.line.emplace_hint(it, j.priority, List{})->second;
  m.spare.key() = j.priority;  // an emptied line's node, reused
  m.spare.mapped() = List{};
  return m.line.insert(it, std::move(m.spare))->second;
}

void Core::unlink_priority(uint32_t j) {
  const Job& job = jobs_[j];
  PriorityLines& m = *topics_[job.topic].more;  // the job is in one of its lines
  auto it = m.line.find(job.priority);
  unlink(it->second, j);
  if (it->second.head == kNil) m.spare = m.line.extract(it);
}

std::optional<TimePoint> Core::oldest_ready_due(const Topic& t) const {
  std::optional<TimePoint> oldest;
  if (t.ready.head != kNil) oldest = jobs_[t.ready.head].due;
  if (!t.more) return oldest;
  for (const auto& [priority, line] : t.more->line)  // never empty
    if (!oldest || jobs_[line.head].due < *oldest) oldest = jobs_[line.head].due;
  return oldest;
}

}  // namespace delayq::engine
