// Browsing in the worker (check.h): what a page of list_jobs() may show of a topic's jobs.
#include "check.h"

namespace delayq::crash {

namespace {

// Whether the model allows `job` to be in `want` (ready: waiting and due) at some instant of w.
bool model_allows(const Model& m, uint64_t job, St want, Span w) {
  auto it = m.jobs.find(job);
  if (it == m.jobs.end()) return false;
  for (const Rec& c : it->second.cands)
    for (const Rec& p : project(c, job, w))
      if (p.st == want && (want != St::waiting || p.due.lo <= w.hi)) return true;
  return false;
}

// Whether `b` may follow `a` in a page of `state`: ready jobs by priority then due time, dead
// ones in the order they died.
bool in_order(const JobInfo& a, const JobInfo& b, JobState state) {
  if (state == JobState::dead) return a.dead_since <= b.dead_since;
  return a.priority != b.priority ? a.priority < b.priority : a.due <= b.due;
}

std::string key_text(const JobInfo& j, JobState state, int64_t origin) {
  if (state == JobState::dead) return " (died " + rel_text(ns_of(j.dead_since), origin) + ")";
  return " (" + std::to_string(j.priority) + ", due " + rel_text(ns_of(j.due), origin) + ")";
}

}  // namespace

std::vector<std::pair<uint64_t, std::string>> page_problems(const JobPage& page, size_t topic,
                                                            JobState state, const Model& m,
                                                            Span w, const JobInfo* prev) {
  std::vector<std::pair<uint64_t, std::string>> out;
  const std::string asked =
      "list_jobs(" + kTopics[topic] + ", " + to_string(state) + ") listed ";
  for (const JobInfo& info : page.jobs) {
    const std::optional<uint64_t> job = parse_job_id(info.id);
    if (!job) {
      out.emplace_back(0, asked + "an id this harness never uses: '" + info.id + "'");
      continue;
    }
    const std::string what = asked + info.id;
    if (info.topic != kTopics[topic] || topic_of(*job, m.threads) != kTopics[topic])
      out.emplace_back(*job, what + " of topic " + info.topic);
    if (info.state != state) out.emplace_back(*job, what + " as " + to_string(info.state));
    if (info.priority != priority_of(*job))
      out.emplace_back(*job, what + " with priority " + std::to_string(info.priority) +
                                 ", pushed with " + std::to_string(priority_of(*job)));
    if (!model_allows(m, *job, state == JobState::dead ? St::dead : St::waiting, w))
      out.emplace_back(*job, what + ", which the reports do not allow in that state then");
    if (prev != nullptr && !in_order(*prev, info, state))
      out.emplace_back(*job, what + key_text(info, state, m.origin) + " after " + prev->id +
                                 key_text(*prev, state, m.origin) + ", out of order");
    prev = &info;
  }
  return out;
}

}  // namespace delayq::crash
