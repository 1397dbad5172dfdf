// What stats() shows of a core: add_stats() (the counts and timing of every topic, under the
// shard's lock), publish() (copies the topics that changed into the TopicView) and, for both,
// add_topic() and TopicView::add_to() (core_view.h). They read the core's tables and change no
// job.
#include "engine/core.h"

#include <algorithm>

#include "common/rules.h"
#include "common/timing.h"

namespace delayq::engine {

namespace {
// m[name], appended at the end when `name` comes after every key (topics added in name order).
template <class M>
typename M::mapped_type& entry(M& m, const std::string& name) {
  if (m.empty() || m.rbegin()->first < name) return m.emplace_hint(m.end(), name, typename M::mapped_type{})->second;
  return m[name];
}
}  // namespace

void add_topic(Stats& s, const std::string& name, const TopicStats& c, const DueBins& due,
               const Lateness& first, const Lateness& retry,
               std::optional<TimePoint> ready_front, TimePoint now) {
  const bool live = c.delayed + c.ready + c.reserved + c.dead > 0;
  if (live || c.paused) {
    TopicStats& o = entry(s.topics, name);
    o.paused = o.paused || c.paused;
    o.delayed += c.delayed;
    o.ready += c.ready;
    o.reserved += c.reserved;
    o.dead += c.dead;
  }
  if (!live && first.count + retry.count == 0) return;
  TopicTiming timing{.due = due.windows(now, c.delayed), .first = first, .retry = retry};
  // The fronts of the lines (one per priority): jobs join each in due order (unless the clock
  // stepped back, or a catch-up made a retry whose wait had passed ready at the catch-up's
  // instant), so the oldest ready job is the earliest of the heads.
  if (ready_front) timing.oldest_ready = std::max(Duration::zero(), rules::distance(*ready_front, now));
  timing::add(entry(s.timing, name), timing);
}

void Core::add_stats(Stats& s, TimePoint now) const {
  for (const Topic& t : topics_) {
    if (t.name.empty()) continue;  // a free slot
    add_topic(s, t.name, t.counts, t.due, t.first, t.retry, oldest_ready_due(t), now);
  }
  add_totals(s, totals_);
}

bool Core::publish(size_t limit) {
  TopicView& view = view_;
  size_t done = 0;
  // The topics freed first: a topic freed and made again has its new state listed in changed_.
  for (; !gone_.empty() && done < limit; ++done) {
    view.topics_.erase(gone_.back());
    gone_.pop_back();
  }
  for (; !changed_.empty() && done < limit; ++done) {
    Topic& t = topics_[changed_.back()];
    changed_.pop_back();
    if (!t.changed) continue;  // listed twice
    t.changed = false;
    if (t.name.empty()) continue;  // freed since
    TopicSummary& v = view.topics_[t.name];
    v.counts = t.counts;
    v.due = t.due.fitted();  // the view holds every topic: no room to spare
    v.first = t.first;
    v.retry = t.retry;
    v.ready_front = oldest_ready_due(t);
    t.published = true;
  }
  return gone_.empty() && changed_.empty();
}

void TopicView::add_to(Stats& s, TimePoint now) const {
  for (const auto& [name, t] : topics_)
    add_topic(s, name, t.counts, t.due, t.first, t.retry, t.ready_front, now);
}

}  // namespace delayq::engine
