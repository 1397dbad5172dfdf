// Predicted records and what a store may show of them (job_state.h).
#include "job_state.h"

#include <algorithm>
#include <cstdio>

#include "load.h"

namespace delayq::crash {

const char* st_text(St s) {
  switch (s) {
    case St::absent:
      return "absent";
    case St::waiting:
      return "waiting";
    case St::reserved:
      return "reserved";
    case St::dead:
      return "dead";
  }
  return "?";
}

namespace {

// The lease ran out at some instant of r.lease and was handled by the instant the store looked
// (within w): after the last attempt the job is dead, otherwise it is retried kRetryDelay after
// the lease ran out, or at the handling if that came later (a store reopened long after).
Rec expired(const Rec& r, Span w) {
  Rec e = r;
  e.lease = Span{};
  e.fence = 0;
  if (r.attempts >= kMaxAttempts) {
    e.st = St::dead;
    return e;
  }
  e.st = St::waiting;
  const Span retry = r.lease.plus(kRetryDelay);
  e.due = Span{retry.lo, std::max(retry.hi, w.hi)};
  return e;
}

bool shows_exactly(const Rec& p, const Obs& o) {
  if (p.st == St::absent) return !o.exists;
  if (!o.exists || o.attempts != p.attempts || !p.due.has(o.due)) return false;
  switch (p.st) {
    case St::waiting:
      // Delayed until its due time, ready from then on.
      if (o.state == JobState::delayed) return o.due > o.when.lo;
      return o.state == JobState::ready && o.due <= o.when.hi;
    case St::reserved:
      return o.state == JobState::reserved && p.lease.has(o.lease) && o.lease > o.when.lo;
    case St::dead:
      return o.state == JobState::dead;
    case St::absent:
      break;
  }
  return false;
}

}  // namespace

std::vector<Rec> project(const Rec& r, uint64_t job, Span w) {
  (void)job;
  if (r.st != St::reserved || r.lease.lo > w.hi) return {r};
  if (r.lease.hi <= w.lo) return {expired(r, w)};
  return {r, expired(r, w)};
}

bool shows(const Rec& r, uint64_t job, const Obs& o) {
  for (const Rec& p : project(r, job, o.when))
    if (shows_exactly(p, o)) return true;
  return false;
}

bool shows_after_unreported_delivery(const Rec& r, uint64_t job, const Obs& o, Span window) {
  if (!o.exists || o.attempts == 0) return false;
  const Span lease = window.plus(ttr_of(job));
  for (const Rec& p : project(r, job, window)) {
    if (p.st != St::waiting || p.attempts + 1 != o.attempts || p.due.lo > window.hi) continue;
    const Rec held{St::reserved, o.attempts, p.due, lease, 0};
    if (shows(held, job, o)) return true;
  }
  return false;
}

Rec rec_of(const Obs& o) {
  if (!o.exists) return Rec{};
  Rec r;
  r.attempts = o.attempts;
  r.due = Span::at(o.due);
  switch (o.state) {
    case JobState::delayed:
    case JobState::ready:
      r.st = St::waiting;
      break;
    case JobState::reserved:
      r.st = St::reserved;
      r.lease = Span::at(o.lease);
      break;
    case JobState::dead:
      r.st = St::dead;
      break;
  }
  return r;
}

Obs obs_of_seen(const Record& r) {
  Obs o;
  o.exists = r.code != kAbsent;
  if (o.exists) o.state = static_cast<JobState>(r.code);
  o.attempts = r.attempt;
  o.due = r.due;
  o.lease = r.lease;
  o.when = Span{r.t0, r.t1};
  return o;
}

Rec after_call(const Rec& before, uint64_t job, const Record& intent, const Record* done, Span w) {
  Rec r = before;
  switch (intent.kind) {
    case Kind::push_intent:
    case Kind::batch_intent:
      return Rec{St::waiting, 0, w.plus(Duration(intent.arg)), {}, 0};
    case Kind::ack_intent:
    case Kind::cancel_intent:
    case Kind::purge_intent:
      return Rec{};
    case Kind::nack_intent:
      r.lease = Span{};
      if (before.attempts >= kMaxAttempts) {
        r.st = St::dead;
        return r;
      }
      r.st = St::waiting;
      r.due = w.plus(intent.arg >= 0 ? Duration(intent.arg) : kRetryDelay);
      return r;
    case Kind::dead_intent:
      r.st = St::dead;
      r.lease = Span{};
      return r;
    case Kind::release_intent:
      // Undone: ready again where it was (due as it last fell due), the attempt taken back.
      r.st = St::waiting;
      r.lease = Span{};
      r.fence = 0;
      if (r.attempts > 0) --r.attempts;
      return r;
    case Kind::touch_intent:
      r.lease = done != nullptr ? Span::at(done->lease) : w.plus(ttr_of(job));
      return r;
    case Kind::resched_intent:
      // A due time in the past means now: the store's now.
      r.st = St::waiting;
      r.lease = Span{};
      r.due = Span{std::max(intent.arg, w.lo), std::max(intent.arg, w.hi)};
      return r;
    case Kind::requeue_intent:
    case Kind::rqtopic_intent:
      return Rec{St::waiting, 0, w, {}, 0};
    default:
      return r;
  }
}

Rec delivered(const Record& d, uint64_t job) {
  (void)job;
  return Rec{St::reserved, d.attempt, Span::at(d.due), Span::at(d.lease), d.n};
}

std::string delivery_problem(const Rec& before, uint64_t job, const Record& d) {
  const int64_t reserved_at = d.lease - ttr_of(job).count();  // the lease starts then
  if (reserved_at < d.t0 || reserved_at > d.t1)
    return "its lease deadline is not the ttr after an instant of the reserve() call";
  if (d.due > reserved_at) return "it was reserved before its due time";
  for (const Rec& p : project(before, job, Span{d.t0, reserved_at}))
    if (p.st == St::waiting && p.attempts + 1 == d.attempt && p.due.has(d.due)) return "";
  return "it was not waiting with " + std::to_string(d.attempt - 1) +
         " attempts and that due time (early, or redelivered, or an attempt lost or counted "
         "twice)";
}

bool may_hold(const Rec& r, uint64_t fence, Span w) {
  return r.st == St::reserved && (r.fence == 0 || r.fence == fence) && r.lease.hi > w.lo;
}

bool may_be_stale(const Rec& r, uint64_t job, uint64_t fence, Span w) {
  (void)job;
  return r.st != St::reserved || (r.fence != 0 && r.fence != fence) || r.lease.lo <= w.hi;
}

bool may_be(const Rec& r, uint64_t job, Span w, St st) {
  for (const Rec& p : project(r, job, w))
    if (p.st == st) return true;
  return false;
}

std::string rel_text(int64_t t, int64_t origin) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%+.3f ms", static_cast<double>(t - origin) / 1e6);
  return buf;
}

namespace {
std::string span_text(Span s, int64_t origin) {
  if (s.lo == s.hi) return rel_text(s.lo, origin);
  return "[" + rel_text(s.lo, origin) + ", " + rel_text(s.hi, origin) + "]";
}
}  // namespace

std::string rec_text(const Rec& r, int64_t origin) {
  if (r.st == St::absent) return "absent";
  std::string s = std::string(st_text(r.st)) + ", " + std::to_string(r.attempts) +
                  " attempts, due " + span_text(r.due, origin);
  if (r.st == St::reserved) s += ", lease until " + span_text(r.lease, origin);
  return s;
}

std::string obs_text(const Obs& o, int64_t origin) {
  if (!o.exists) return "absent";
  std::string s = std::string(to_string(o.state)) + ", " + std::to_string(o.attempts) +
                  " attempts, due " + rel_text(o.due, origin);
  if (o.state == JobState::reserved) s += ", lease until " + rel_text(o.lease, origin);
  return s + " (seen at " + span_text(o.when, origin) + ")";
}

}  // namespace delayq::crash
