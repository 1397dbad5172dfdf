// Whether a reopened store has accounted for every occurrence of a schedule's rule due by its
// open: each one fired or counted as skipped, none left behind and none counted twice
// (check_schedules() calls it for each schedule a reopened store shows; model.h).
//
// The arithmetic it rests on (src/schedule/planner.cc, src/engine/schedule_firing.cc): the
// load's rules are `every P` (kScheduleRules) with no start or end, so a schedule's occurrences
// are its anchor A (the instant of the schedule() that made it) and every P after. Each plan
// handles the occurrences from the schedule's `next` up to the firing's `now`, in order: those
// it fires, and those catch-up or overlap pass over, counted in skipped_catch_up or
// skipped_overlap (the skipped ones of a plan are its earliest, so a record written between two
// of its rounds counts them with the occurrences fired so far, its `next` the next to fire);
// `next` then moves past all of them. So through any firing, a crash between its writes, a
// pause (nothing fires) and a resume (what fell meanwhile goes by catch-up), the reach
//     next - (fired + skipped_overlap + skipped_catch_up) * P
// stays A: an occurrence lost (neither fired nor counted) moves it forward by P, one counted
// twice back by P. A replacement (src/schedule/replace.h) keeps the counters but starts the new
// rule from the call's instant (a new anchor), so the reach after one is not known from the
// reports: it is checked only for schedules whose reach is known, from the last reopened store
// that showed them (no schedule() on them since) or from their creation's call (A within it);
// a power loss keeps some prefix of the writes, each of which keeps the reach, so this holds
// after one too. Otherwise (always):
//  - a running schedule's next occurrence is after the instant the store's open began: open()
//    fires what fell due while the store was closed (by catch-up) before it returns
//    (ShardedEngine::start()), so every occurrence up to the open is handled by then; the store
//    firing on its own thread while it is looked at only moves `next` further;
//  - a schedule that a reopened store showed paused, and that no resume_schedule() was called
//    on since, has fired and skipped nothing since (a replacement keeps a pause, fires nothing).
#include <array>

#include "check.h"

namespace delayq::crash {

namespace {

std::string accounted_instant(const Model& m, int64_t ns) {
  return occurrence_job_id("", at_ns(ns)).substr(1) + " (" + m.rel(ns) + ")";
}

std::string counters_text(const std::array<uint64_t, 3>& c) {
  return std::to_string(c[0]) + " fired, " + std::to_string(c[1]) + " skipped for overlap, " +
         std::to_string(c[2]) + " by catch-up";
}

}  // namespace

void check_occurrences_accounted(Model& m, uint64_t n, const Observation::Schedule& seen,
                                 int64_t open_began) {
  ScheduleModel& s = m.schedules[n];
  const std::string name = schedule_id(n);
  const std::array<uint64_t, 3> counters = {seen.fired, seen.skipped_overlap,
                                            seen.skipped_catch_up};
  if (!seen.paused) {
    ++m.counts.caught_up;
    if (!seen.next || *seen.next <= open_began)
      m.problem(name + " runs in a reopened store, its next occurrence " +
                (seen.next ? accounted_instant(m, *seen.next) : std::string("none")) +
                ", not after its open began at " + accounted_instant(m, open_began) +
                ": an occurrence due before the open was neither fired nor skipped by it");
  } else if (s.paused_counters) {
    ++m.counts.paused_unchanged;
    if (counters != *s.paused_counters)
      m.problem(name + " counts " + counters_text(counters) + ", paused; when a reopened " +
                "store last showed it, paused too, it counted " +
                counters_text(*s.paused_counters) + ", and no resume_schedule() was called on " +
                "it since: it fired or skipped occurrences while paused");
  }
  s.paused_counters.reset();
  if (seen.paused) s.paused_counters = counters;
  if (seen.rule < 0 || !seen.next) {
    s.reach.reset();
    return;
  }
  const int64_t every = kScheduleIntervals[static_cast<size_t>(seen.rule)].count();
  const uint64_t handled = seen.fired + seen.skipped_overlap + seen.skipped_catch_up;
  const int64_t reach = *seen.next - static_cast<int64_t>(handled) * every;
  if (s.reach) {
    ++m.counts.reach_checks;
    if (!s.reach->has(reach)) {
      const std::string expected =
          s.reach->lo == s.reach->hi
              ? accounted_instant(m, s.reach->lo) + ", as when a reopened store last showed it"
              : "its creation's instant, from " + accounted_instant(m, s.reach->lo) + " to " +
                    accounted_instant(m, s.reach->hi);
      m.problem(name + " counts " + counters_text(counters) + " before its next occurrence " +
                accounted_instant(m, *seen.next) + ": with its rule (" +
                kScheduleRules[static_cast<size_t>(seen.rule)] + ") they reach back to " +
                accounted_instant(m, reach) + ", not to " + expected + ": an occurrence was " +
                (reach > s.reach->hi ? "neither fired nor skipped" : "counted twice"));
    }
  }
  s.reach = Span::at(reach);
}

}  // namespace delayq::crash
