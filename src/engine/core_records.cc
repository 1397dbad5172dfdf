// The core's journal side: the records of changed jobs (take_changes) and putting jobs back
// from records (restore). See record.h for what a record holds and why.
#include <algorithm>

#include "engine/core.h"

namespace delayq::engine {

JobRecord Core::record_of(const Job& j) const {
  return JobRecord{j.seq,        j.id,        topics_[j.topic].name, j.body,
                   j.state,      j.due,       j.lease_deadline,      j.ttr,
                   j.attempts,   j.fence,     policies_[j.policy]};
}

Stats Core::take_totals_delta() {
  Stats delta = totals_;
  for_each_total(delta, journaled_, [](uint64_t& x, uint64_t y) { x -= y; });
  journaled_ = totals_;
  return delta;
}

std::vector<Change> Core::take_changes() {
  std::vector<Change> out;
  out.reserve(erased_.size() + dirty_.size());
  for (uint64_t seq : erased_) out.push_back(Change{seq, std::nullopt});
  for (uint32_t j : dirty_) {
    Job& job = jobs_[j];
    if (!job.dirty) continue;  // erased since, or listed twice
    job.dirty = false;
    out.push_back(Change{job.seq, record_of(job)});
  }
  erased_.clear();
  dirty_.clear();
  return out;
}

namespace {
void raise_to(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load();
  while (cur < v && !a.compare_exchange_weak(cur, v)) {
  }
}
}  // namespace

Status Core::restore(JobRecord&& r, TimePoint now) {
  // No advance() here: overdue jobs restored one after another must all wait for the next
  // advance(), which releases them together, in due order.
  (void)now;
  auto bad = [&](const std::string& why) {
    return Status(Errc::invalid_argument, "record " + std::to_string(r.seq) + " (job '" + r.id +
                                              "'): " + why);
  };
  if (r.id.empty() || r.id.size() > kMaxIdBytes) return bad("bad id length");
  if (r.topic.empty() || r.topic.size() > kMaxTopicBytes) return bad("bad topic length");
  if (std::string why = r.retry.validate(); !why.empty()) return bad(why);
  if (r.ttr <= Duration::zero()) return bad("ttr is not positive");
  const uint64_t h = IdIndex::hash(r.id);
  if (lookup(r.id, h) >= 0)
    return Status(Errc::duplicate_id, "record " + std::to_string(r.seq) + ": a job with id '" +
                                          r.id + "' was restored already");
  const uint32_t j = alloc_job();
  ids_.insert(h, j);
  const uint32_t topic = topic_index(r.topic);  // before r.id and r.body are moved from
  const uint32_t policy = policy_index(r.retry);
  Job& job = jobs_[j];
  job = Job{.timer_gen = job.timer_gen};  // see Job::timer_gen: a reused slot keeps counting
  job.id = std::move(r.id);
  job.body = std::move(r.body);
  job.ttr = r.ttr;
  job.topic = topic;
  job.policy = policy;
  job.seq = r.seq;
  job.attempts = r.attempts;
  job.fence = r.fence;
  job.due = r.due;
  job.state = JobState::delayed;
  ++topics_[topic].counts.delayed;
  switch (r.state) {
    case JobState::delayed:
    case JobState::ready:
      // Through the wheel even when overdue: everything due comes out of soon_ in due order.
      arm(j, r.due);
      break;
    case JobState::reserved:
      set_state(job, JobState::reserved);
      job.lease_deadline = r.lease_deadline;
      arm(j, r.lease_deadline);
      break;
    case JobState::dead:
      set_state(job, JobState::dead);
      link(topics_[topic].dead, j);
      break;
  }
  raise_to(*fences_, r.fence);
  raise_to(*seqs_, r.seq);
  return {};
}

}  // namespace delayq::engine
