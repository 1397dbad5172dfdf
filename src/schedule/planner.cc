// A schedule's plan at `now` (see planner.h).
#include "schedule/planner.h"

#include <algorithm>

#include "common/rules.h"
#include "schedule/replace.h"

namespace delayq::schedule {

namespace {

std::optional<TimePoint> before_end(std::optional<TimePoint> t, const ScheduleSpec& spec) {
  if (t && spec.end && *t >= *spec.end) return std::nullopt;
  return t;
}

// The last `k` of the `total` occurrences in [from, to), oldest first (k <= total).
std::vector<TimePoint> last_occurrences(const Rule& rule, TimePoint from, TimePoint to, uint64_t k,
                                        uint64_t total) {
  std::vector<TimePoint> out;
  if (k == 0) return out;
  TimePoint start = from;
  uint64_t in_window = total;
  if (std::optional<Duration> every = rule.interval()) {
    // Arithmetic: the first is `total - k` intervals after the first occurrence.
    start = *rule.next_at_or_after(from) + *every * static_cast<Duration::rep>(total - k);
    in_window = k;
  } else if (total > k) {
    // A window before `to` wide enough to hold k of them, doubled until it does: at most one
    // occurrence a second, so k seconds is the narrowest it can be.
    auto window = [&](Duration width) {
      start = std::max(from, to - std::min(width, rules::distance(from, to)));
      in_window = rule.count(start, to);
    };
    Duration narrow{0}, width = std::chrono::seconds(k);
    for (window(width); in_window < k && start != from; window(width)) {
      narrow = width;
      width = width > Duration::max() / 2 ? Duration::max() : width * 2;
    }
    // Then narrowed to a second (at most one occurrence a second), so that few are stepped
    // over below even where the occurrences thin out before `to`.
    for (uint64_t at_width = in_window; at_width > k && width - narrow > std::chrono::seconds(1);) {
      const Duration mid = narrow + (width - narrow) / 2;
      window(mid);
      if (in_window >= k)
        width = mid, at_width = in_window;
      else
        narrow = mid;
    }
    window(width);
  }
  std::optional<TimePoint> o = rule.next_at_or_after(start);
  for (uint64_t skip = in_window - k; skip > 0 && o; --skip) o = rule.next_after(*o);
  for (; o && *o < to && out.size() < k; o = rule.next_after(*o)) out.push_back(*o);
  return out;
}

}  // namespace

std::optional<TimePoint> first_occurrence(const Rule& rule, const ScheduleSpec& spec,
                                          TimePoint created) {
  return before_end(rule.next_at_or_after(spec.start.value_or(created)), spec);
}

std::optional<TimePoint> replacement_next(const Rule& rule, const ScheduleSpec& spec,
                                          const ScheduleState& was, TimePoint now,
                                          TimePoint anchor) {
  std::optional<TimePoint> next = first_occurrence(rule, spec, std::max(now, anchor));
  if (next && *next < now) next = rule.next_at_or_after(now);
  if (next && was.last_fired && *next <= *was.last_fired) next = rule.next_after(*was.last_fired);
  if (next && spec.end && *next >= *spec.end) next.reset();
  return next;
}

Plan plan(const Rule& rule, const ScheduleSpec& spec, const ScheduleState& state, TimePoint now,
          Duration tick, bool previous_live) {
  Plan p;
  p.next = before_end(state.next, spec);
  if (!p.next || *p.next > now) return p;
  const TimePoint end = spec.end.value_or(TimePoint::max());
  const TimePoint first = *p.next;
  // Missed: in [first, now - tick), before the end.
  const TimePoint late = now - std::min(tick, rules::distance(TimePoint::min(), now));
  const TimePoint missed_to = std::min(late, end);
  const uint64_t missed = first < missed_to ? rule.count(first, missed_to) : 0;
  uint64_t chosen = 0;
  if (spec.catch_up == ScheduleSpec::CatchUp::one) chosen = std::min<uint64_t>(missed, 1);
  if (spec.catch_up == ScheduleSpec::CatchUp::all)
    chosen = std::min<uint64_t>(missed, spec.catch_up_max);
  std::vector<TimePoint> candidates = last_occurrences(rule, first, missed_to, chosen, missed);
  p.skipped_catch_up = missed - candidates.size();
  // On time: in [max(first, now - tick), now], before the end.
  for (std::optional<TimePoint> o = rule.next_at_or_after(std::max(first, late));
       o && *o <= now && *o < end; o = rule.next_after(*o))
    candidates.push_back(*o);
  if (spec.overlap == ScheduleSpec::Overlap::skip && !candidates.empty()) {
    const size_t fire = previous_live ? 0 : 1;
    p.skipped_overlap = candidates.size() - fire;
    candidates.resize(fire);
  }
  p.fire = std::move(candidates);
  p.next = before_end(rule.next_after(now), spec);
  return p;
}

void apply(ScheduleState& state, const Plan& plan) {
  state.fired += plan.fire.size();
  if (!plan.fire.empty()) state.last_fired = plan.fire.back();
  state.skipped_catch_up += plan.skipped_catch_up;
  state.skipped_overlap += plan.skipped_overlap;
  state.next = plan.next;
}

}  // namespace delayq::schedule
