// The core's tables, and who holds what in them: topics interned to small numbers (with the idle
// ones kept for their lateness: topic_index(), unused_topic(), unlink_idle(), free_topic()),
// retry policies interned and shared by reference count (policy_index(), release_policy()),
// the job slots and their free list (alloc_job()), and the lookups by id and by token (find(),
// holder(), info()). Nothing here changes a job's state or touches the wheel: that is
// core_transitions.cc.
#include "engine/core.h"

#include "common/rules.h"

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
  if (t.idle || t.counts.paused || t.limiter || t.jobs() > 0) return;
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
                 .retry = policy,
                 .priority = job.priority,
                 .dead_since = job.state == JobState::dead ? job.lease_deadline : TimePoint{}};
}

uint32_t Core::alloc_job() {
  if (free_ == kNil) return jobs_.emplace_back();
  const uint32_t j = free_;
  free_ = jobs_[j].next;
  return j;
}

}  // namespace delayq::engine
