// The core's records, its journal side: what the calls did beyond their results
// (take_effects(), with its parts take_changes() and take_totals_delta(), and record_of()), and
// putting jobs back from records (restore(), with check_record() refusing a record no call
// could have written). See record.h for what a record holds and why.
#include <fmt/format.h>

#include <algorithm>

#include "common/format.h"
#include "engine/core.h"

namespace delayq::engine {

JobRecord Core::record_of(const Job& j) const {
  return JobRecord{j.seq,        j.id,        topics_[j.topic].name, j.body,
                   j.state,      j.due,       j.lease_deadline,      j.ttr,
                   j.attempts,   j.fence,     policies_[j.policy],   j.priority};
}

Effects Core::take_effects() {
  Effects e;
  e.changes = take_changes();
  if (!e.changes.empty()) e.totals = take_totals_delta();
  e.made_ready = std::exchange(ready_added_, 0) > 0;
  e.earliest_scheduled = std::exchange(earliest_scheduled_, std::nullopt);
  return e;
}

Stats Core::take_totals_delta() {
  Stats delta = totals_;
  for_each_total(delta, journaled_, [](uint64_t& x, uint64_t y) { x -= y; });
  journaled_ = totals_;
  return delta;
}

std::vector<Change> Core::take_changes() {
  std::vector<Change> out;
  if (erased_.empty() && dirty_.empty()) return out;
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

// restore() raises the queue's seq and fence counters to a record's values. Every value a queue
// hands out stays far below this (fences start at the time of opening in nanoseconds, about
// 2^60.6 in 2026, and count up by one), so a record above it is damage, and restoring it would
// make the counter wrap around and hand out values again.
constexpr uint64_t kCounterLimit = uint64_t{1} << 63;

std::string bytes(size_t n) {
  return std::to_string(n) + " bytes";
}

// A name from a damaged record, fit for a message: at most 64 bytes, other bytes than printable
// ASCII as \xNN.
std::string shown(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size() && i < 64; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 15]);
    }
  }
  if (s.size() > 64) out += "...";
  return out;
}

// An instant no call could have stored: before 1970 (every call's `now` is later), or further
// from now than any max_delay allows (rules::kLongestDelay).
bool out_of_range(TimePoint t, TimePoint now) {
  return t < TimePoint{} || t > rules::plus(now, rules::kLongestDelay);
}
std::string instant(TimePoint t) {
  return std::to_string(t.time_since_epoch().count()) + " ns since 1970";
}

// Why no call of this engine could have written `r` (empty if one could). Such a record was
// damaged on disk or written by something else; restoring it would put a job in a state the
// core cannot handle (an unknown state), make one unreachable (due centuries away) or make
// counters repeat.
std::string check_record(const JobRecord& r, TimePoint now) {
  const auto state = static_cast<unsigned>(r.state);
  if (state > static_cast<unsigned>(JobState::dead))
    return "unknown state " + std::to_string(state);
  if (r.id.empty() || r.id.size() > kMaxIdBytes)
    return "id of " + bytes(r.id.size()) + " (1 to " + bytes(kMaxIdBytes) + " allowed)";
  if (r.topic.empty() || r.topic.size() > kMaxTopicBytes)
    return "topic of " + bytes(r.topic.size()) + " (1 to " + bytes(kMaxTopicBytes) + " allowed)";
  if (std::string why = r.retry.validate(); !why.empty()) return why;
  if (r.ttr <= Duration::zero() || r.ttr > rules::kLongestDelay)
    return "ttr of " + format_duration(r.ttr) + " is out of range (above 0, at most 100 years)";
  if (out_of_range(r.due, now))
    return "due time " + instant(r.due) + " is out of range (before 1970, or more than 100 " +
           "years from now)";
  if (r.state == JobState::reserved && out_of_range(r.lease_deadline, now))
    return "lease deadline " + instant(r.lease_deadline) + " is out of range (before 1970, or " +
           "more than 100 years from now)";
  if (r.seq == 0 || r.seq >= kCounterLimit)
    return "seq " + std::to_string(r.seq) + " is out of range";
  if (r.fence >= kCounterLimit) return "fence " + std::to_string(r.fence) + " is out of range";
  return {};
}
}  // namespace

Status Core::restore(JobRecord&& r, TimePoint now) {
  // No advance() here: overdue jobs restored one after another must all wait for the next
  // advance(), which releases them together, in due order.
  auto corrupt = [&](const std::string& why) {
    return Status(Errc::corrupt, fmt::format("record seq {} (job '{}', topic '{}') cannot be "
                                             "restored: {}",
                                             r.seq, shown(r.id), shown(r.topic), why));
  };
  if (std::string why = check_record(r, now); !why.empty()) return corrupt(why);
  const uint64_t h = IdIndex::hash(r.id);
  if (lookup(r.id, h) >= 0) return corrupt("a job with this id was restored already");
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
  job.priority = r.priority;  // any value is one a push could have given
  job.seq = r.seq;
  job.attempts = r.attempts;
  job.fence = r.fence;
  job.due = r.due;
  // As in push(): a job starts as ready, then moves to the state of its record.
  job.state = JobState::ready;
  ++topics_[topic].counts.ready;
  switch (r.state) {
    case JobState::delayed:
    case JobState::ready:
      // Through the wheel even when overdue: everything due comes out of soon_ in due order.
      delay_until(j, r.due);
      arm(j, r.due);
      break;
    case JobState::reserved:
      set_state(job, JobState::reserved);
      link(topics_[topic].reserved, j);
      job.lease_deadline = r.lease_deadline;
      arm(j, r.lease_deadline);
      break;
    case JobState::dead:
      set_state(job, JobState::dead);
      job.lease_deadline = r.lease_deadline;  // when it died (see to_dead())
      link(topics_[topic].dead, j);  // in restore order: finish_restore() sorts the line
      break;
  }
  raise_to(*fences_, r.fence);
  raise_to(*seqs_, r.seq);
  return {};
}

}  // namespace delayq::engine
