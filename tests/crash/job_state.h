// What the store should hold for one job, as the harness knows it, and how that compares with
// what a store shows.
//
// A Rec is a journal record as the harness predicts it: a job waiting for its due time (delayed
// or ready: the clock alone decides which), reserved until a lease deadline, dead, or absent.
// Times are spans [lo, hi]: the store reads its clock somewhere inside each call, and the
// harness only knows the clock just before and just after. Without any call a Rec still changes
// with time in one way: a lease that runs out is retried (or dead-lettered after the last
// attempt); project() gives what a Rec may have become by some instant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "delayq/job.h"
#include "record.h"

namespace delayq::crash {

struct Span {
  int64_t lo = 0, hi = 0;
  static Span at(int64_t t) { return Span{t, t}; }
  bool has(int64_t t) const { return lo <= t && t <= hi; }
  Span plus(Duration d) const { return Span{lo + d.count(), hi + d.count()}; }
};

enum class St : uint8_t { absent, waiting, reserved, dead };
const char* st_text(St s);

struct Rec {
  St st = St::absent;
  uint32_t attempts = 0;
  Span due;            // waiting: when it falls due; reserved and dead: when it last fell due
  Span lease;          // reserved: when the lease runs out
  uint64_t fence = 0;  // reserved: the delivery's fence when this process saw it (else 0)
};

// What get() showed of a job, and when (the clock around the call).
struct Obs {
  bool exists = false;
  JobState state = JobState::delayed;
  uint32_t attempts = 0;
  int64_t due = 0, lease = 0;
  Span when;
};

// The records `r` (a job numbered `job`) may have become by some instant of `w` with no call
// made: itself, and if its lease may have run out, the retried or dead job.
std::vector<Rec> project(const Rec& r, uint64_t job, Span w);
// Whether `o` shows the job as `r` predicts, by the time it was seen.
bool shows(const Rec& r, uint64_t job, const Obs& o);
// Whether `o` shows the job as `r` after one more delivery, unreported, at some instant of
// `reserve_window` (a reserve() in flight when the worker was killed).
bool shows_after_unreported_delivery(const Rec& r, uint64_t job, const Obs& o, Span reserve_window);
// The record a store that shows `o` holds (exact times).
Rec rec_of(const Obs& o);
// What a `seen` record reports.
Obs obs_of_seen(const Record& seen);

// The record after a call that succeeded: `intent` made in `w` (from its start to its answer,
// or to the kill if it was in flight), on a job whose record was `before`. `done` is the
// answer, or null if the call was in flight (then a touch's new lease spans `w`).
Rec after_call(const Rec& before, uint64_t job, const Record& intent, const Record* done, Span w);
// The record after the delivery `reserved`.
Rec delivered(const Record& reserved, uint64_t job);
// Why the delivery `reserved` cannot follow `before`, or "" if it can: the job was waiting and
// due (by the due time the harness computed, not only the one the store reports), with the
// attempts before it, and the lease starts inside the call.
std::string delivery_problem(const Rec& before, uint64_t job, const Record& reserved);

// Whether a call on the token of the delivery with `fence`, made in `w`, may find the job held
// by that token (and succeed), or may find it not (and be refused: stale_token).
bool may_hold(const Rec& r, uint64_t fence, Span w);
bool may_be_stale(const Rec& r, uint64_t job, uint64_t fence, Span w);
// Whether the job may be in state `st` at some instant of `w`.
bool may_be(const Rec& r, uint64_t job, Span w, St st);

// For failure messages: times relative to `origin` (ns).
std::string rec_text(const Rec& r, int64_t origin);
std::string obs_text(const Obs& o, int64_t origin);
std::string rel_text(int64_t t, int64_t origin);

}  // namespace delayq::crash
