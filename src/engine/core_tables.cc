// The core's tables: topics and retry policies interned to small numbers, the per-topic
// counts by state, the ready and dead lists (doubly linked through the jobs), the free list of
// job slots, and the lookups by id and by token. The calls (core.cc) and the records
// (core_records.cc) keep them consistent; nothing here touches the wheel.
#include "engine/core.h"

#include <algorithm>

#include "common/rules.h"
#include "common/timing.h"

namespace delayq::engine {

// ---- interning ----

uint32_t Core::topic_index(std::string_view name) {
  uint32_t i = last_topic_;
  if (i == kNil || topics_[i].name != name) {
    if (auto it = topic_ids_.find(name); it != topic_ids_.end()) {
      i = it->second;
    } else if (!free_topics_.empty()) {
      i = free_topics_.back();
      free_topics_.pop_back();
      topics_[i].name = std::string(name);
      topic_ids_.emplace(std::string(name), i);
    } else {
      i = static_cast<uint32_t>(topics_.size());
      topics_.emplace_back();
      topics_.back().name = std::string(name);
      topic_ids_.emplace(std::string(name), i);
    }
  }
  if (topics_[i].idle) unlink_idle(i);
  return last_topic_ = i;
}

void Core::unused_topic(uint32_t i) {
  Topic& t = topics_[i];
  if (t.idle || t.counts.paused || t.jobs() > 0) return;
  t.idle = true;
  t.idle_prev = idle_tail_;
  t.idle_next = kNil;
  if (idle_tail_ != kNil)
    topics_[idle_tail_].idle_next = i;
  else
    idle_head_ = i;
  idle_tail_ = i;
  if (++idle_count_ > opt_.idle_topics) free_topic(idle_head_);
}

void Core::unlink_idle(uint32_t i) {
  Topic& t = topics_[i];
  if (t.idle_prev != kNil)
    topics_[t.idle_prev].idle_next = t.idle_next;
  else
    idle_head_ = t.idle_next;
  if (t.idle_next != kNil)
    topics_[t.idle_next].idle_prev = t.idle_prev;
  else
    idle_tail_ = t.idle_prev;
  t.idle = false;
  t.idle_prev = t.idle_next = kNil;
  --idle_count_;
}

void Core::free_topic(uint32_t i) {
  unlink_idle(i);
  Topic& t = topics_[i];
  topic_ids_.erase(topic_ids_.find(t.name));
  if (t.published) gone_.push_back(std::move(t.name));
  t = Topic{.changed = t.changed};  // its name, bins and lateness go with it
  free_topics_.push_back(i);
  if (last_topic_ == i) last_topic_ = kNil;
}

namespace {
size_t policy_hash(const RetryPolicy& p) {
  size_t h = std::hash<int>()(static_cast<int>(p.kind)) ^ (p.max_attempts * 0x9e3779b97f4a7c15ull);
  h ^= std::hash<int64_t>()(p.base.count()) + (h << 6);
  for (Duration d : p.delays) h ^= std::hash<int64_t>()(d.count()) + (h << 6) + (h >> 2);
  return h;
}
}  // namespace

uint32_t Core::policy_index(const RetryPolicy& p) {
  if (p == policies_[0]) return 0;
  const size_t h = policy_hash(p);
  auto [lo, hi] = policy_ids_.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (policies_[it->second] == p) {
      ++policy_refs_[it->second];
      return it->second;
    }
  uint32_t i;
  if (!free_policies_.empty()) {
    i = free_policies_.back();
    free_policies_.pop_back();
    policies_[i] = p;
  } else {
    i = static_cast<uint32_t>(policies_.size());
    policies_.push_back(p);
    policy_refs_.push_back(0);
  }
  policy_refs_[i] = 1;
  policy_ids_.emplace(h, i);
  return i;
}

void Core::release_policy(uint32_t i) {
  if (i == 0 || --policy_refs_[i] > 0) return;
  auto [lo, hi] = policy_ids_.equal_range(policy_hash(policies_[i]));
  for (auto it = lo; it != hi; ++it)
    if (it->second == i) {
      policy_ids_.erase(it);
      break;
    }
  policies_[i] = RetryPolicy{};
  free_policies_.push_back(i);
}

// ---- state bookkeeping ----

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
  if (j.state == JobState::delayed) topics_[j.topic].due.remove(j.due);
  --state_count(c, j.state);
  ++state_count(c, s);
  j.state = s;
}

void Core::delay_until(Job& j, TimePoint due) {
  changed(j.topic);
  if (j.state == JobState::delayed) {
    topics_[j.topic].due.remove(j.due);
  } else {
    TopicStats& c = counts(j);
    --state_count(c, j.state);
    ++c.delayed;
    j.state = JobState::delayed;
  }
  j.due = due;
  topics_[j.topic].due.add(due);
}

void Core::uncount(Job& j) {
  changed(j.topic);
  if (j.state == JobState::delayed) topics_[j.topic].due.remove(j.due);
  --state_count(counts(j), j.state);
  unused_topic(j.topic);
  release_policy(j.policy);
}

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
  List& line = topics_[job.topic].ready;
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

void Core::unlink(List& l, uint32_t j) {
  Job& job = jobs_[j];
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

// ---- lookups ----

Result<uint32_t> Core::find(std::string_view id) const {
  const int64_t j = lookup(id, IdIndex::hash(id));
  if (j < 0) return rules::no_such_job(id);
  return static_cast<uint32_t>(j);
}

Result<uint32_t> Core::holder(const Token& t) {
  Result<uint32_t> j = find(t.id);
  if (!j) return j;
  const Job& job = jobs_[*j];
  if (job.state == JobState::reserved && job.fence == t.fence) return j;
  return rules::stale_token(t, job.state, job.attempts);
}

JobInfo Core::info(uint32_t j) const {
  const Job& job = jobs_[j];
  const RetryPolicy& policy = policies_[job.policy];
  return JobInfo{.id = job.id,
                 .topic = topics_[job.topic].name,
                 .state = job.state,
                 .attempts = job.attempts,
                 .max_attempts = policy.max_attempts,
                 .due = job.due,
                 .lease_deadline = job.lease_deadline,
                 .ttr = job.ttr,
                 .body = job.body,
                 .retry = policy};
}

uint32_t Core::alloc_job() {
  if (free_ == kNil) return jobs_.emplace_back();
  const uint32_t j = free_;
  free_ = jobs_[j].next;
  return j;
}

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
  // The front of the line: jobs join it in due order (unless the clock stepped back, or a
  // catch-up made a retry whose wait had passed ready at the catch-up's instant).
  if (ready_front) timing.oldest_ready = std::max(Duration::zero(), rules::distance(*ready_front, now));
  timing::add(entry(s.timing, name), timing);
}

void Core::add_stats(Stats& s, TimePoint now) const {
  for (const Topic& t : topics_) {
    if (t.name.empty()) continue;  // a free slot
    std::optional<TimePoint> front;
    if (t.ready.head != kNil) front = jobs_[t.ready.head].due;
    add_topic(s, t.name, t.counts, t.due, t.first, t.retry, front, now);
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
    v.ready_front.reset();
    if (t.ready.head != kNil) v.ready_front = jobs_[t.ready.head].due;
    t.published = true;
  }
  return gone_.empty() && changed_.empty();
}

void TopicView::add_to(Stats& s, TimePoint now) const {
  for (const auto& [name, t] : topics_)
    add_topic(s, name, t.counts, t.due, t.first, t.retry, t.ready_front, now);
}

}  // namespace delayq::engine
