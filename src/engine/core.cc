// The core's calls: the constructor, check_options() and every public call (push() through
// purge_dead(), evict() and seq_of()). Each call advances to its `now`, checks its arguments and
// the job's state (check_push(), holder(), find(), rules::*), then moves the job with the
// transitions of core_transitions.cc. Look here for what a call refuses and what it counts.
#include "engine/core.h"

#include "common/format.h"
#include "common/timing.h"

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
      policy_refs_{0},
      rng_(options.seed),
      fences_(options.fences ? options.fences : &own_fences_),
      seqs_(options.seqs ? options.seqs : &own_seqs_) {
  wheel_.advance(to_tick_floor(now), [](uint64_t, uint64_t) {});
  jobs_.reserve(options.expected_jobs);
  ids_.reserve(options.expected_jobs);
}

Status Core::check_push(const JobSpec& s, uint64_t id_hash, TimePoint now) const {
  if (Status st = rules::check_spec(s, opt_.limits, now); !st.ok()) return st;
  if (int64_t j = lookup(s.id, id_hash); j >= 0) return rules::duplicate_id(s.id, jobs_[j].state);
  return {};
}

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
  job.priority = spec.priority;
  // Only the journal needs queue-wide sequence numbers: the in-memory engine skips the atomic
  // increment and counts push order in this core (all that release() needs).
  job.seq = opt_.record_changes ? seqs_->fetch_add(1, std::memory_order_relaxed) + 1 : ++local_seq_;
  // A new job starts as ready (no due bins to leave); schedule() puts it where it belongs.
  job.state = JobState::ready;
  ++topics_[topic].counts.ready;
  schedule(j, due, now);
  ++totals_.pushed;
  return {};
}

Result<Delivery> Core::reserve(std::span<const std::string> topics, TimePoint now) {
  advance(now);
  if (Status s = rules::check_topics(topics); !s.ok()) return s;
  uint32_t best = kNil;
  // Limits (core_limits.cc): a throttled topic is passed over, after the pause check (a paused
  // topic spends nothing). A second pass only when another shard took the chosen topic's last
  // token or place since throttled() looked; refusals are counted in the first pass (and by
  // take_place() for the topic it lost).
  for (bool first = true;; first = false) {
    best = kNil;
    for (const std::string& name : topics) {
      auto it = topic_ids_.find(name);
      if (it == topic_ids_.end()) continue;
      const Topic& t = topics_[it->second];
      if (t.counts.paused) continue;
      // Priorities: each topic's most urgent ready job, and among the topics the most urgent by
      // (priority, due time); ties keep the first listed topic. At the default priority
      // everywhere this is the choice by due time alone, plus one compare.
      const uint32_t head = front(t);
      if (head == kNil || (t.limiter && throttled(t, now, first))) continue;
      if (best == kNil || more_urgent(jobs_[head], jobs_[best])) best = head;
    }
    if (best == kNil || take_place(best, now)) break;
  }
  if (best == kNil) return Status(Errc::timeout, "no ready job");
  Job& job = jobs_[best];
  unlink_ready(best);
  set_state(job, JobState::reserved);
  link(topics_[job.topic].reserved, best);  // for list_jobs(); set_state() unlinks it again
  ++job.attempts;
  // Lateness: measured with the `now` of this call, no clock read, no allocation.
  Topic& topic = topics_[job.topic];
  // A restored record's due may be anywhere in time: the distance saturates rather than wraps.
  timing::record(job.attempts == 1 ? topic.first : topic.retry,
                 rules::distance(job.due, now).count());
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
                  j.lease_deadline,
                  j.priority};
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
  to_dead(*j, now);
  return {};
}

Status Core::release(const Token& t, TimePoint now) {
  advance(now);
  Result<uint32_t> j = holder(t);
  if (!j) return j.status();
  detach(*j);  // the lease timer
  Job& job = jobs_[*j];
  --job.attempts;  // a reserved job has had at least this delivery
  set_state(job, JobState::ready);  // frees its place, if the topic is limited
  give_back(job, now);              // and its token: the delivery never reached a consumer
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
  const uint32_t ti = it->second;
  uint64_t n = 0;
  while (topics_[ti].dead.head != kNil) {
    const Status s = requeue_dead(jobs_[topics_[ti].dead.head].id, now);
    (void)s;  // a dead-list member is dead by construction
    ++n;
  }
  return n;
}

Result<JobRecord> Core::evict(std::string_view id, TimePoint now) {
  advance(now);
  Result<uint32_t> j = find(id);
  if (!j) return j.status();
  if (Status s = rules::check_reschedulable(id, jobs_[*j].state); !s.ok()) return s;
  JobRecord r = record_of(jobs_[*j]);
  erase(*j);
  return r;
}

std::optional<uint64_t> Core::seq_of(std::string_view id) const {
  const int64_t j = lookup(id, IdIndex::hash(id));
  if (j < 0) return std::nullopt;
  return jobs_[j].seq;
}

void Core::set_paused(std::string_view topic, bool paused, TimePoint now) {
  advance(now);
  if (!paused && !topic_ids_.contains(topic)) return;  // not paused here: nothing to resume
  const uint32_t i = topic_index(topic);
  Topic& t = topics_[i];
  const bool was = t.counts.paused;
  t.counts.paused = paused;
  changed(i);
  if (!paused && was && front(t) != kNil) ++ready_added_;
  unused_topic(i);  // when resumed (or never paused) and empty
}

uint64_t Core::purge_dead(std::string_view topic, TimePoint now) {
  advance(now);
  auto it = topic_ids_.find(topic);
  if (it == topic_ids_.end()) return 0;
  const uint32_t ti = it->second;  // erase() may free the topic, and `it` with it
  uint64_t n = 0;
  while (topics_[ti].dead.head != kNil) {
    erase(topics_[ti].dead.head);
    ++n;
  }
  totals_.purged += n;
  return n;
}

}  // namespace delayq::engine
