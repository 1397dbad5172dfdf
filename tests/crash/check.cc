// Looking at a reopened store (check.h).
#include "check.h"

#include <algorithm>
#include <set>

namespace delayq::crash {

namespace {

using Steady = std::chrono::steady_clock;
constexpr auto kDrainLimit = 10s;

std::string static_problem(const JobInfo& info, uint64_t salt, size_t threads, uint64_t job) {
  const std::string pushed = body_of(salt, job);
  if (info.body != pushed)
    return "its body (" + std::to_string(info.body.size()) + " bytes) differs from the one " +
           "pushed (" + std::to_string(pushed.size()) + " bytes)";
  if (info.topic != topic_of(job, threads)) return "it is on topic " + info.topic;
  if (info.max_attempts != kMaxAttempts)
    return "its max_attempts is " + std::to_string(info.max_attempts);
  if (info.ttr != ttr_of(job)) return "its ttr is " + ms_text(info.ttr);
  if (info.priority != priority_of(job))
    return "its priority is " + std::to_string(info.priority) + ", pushed with " +
           std::to_string(priority_of(job));
  return "";
}

Record seen_record(uint64_t job, const Obs& o) {
  Record r = make_record(Kind::seen, job);
  r.code = o.exists ? static_cast<uint8_t>(o.state) : kAbsent;
  r.attempt = o.attempts;
  r.due = o.due;
  r.lease = o.lease;
  r.t0 = o.when.lo;
  r.t1 = o.when.hi;
  return r;
}

std::string limits_text(uint64_t code) {
  if (code == 0) return "no limits";
  if (code == kOtherLimits) return "limits the harness never set";
  return "kTopicLimits[" + std::to_string(code - 1) + "]";
}

std::string limits_may_text(uint16_t may) {
  std::string s;
  for (uint64_t c = 0; c < 16; ++c)
    if ((may >> c) & 1) s += (s.empty() ? "" : " or ") + limits_text(c);
  return s;
}

// The load's jobs: on every topic but kScheduleTopic, whose jobs the schedules push.
uint64_t jobs_in(const Stats& s) {
  uint64_t n = 0;
  for (const auto& [topic, c] : s.topics)
    if (topic != kScheduleTopic) n += c.delayed + c.ready + c.reserved + c.dead;
  return n;
}

}  // namespace

uint64_t jobs_on(const Stats& s, const std::string& topic) {
  auto it = s.topics.find(topic);
  if (it == s.topics.end()) return 0;
  return it->second.delayed + it->second.ready + it->second.reserved + it->second.dead;
}

Observation observe(Queue& q, const Model& m, int64_t open_began) {
  Observation o;
  o.open_began = open_began;
  std::vector<uint64_t> ids;
  for (const auto& entry : m.jobs) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  for (uint64_t job : ids) {
    Obs ob;
    ob.when.lo = ns_of(wall_now());
    Result<JobInfo> got = q.get(job_id(job));
    ob.when.hi = ns_of(wall_now());
    if (got.ok()) {
      ob.exists = true;
      ob.state = got->state;
      ob.attempts = got->attempts;
      ob.due = ns_of(got->due);
      ob.lease = ns_of(got->lease_deadline);
      if (std::string why = static_problem(*got, m.salt, m.threads, job); !why.empty())
        o.wrong[job] = why;
    } else if (!got.is(Errc::not_found)) {
      o.wrong[job] = "get() failed: " + got.status().to_string();
    }
    o.jobs[job] = ob;
  }
  observe_schedules(q, o);
  const Stats s = q.stats();
  o.stored = jobs_in(s);
  o.occurrences_counted = jobs_on(s, kScheduleTopic);
  o.pushed = s.pushed;
  o.acked = s.acked;
  o.cancelled = s.cancelled;
  o.purged = s.purged;
  for (size_t i = 0; i < kTopics.size(); ++i)
    if (auto it = s.topics.find(kTopics[i]); it != s.topics.end() && it->second.paused)
      o.paused |= 1u << i;
  for (size_t i = 0; i < kTopics.size(); ++i) {
    auto it = s.flow.find(kTopics[i]);
    const uint64_t code =
        limits_code(it == s.flow.end() ? std::nullopt : std::optional(it->second.limits));
    o.limits |= code << (4 * i);
  }
  o.complete = true;
  return o;
}

std::vector<Record> observation_records(const Observation& o) {
  std::vector<Record> out;
  for (const auto& [job, ob] : o.jobs) {
    Record r = seen_record(job, ob);
    if (auto it = o.wrong.find(job); it != o.wrong.end()) set_text(r, it->second);
    out.push_back(r);
  }
  const std::vector<Record> schedules = schedule_records(o);
  out.insert(out.end(), schedules.begin(), schedules.end());
  Record end = make_record(Kind::observed);
  end.due = static_cast<int64_t>(o.occurrence_jobs);
  end.lease = static_cast<int64_t>(o.occurrences_counted);
  end.t0 = o.open_began;
  end.n = o.stored;
  end.totals[0] = o.pushed;
  end.totals[1] = o.acked;
  end.totals[2] = o.cancelled;
  end.totals[3] = o.purged;
  end.attempt = o.paused;
  end.arg = static_cast<int64_t>(o.limits);
  out.push_back(end);
  return out;
}

bool check_observation(Model& m, const Observation& o) {
  const size_t problems_before = m.problems.size();
  std::array<bool, kWorkers> unreported_used{};
  uint64_t present = 0;
  std::vector<uint64_t> ids;
  for (const auto& entry : m.jobs) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  for (uint64_t job : ids) {
    JobModel& j = m.jobs[job];
    auto it = o.jobs.find(job);
    if (it == o.jobs.end()) {
      m.problem_about(job, job_id(job) + " was not looked at");
      continue;
    }
    const Obs& ob = it->second;
    m.note(job, seen_record(job, ob));
    present += ob.exists;
    if (auto w = o.wrong.find(job); w != o.wrong.end())
      m.problem_about(job, job_id(job) + " after a reopen: " + w->second);
    bool ok = std::any_of(j.cands.begin(), j.cands.end(),
                          [&](const Rec& c) { return shows(c, job, ob); });
    const size_t t = m.reserver_of(job);
    if (!ok && m.unreported[t] && !unreported_used[t]) {
      ok = std::any_of(j.cands.begin(), j.cands.end(), [&](const Rec& c) {
        return shows_after_unreported_delivery(c, job, ob, *m.unreported[t]);
      });
      unreported_used[t] = ok;
      m.counts.unreported_deliveries += ok;
    }
    if (!ok) {
      m.problem_about(job, job_id(job) + ": a reopened store shows it " + obs_text(ob, m.origin) +
                               (ob.exists && j.gone() ? ", although the reports have it gone"
                                                      : ", which the reports do not allow"));
      continue;
    }
    if (j.cands.size() > 1) ++(ob.exists ? m.counts.resolved_present : m.counts.resolved_missing);
    m.counts.seen_dead += ob.exists && ob.state == JobState::dead;
    j.cands = {rec_of(ob)};
  }
  // Each topic paused or not, as the reports allow (a pause that returned is kept).
  for (size_t i = 0; i < kTopics.size(); ++i) {
    const bool paused = (o.paused >> i) & 1;
    if (!(m.pause_may[i] & (paused ? Model::kMayPause : Model::kMayRun)))
      m.problem(kTopics[i] + std::string(" is ") + (paused ? "paused" : "not paused") +
                " in a reopened store, which the reports do not allow");
    m.counts.seen_paused += paused;
  }
  m.take_pauses(o.paused);
  // Each topic's limits one that the reports allow (limits that were set or cleared are kept).
  for (size_t i = 0; i < kTopics.size(); ++i) {
    const uint64_t code = (o.limits >> (4 * i)) & 15;
    if (!((m.limits_may[i] >> code) & 1))
      m.problem(kTopics[i] + " has " + limits_text(code) + " after a reopen; the reports allow " +
                limits_may_text(m.limits_may[i]));
    m.counts.seen_limited += code != 0;
    m.limits_may[i] = static_cast<uint16_t>(1u << code);
  }
  // Nothing else is in the store, and its totals count exactly its jobs.
  if (o.stored != present)
    m.problem("the store holds " + std::to_string(o.stored) + " jobs; the reports allow exactly " +
              std::to_string(present));
  // (The totals count the schedules' occurrence jobs too.)
  if (o.pushed - o.acked - o.cancelled - o.purged != o.stored + o.occurrences_counted)
    m.problem("the totals of stats() do not match the jobs: pushed " + std::to_string(o.pushed) +
              " - acked " + std::to_string(o.acked) + " - cancelled " +
              std::to_string(o.cancelled) + " - purged " + std::to_string(o.purged) +
              " != " + std::to_string(o.stored) + " jobs stored + " +
              std::to_string(o.occurrences_counted) + " occurrence jobs");
  check_schedules(m, o);
  const Observation& last = m.last_totals;
  if (last.complete && !m.totals_may_drop &&
      (o.pushed < last.pushed || o.acked < last.acked || o.cancelled < last.cancelled ||
       o.purged < last.purged))
    m.problem("the totals of stats() went down after a kill (pushed " +
              std::to_string(last.pushed) + " -> " + std::to_string(o.pushed) + ", acked " +
              std::to_string(last.acked) + " -> " + std::to_string(o.acked) + ")");
  m.last_totals = Observation{};
  m.last_totals.pushed = o.pushed;
  m.last_totals.acked = o.acked;
  m.last_totals.cancelled = o.cancelled;
  m.last_totals.purged = o.purged;
  m.last_totals.complete = true;
  m.unreported = {};
  m.unchecked = false;
  ++m.counts.observations;
  if (m.problems.size() != problems_before) return false;
  for (uint64_t job : ids)
    if (m.jobs[job].gone()) {
      m.jobs.erase(job);
      m.history.erase(job);
    }
  return true;
}

void sweep_forgotten(Queue& q, Model& m) {
  int named = 0;
  for (uint64_t job = 1; job < m.next_job && named < 5; ++job) {
    if (m.jobs.count(job)) continue;
    Result<JobInfo> got = q.get(job_id(job));
    if (got.is(Errc::not_found)) continue;
    ++named;
    m.problem(job_id(job) + " is in the store (" +
              (got.ok() ? std::string(to_string(got->state)) : got.status().to_string()) +
              ") although a reopened store had shown it gone earlier");
  }
}

std::vector<std::string> delivery_static_problems(const Delivery& d, const Model& m) {
  const uint64_t salt = m.salt;
  std::vector<std::string> out;
  const std::optional<uint64_t> job = parse_job_id(d.id);
  if (!job) {
    out.push_back("delivered an id this harness never uses: '" + d.id + "'");
    return out;
  }
  const std::string att = " (attempt " + std::to_string(d.attempt) + ")";
  if (d.body != body_of(salt, *job))
    out.push_back(d.id + att + " delivered with a body of " + std::to_string(d.body.size()) +
                  " bytes that differs from the " + std::to_string(body_of(salt, *job).size()) +
                  " bytes pushed");
  if (d.topic != topic_of(*job, m.threads)) out.push_back(d.id + " delivered on topic " + d.topic);
  if (d.max_attempts != kMaxAttempts)
    out.push_back(d.id + " delivered with max_attempts " + std::to_string(d.max_attempts));
  if (d.token.id != d.id) out.push_back(d.id + " delivered with a token for " + d.token.id);
  if (d.priority != priority_of(*job))
    out.push_back(d.id + att + " delivered with priority " + std::to_string(d.priority) +
                  ", pushed with " + std::to_string(priority_of(*job)));
  return out;
}

Record delivery_record(const Delivery& d, uint64_t job, uint8_t thread, int64_t t0, int64_t t1) {
  Record r = make_record(Kind::reserved, job);
  r.thread = thread;
  r.t0 = t0;
  r.t1 = t1;
  r.attempt = d.attempt;
  r.due = ns_of(d.due);
  r.lease = ns_of(d.lease_deadline);
  r.n = d.token.fence;
  return r;
}

void drain(Model& m, Queue& q, size_t* owed_count, uint64_t* delivered_count) {
  m.begin_run();
  for (const std::string& topic : kTopics)  // what a worker left paused
    if (Status s = q.resume(topic); !s.ok()) m.problem("drain: resume failed: " + s.to_string());
  m.take_pauses(0);
  std::vector<uint64_t> owed;
  for (uint64_t job : m.live_jobs())
    if (m.jobs[job].cands[0].st != St::dead) owed.push_back(job);
  *owed_count = owed.size();
  std::set<uint64_t> delivered;
  auto settled = [&](uint64_t job) {  // acked, or dead after its last attempt
    Result<JobInfo> g = q.get(job_id(job));
    if (g.is(Errc::not_found)) return true;
    return g.ok() && g->state == JobState::dead && g->attempts >= g->max_attempts;
  };
  const Steady::time_point limit = Steady::now() + kDrainLimit;
  bool all_settled = owed.empty();
  while (!all_settled && Steady::now() < limit && m.problems.empty()) {
    Record intent = make_record(Kind::reserve_intent);
    intent.t0 = ns_of(wall_now());
    m.apply(intent);
    Result<Delivery> r = q.reserve(kTopics, 50ms);
    const int64_t t1 = ns_of(wall_now());
    if (!r.ok()) {
      m.apply(done_record(Kind::reserve_done, intent, r.status(), t1));
      if (!r.is(Errc::timeout)) break;
      all_settled = std::all_of(owed.begin(), owed.end(), settled);
      continue;
    }
    const uint64_t job = parse_job_id(r->id).value_or(0);
    for (const std::string& p : delivery_static_problems(*r, m)) m.problem_about(job, p);
    if (!m.apply(delivery_record(*r, job, 0, intent.t0, t1))) break;
    delivered.insert(job);
    Record ack = make_record(Kind::ack_intent, job);
    ack.thread = static_cast<uint8_t>(m.handler_of(job));
    ack.n = r->token.fence;
    ack.t0 = ns_of(wall_now());
    m.apply(ack);
    const Status s = q.ack(r->token);
    m.apply(done_record(Kind::ack_done, ack, s, ns_of(wall_now())));
  }
  *delivered_count = delivered.size();
  uint64_t dead = 0;
  for (uint64_t job : m.live_jobs()) {
    Result<JobInfo> g = q.get(job_id(job));
    // Dead letters stay; a job owed may die only of a lease that ran out on its last attempt.
    const bool was_owed = std::binary_search(owed.begin(), owed.end(), job);
    if (g.ok() && g->state == JobState::dead && (!was_owed || g->attempts >= g->max_attempts)) {
      ++dead;
      continue;
    }
    m.problem_about(job, "drain: " + job_id(job) + " was owed and is still " +
                             (g.ok() ? std::string(to_string(g->state)) + ", due in " +
                                           ms_text(g->due - wall_now())
                                     : g.status().to_string()) +
                             " after " + std::to_string(kDrainLimit.count()) + " s");
  }
  const uint64_t stored = jobs_in(q.stats());
  if (stored != dead)
    m.problem("drain: the store still holds " + std::to_string(stored) + " jobs, " +
              std::to_string(dead) + " of them dead letters the harness knows");
}

}  // namespace delayq::crash
