#include "engine/core.h"

#include <algorithm>

#include "common/format.h"

namespace delayq::engine {

std::string check_options(const CoreOptions& o) {
  if (o.tick < std::chrono::milliseconds(1) || o.tick > std::chrono::seconds(1))
    return "tick must be between 1 ms and 1 s, got " + format_duration(o.tick);
  return rules::check_limits(o.limits);
}

Core::Core(const CoreOptions& options, TimePoint now)
    : opt_(options),
      tick_ns_(options.tick.count()),
      wheel_(0),
      policies_{options.limits.default_retry},
      rng_(options.seed),
      fences_(options.fences ? options.fences : &own_fences_),
      seqs_(options.seqs ? options.seqs : &own_seqs_) {
  wheel_.advance(to_tick_floor(now), [](uint64_t, uint64_t) {});
}

uint64_t Core::to_tick_floor(TimePoint t) const {
  const int64_t ns = t.time_since_epoch().count();
  if (ns <= 0) return 0;
  return static_cast<uint64_t>(ns) / tick_ns_;
}

TimePoint Core::from_tick(uint64_t tick) const {
  return TimePoint(Duration(static_cast<int64_t>(tick) * tick_ns_));
}

// ---- validation ----

Status Core::check_push(const JobSpec& s, uint64_t id_hash, TimePoint now) const {
  if (Status st = rules::check_spec(s, opt_.limits, now); !st.ok()) return st;
  if (int64_t j = lookup(s.id, id_hash); j >= 0) return rules::duplicate_id(s.id, jobs_[j].state);
  return {};
}

// ---- interning ----

uint32_t Core::topic_index(std::string_view name) {
  if (last_topic_ != kNil && topics_[last_topic_].name == name) return last_topic_;
  if (auto it = topic_ids_.find(name); it != topic_ids_.end()) return last_topic_ = it->second;
  const uint32_t i = static_cast<uint32_t>(topics_.size());
  topics_.push_back(Topic{std::string(name), {}, {}, {}});
  topic_ids_.emplace(std::string(name), i);
  return last_topic_ = i;
}

uint32_t Core::policy_index(const RetryPolicy& p) {
  if (p == policies_[0]) return 0;
  size_t h = std::hash<int>()(static_cast<int>(p.kind)) ^ (p.max_attempts * 0x9e3779b97f4a7c15ull);
  h ^= std::hash<int64_t>()(p.base.count()) + (h << 6);
  for (Duration d : p.delays) h ^= std::hash<int64_t>()(d.count()) + (h << 6) + (h >> 2);
  auto [lo, hi] = policy_ids_.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (policies_[it->second] == p) return it->second;
  policies_.push_back(p);
  const uint32_t i = static_cast<uint32_t>(policies_.size() - 1);
  policy_ids_.emplace(h, i);
  return i;
}

// ---- state bookkeeping ----

uint64_t& Core::state_count(TopicStats& c, JobState s) {
  switch (s) {
    case JobState::delayed: return c.delayed;
    case JobState::ready: return c.ready;
    case JobState::reserved: return c.reserved;
    case JobState::dead: break;
  }
  return c.dead;
}

void Core::set_state(Job& j, JobState s) {
  TopicStats& c = counts(j);
  --state_count(c, j.state);
  ++state_count(c, s);
  j.state = s;
}

void Core::link(List& l, uint32_t j) {
  Job& job = jobs_[j];
  job.prev = l.tail;
  job.next = kNil;
  if (l.tail != kNil) jobs_[l.tail].next = j; else l.head = j;
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
  if (job.prev != kNil) jobs_[job.prev].next = job.next; else l.head = job.next;
  if (job.next != kNil) jobs_[job.next].prev = job.prev; else l.tail = job.prev;
  job.prev = job.next = kNil;
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

void Core::make_ready(uint32_t j) {
  Job& job = jobs_[j];
  set_state(job, JobState::ready);
  link(topics_[job.topic].ready, j);
  ++ready_added_;
}

void Core::schedule(uint32_t j, TimePoint due, TimePoint now) {
  mark(j);
  Job& job = jobs_[j];
  if (due <= now) {
    job.due = now;
    make_ready(j);
    return;
  }
  job.due = due;
  set_state(job, JobState::delayed);
  arm(j, job.due);
}

void Core::detach(uint32_t j) {
  Job& job = jobs_[j];
  if (job.timer) {
    wheel_.cancel(job.timer);
    job.timer = {};
  }
  ++job.timer_gen;  // a pending soon_ entry of this job is void now
  if (job.state == JobState::ready) unlink(topics_[job.topic].ready, j);
  if (job.state == JobState::dead) unlink(topics_[job.topic].dead, j);
}

void Core::to_dead(uint32_t j) {
  mark(j);
  Job& job = jobs_[j];
  set_state(job, JobState::dead);
  link(topics_[job.topic].dead, j);
  ++totals_.dead_lettered;
}

void Core::fail(uint32_t j, std::optional<Duration> delay, TimePoint at, TimePoint now) {
  Job& job = jobs_[j];
  const RetryPolicy& p = policies_[job.policy];
  if (job.attempts >= p.max_attempts) {
    to_dead(j);
    return;
  }
  // check_waits() keeps listed and capped waits within max_delay; the clamp covers the rest.
  const Duration d = std::min(delay ? *delay : backoff(p, job.attempts, rng_), opt_.limits.max_delay);
  ++totals_.retried;
  schedule(j, rules::plus(at, d), now);
}

void Core::erase(uint32_t j) {
  detach(j);
  Job& job = jobs_[j];
  --state_count(counts(job), job.state);
  ids_.erase(IdIndex::hash(job.id), j);
  if (opt_.record_changes) {
    erased_.push_back(job.seq);
    job.dirty = false;  // its entry in dirty_ (if any) is void now
  }
  job.body = std::string();
  job.next = free_;
  free_ = j;
}

void Core::on_timer(uint32_t j, TimePoint at, TimePoint now) {
  Job& job = jobs_[j];
  if (job.state == JobState::delayed) {
    make_ready(j);
  } else if (job.state == JobState::reserved) {
    ++totals_.leases_expired;
    fail(j, std::nullopt, at, now);  // the retry counts from when the lease ran out
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
}

std::optional<TimePoint> Core::next_deadline() const {
  std::optional<TimePoint> next;
  if (const std::optional<uint64_t> t = wheel_.next_deadline()) next = from_tick(*t);
  // A stale soon_ entry only makes the driver wake once for nothing.
  if (!soon_.empty() && (!next || soon_.front().at < *next)) next = soon_.front().at;
  return next;
}

std::optional<TimePoint> Core::take_earliest_scheduled() {
  return std::exchange(earliest_scheduled_, std::nullopt);
}

uint64_t Core::take_ready_added() { return std::exchange(ready_added_, 0); }

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
  return JobInfo{job.id,       topics_[job.topic].name, job.state, job.attempts,
                 policies_[job.policy].max_attempts, job.due, job.lease_deadline, job.ttr,
                 job.body};
}

// ---- the calls ----

Status Core::push(JobSpec&& spec, TimePoint now) {
  advance(now);
  const uint64_t h = IdIndex::hash(spec.id);
  if (Status s = check_push(spec, h, now); !s.ok()) return s;
  const TimePoint due = spec.delay ? rules::plus(now, *spec.delay) : spec.due_at ? *spec.due_at : now;
  const uint32_t j = alloc_job();
  ids_.insert(h, j);  // check_push() checked uniqueness
  const uint32_t topic = topic_index(spec.topic);
  const uint32_t policy = spec.retry ? policy_index(*spec.retry) : 0;
  Job& job = jobs_[j];
  job = Job{.timer_gen = job.timer_gen};  // see Job::timer_gen: a reused slot keeps counting
  job.id = std::move(spec.id);
  job.body = std::move(spec.body);
  job.ttr = spec.ttr > Duration::zero() ? spec.ttr : opt_.limits.default_ttr;
  job.topic = topic;
  job.policy = policy;
  // Only the journal needs queue-wide sequence numbers: the in-memory engine skips the atomic
  // increment and counts push order in this core (all that release() needs).
  job.seq = opt_.record_changes ? seqs_->fetch_add(1, std::memory_order_relaxed) + 1 : ++local_seq_;
  job.state = JobState::delayed;
  ++topics_[topic].counts.delayed;
  schedule(j, due, now);
  ++totals_.pushed;
  return {};
}

uint32_t Core::alloc_job() {
  if (free_ == kNil) return jobs_.emplace_back();
  const uint32_t j = free_;
  free_ = jobs_[j].next;
  return j;
}

Result<Delivery> Core::reserve(std::span<const std::string> topics, TimePoint now) {
  advance(now);
  if (Status s = rules::check_topics(topics); !s.ok()) return s;
  uint32_t best = kNil;
  for (const std::string& name : topics) {
    auto it = topic_ids_.find(name);
    if (it == topic_ids_.end()) continue;
    const uint32_t head = topics_[it->second].ready.head;
    if (head != kNil && (best == kNil || jobs_[head].due < jobs_[best].due)) best = head;
  }
  if (best == kNil) return Status(Errc::timeout, "no ready job");
  Job& job = jobs_[best];
  unlink(topics_[job.topic].ready, best);
  set_state(job, JobState::reserved);
  ++job.attempts;
  job.fence = fences_->fetch_add(1, std::memory_order_relaxed) + 1;
  job.lease_deadline = rules::plus(now, job.ttr);
  arm(best, job.lease_deadline);
  mark(best);
  ++totals_.delivered;
  Job& j = jobs_[best];
  return Delivery{j.id,
                  topics_[j.topic].name,
                  j.body,
                  j.attempts,
                  policies_[j.policy].max_attempts,
                  Token{j.id, j.fence},
                  j.due,
                  j.lease_deadline};
}

Status Core::ack(const Token& t, TimePoint now) {
  advance(now);
  Result<uint32_t> j = holder(t);
  if (!j) return j.status();
  erase(*j);
  ++totals_.acked;
  return {};
}

Status Core::nack(const Token& t, std::optional<Duration> delay, TimePoint now) {
  advance(now);
  if (Status s = rules::check_nack_delay(delay, opt_.limits.max_delay); !s.ok()) return s;
  Result<uint32_t> j = holder(t);
  if (!j) return j.status();
  detach(*j);
  fail(*j, delay, now, now);
  return {};
}

Status Core::dead_letter(const Token& t, TimePoint now) {
  advance(now);
  Result<uint32_t> j = holder(t);
  if (!j) return j.status();
  detach(*j);
  to_dead(*j);
  return {};
}

Status Core::release(const Token& t, TimePoint now) {
  advance(now);
  Result<uint32_t> j = holder(t);
  if (!j) return j.status();
  detach(*j);  // the lease timer
  Job& job = jobs_[*j];
  --job.attempts;  // a reserved job has had at least this delivery
  set_state(job, JobState::ready);
  link_in_due_order(*j);
  ++ready_added_;
  mark(*j);
  ++totals_.released;
  return {};
}

Result<TimePoint> Core::touch(const Token& t, TimePoint now) {
  advance(now);
  Result<uint32_t> j = holder(t);
  if (!j) return j.status();
  detach(*j);
  Job& job = jobs_[*j];
  job.lease_deadline = rules::plus(now, job.ttr);
  arm(*j, job.lease_deadline);
  mark(*j);
  return job.lease_deadline;
}

Status Core::cancel(std::string_view id, TimePoint now) {
  advance(now);
  Result<uint32_t> j = find(id);
  if (!j) return j.status();
  erase(*j);
  ++totals_.cancelled;
  return {};
}

Result<JobInfo> Core::get(std::string_view id, TimePoint now) {
  advance(now);
  Result<uint32_t> j = find(id);
  if (!j) return j.status();
  return info(*j);
}

Status Core::reschedule(std::string_view id, TimePoint when, TimePoint now) {
  advance(now);
  Result<uint32_t> j = find(id);
  if (!j) return j.status();
  if (Status s = rules::check_reschedulable(id, jobs_[*j].state); !s.ok()) return s;
  if (Status s = rules::check_new_due(when, now, opt_.limits.max_delay); !s.ok()) return s;
  detach(*j);
  schedule(*j, when, now);
  return {};
}

std::vector<JobInfo> Core::list_dead(std::string_view topic, size_t limit, TimePoint now) {
  advance(now);
  std::vector<JobInfo> out;
  auto it = topic_ids_.find(topic);
  if (it == topic_ids_.end()) return out;
  for (uint32_t j = topics_[it->second].dead.head; j != kNil && out.size() < limit;
       j = jobs_[j].next)
    out.push_back(info(j));
  return out;
}

Status Core::requeue_dead(std::string_view id, TimePoint now) {
  advance(now);
  Result<uint32_t> j = find(id);
  if (!j) return j.status();
  Job& job = jobs_[*j];
  if (Status s = rules::check_requeueable(id, job.state); !s.ok()) return s;
  unlink(topics_[job.topic].dead, *j);
  job.attempts = 0;
  job.due = now;
  make_ready(*j);
  mark(*j);
  ++totals_.requeued;
  return {};
}

uint64_t Core::requeue_dead_topic(std::string_view topic, TimePoint now) {
  advance(now);
  auto it = topic_ids_.find(topic);
  if (it == topic_ids_.end()) return 0;
  uint64_t n = 0;
  while (topics_[it->second].dead.head != kNil) {
    const Status s = requeue_dead(jobs_[topics_[it->second].dead.head].id, now);
    (void)s;  // a dead-list member is dead by construction
    ++n;
  }
  return n;
}

uint64_t Core::purge_dead(std::string_view topic, TimePoint now) {
  advance(now);
  auto it = topic_ids_.find(topic);
  if (it == topic_ids_.end()) return 0;
  uint64_t n = 0;
  while (topics_[it->second].dead.head != kNil) {
    erase(topics_[it->second].dead.head);
    ++n;
  }
  totals_.purged += n;
  return n;
}

void Core::add_stats(Stats& s) const {
  for (const Topic& t : topics_) {
    const TopicStats& c = t.counts;
    if (c.delayed + c.ready + c.reserved + c.dead == 0) continue;
    TopicStats& o = s.topics[t.name];
    o.delayed += c.delayed;
    o.ready += c.ready;
    o.reserved += c.reserved;
    o.dead += c.dead;
  }
  add_totals(s, totals_);
}

}  // namespace delayq::engine
