// The prefix search after a power loss (prefix.h), over the lanes of prefix_calls.h.
#include "prefix.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#include "prefix_calls.h"
#include "prefix_joint.h"

namespace delayq::crash {

namespace {

static_assert(std::tuple_size_v<decltype(PrefixVerdict::kept)> == kLanes);

// Pause states ride in the search as pseudo jobs: topic i is kTopicKey + i, its Rec's state
// St::reserved while the topic is paused and St::waiting while it runs. So do the schedules of
// thread 0's lane: schedule n is kScheduleKey + n, St::absent while it is gone, St::waiting or
// St::reserved while it runs or is paused, its rule in `attempts`; and the occurrences its calls
// took: the i-th (ScheduleView::occs) is kOccKey + i, St::absent once an ack took its job, else
// St::waiting.
constexpr uint64_t kTopicKey = uint64_t{1} << 62;
constexpr uint64_t kOccKey = (uint64_t{1} << 61) + (uint64_t{1} << 60);
constexpr uint64_t kScheduleKey = uint64_t{1} << 61;
bool is_topic_key(uint64_t key) {
  return key >= kTopicKey;
}
bool is_occ_key(uint64_t key) {
  return key >= kOccKey && key < kTopicKey;
}
bool is_schedule_key(uint64_t key) {
  return key >= kScheduleKey && key < kOccKey;
}
bool is_pseudo_key(uint64_t key) {
  return key >= kScheduleKey;
}

// What the lane search knows of schedules: what the store shows, and the occurrences taken.
struct ScheduleView {
  const PrefixSchedules& s;
  std::vector<std::pair<uint64_t, int64_t>> occs;  // sorted
  uint64_t occ_key(const std::pair<uint64_t, int64_t>& occ) const {
    return kOccKey + (std::lower_bound(occs.begin(), occs.end(), occ) - occs.begin());
  }
};

Rec schedule_rec(bool there, const SchedState& st) {
  Rec r;
  r.st = !there ? St::absent : st.paused ? St::reserved : St::waiting;
  r.attempts = static_cast<uint32_t>(st.rule);
  return r;
}

// A job of a consumer's lane pushed in the cycle by its feeder lane: the push's index there.
struct Fed {
  size_t push_at = 0;
  bool touched = false;  // a call of the consumer's, among those applied, was on it
};

// One lane's search: the cuts that explain its jobs and its topics' pause states.
class LaneSearch {
 public:
  LaneSearch(const std::vector<Call>& calls, const std::map<uint64_t, Obs>& seen,
             uint32_t seen_paused, const ScheduleView& sv, size_t shards, int64_t origin)
      : cs_(calls), seen_(seen), seen_paused_(seen_paused), sv_(sv), shards_(shards),
        origin_(origin) {}

  // `initial`: the lane's jobs (and topics) before the cycle, or for the jobs of `fed`, as
  // their push left them. `schedules`: the lane makes the schedule calls (thread 0's).
  void start(const std::map<uint64_t, Rec>& initial, uint32_t paused, std::vector<size_t> topics,
             std::map<uint64_t, Fed> fed, bool schedules) {
    initial_ = initial;
    fed_initial_ = fed;
    topics_ = std::move(topics);
    for (size_t i : topics_)
      initial_[kTopicKey + i] = Rec{(paused >> i) & 1 ? St::reserved : St::waiting, 0, {}, {}, 0};
    if (schedules) {
      for (const auto& [n, st] : sv_.s.before) initial_[kScheduleKey + n] = schedule_rec(true, st);
      for (const auto& [n, st] : sv_.s.seen) initial_.try_emplace(kScheduleKey + n);  // gone
      for (const Call& c : cs_)
        if (is_schedule_call(c.intent.kind) && c.intent.kind != Kind::occ_intent)
          initial_.try_emplace(kScheduleKey + c.intent.job);  // created in the cycle
      for (size_t i = 0; i < sv_.occs.size(); ++i)
        initial_[kOccKey + i] = Rec{St::waiting, 0, {}, {}, 0};
    }
    reset();
  }

  std::vector<Cut> run(std::string* why, std::vector<uint64_t>* suspects, size_t lane) {
    std::vector<Cut> fits;
    size_t closest = 0;
    std::set<uint64_t> closest_bad = bad_;
    const size_t n = cs_.size();
    for (size_t c = 0; c <= n; ++c) {
      if (bad_.empty()) fits.push_back(bounded(Cut{c, false}));
      if (c < n && partly_applied(cs_[c])) fits.push_back(bounded(Cut{c, true}));
      if (bad_.size() <= closest_bad.size()) {
        closest = c;
        closest_bad = bad_;
      }
      if (c == n) break;
      const Call& call = cs_[c];
      if (!call.answered &&
          (call.intent.kind == Kind::reserve_intent || call.intent.kind == Kind::purge_intent ||
           call.intent.kind == Kind::rqtopic_intent)) {
        if (in_flight_fits(call)) fits.push_back(bounded(Cut{n, false}));
        break;
      }
      apply(call);
    }
    if (fits.empty()) describe(closest, closest_bad, why, suspects, lane);
    return fits;
  }

 private:
  void reset() {
    e_ = initial_;
    fed_ = fed_initial_;
    bad_.clear();
    for (const auto& entry : e_) recheck(entry.first);
  }
  Obs seen_of(uint64_t job) const {
    auto it = seen_.find(job);
    return it == seen_.end() ? Obs{} : it->second;
  }
  bool matches(uint64_t key) const {
    const Rec& r = e_.at(key);
    if (is_topic_key(key))
      return (r.st == St::reserved) == (((seen_paused_ >> (key - kTopicKey)) & 1) != 0);
    if (is_occ_key(key)) {
      auto it = sv_.s.acks.find(sv_.occs[key - kOccKey]);
      return it == sv_.s.acks.end() || it->second == (r.st == St::absent);
    }
    if (is_schedule_key(key)) {
      auto it = sv_.s.seen.find(key - kScheduleKey);
      const Rec shown = schedule_rec(it != sv_.s.seen.end(),
                                     it != sv_.s.seen.end() ? it->second : SchedState{});
      return shown.st == r.st && (r.st == St::absent || shown.attempts == r.attempts);
    }
    const Obs o = seen_of(key);
    // A consumer's job that none of its calls took yet, not in the store: its push was lost.
    if (auto f = fed_.find(key); f != fed_.end() && !f->second.touched && !o.exists) return true;
    return shows(r, key, o);
  }
  void recheck(uint64_t key) {
    if (matches(key))
      bad_.erase(key);
    else
      bad_.insert(key);
  }

  // The feeder's bounds at this cut (a job an unreported delivery took is in the store).
  Cut bounded(Cut cut) const {
    for (const auto& [job, f] : fed_) {
      if (f.touched || seen_of(job).exists)
        cut.lo = std::max(cut.lo, f.push_at + 1);
      else
        cut.hi = std::min(cut.hi, f.push_at);
    }
    return cut;
  }

  void apply(const Call& call) {
    const Record& d = *call.done;
    if (d.code != 0) return;  // refused or failed: nothing written
    const Span w{call.intent.t0, d.t1};
    const Record* done = call.answered ? &d : nullptr;
    if (call.intent.kind == Kind::pause_intent || call.intent.kind == Kind::resume_intent) {
      const uint64_t key = kTopicKey + static_cast<uint64_t>(call.intent.arg);
      if (!e_.count(key)) return;
      e_[key].st = call.intent.kind == Kind::pause_intent ? St::reserved : St::waiting;
      return recheck(key);
    }
    if (is_schedule_call(call.intent.kind)) return apply_schedule_call(call);
    for (uint64_t job : jobs_of(call)) {
      if (!initial_.count(job)) continue;  // another lane's job (a push for a consumer)
      Rec& r = e_[job];
      if (call.intent.kind == Kind::reserve_intent) {
        r = delivered(d, job);
      } else if (!call.answered && !may_happen(r, job, call.intent, w)) {
        continue;
      } else {
        r = after_call(r, job, call.intent, done, w);
      }
      // A call of the consumer's that wrote on a job: written after the job's push.
      if (auto f = fed_.find(job); f != fed_.end()) f->second.touched = true;
      recheck(job);
    }
  }

  // A schedule call: a schedule's state, or an occurrence taken (its ack done).
  void apply_schedule_call(const Call& call) {
    const Kind kind = call.intent.kind;
    if (kind == Kind::occ_intent && !call.occurrence) return;  // nothing delivered
    const uint64_t key = kind == Kind::occ_intent ? sv_.occ_key(*call.occurrence)
                                                  : kScheduleKey + call.intent.job;
    auto it = e_.find(key);
    if (it == e_.end()) return;
    Rec& r = it->second;
    if (kind == Kind::occ_intent) {
      r.st = St::absent;
    } else if (kind == Kind::sched_intent) {
      if (r.st == St::absent) r.st = St::waiting;  // created running; replaced: its pause kept
      r.attempts = static_cast<uint32_t>(call.intent.n);
    } else if (kind == Kind::unsched_intent) {
      r.st = St::absent;
    } else if (r.st != St::absent) {
      r.st = kind == Kind::spause_intent ? St::reserved : St::waiting;
    }
    recheck(key);
  }

  static bool may_happen(const Rec& r, uint64_t job, const Record& intent, Span w) {
    if (is_token_call(intent.kind)) return may_hold(r, intent.n, w);
    if (intent.kind == Kind::resched_intent) return may_be(r, job, w, St::waiting);
    if (intent.kind == Kind::requeue_intent || intent.kind == Kind::rqtopic_intent)
      return may_be(r, job, w, St::dead);
    return true;
  }

  // An answered purge_dead or requeue_dead_topic on several shards, its writes cut between
  // shards: the jobs that differ are some of those it deleted (gone) or requeued (requeued).
  bool partly_applied(const Call& call) const {
    if (shards_ == 1 || !call.answered ||
        (call.intent.kind != Kind::purge_intent && call.intent.kind != Kind::rqtopic_intent) ||
        call.done->code != 0 || bad_.empty())
      return false;
    const Span w{call.intent.t0, call.done->t1};
    for (uint64_t job : bad_)
      if (std::find(call.listed.begin(), call.listed.end(), job) == call.listed.end() ||
          !shows(after_call(e_.at(job), job, call.intent, &*call.done, w), job, seen_of(job)))
        return false;
    return true;
  }

  // A reserve in flight may have delivered one job of this lane's; a purge_dead or
  // requeue_dead_topic in flight may have deleted or requeued any of its topic's jobs that may
  // have been dead.
  bool in_flight_fits(const Call& call) const {
    const Span w{call.intent.t0, call.done->t1};
    for (uint64_t job : bad_) {
      if (is_pseudo_key(job)) return false;
      const Rec& r = e_.at(job);
      const Obs o = seen_of(job);
      if (call.intent.kind == Kind::reserve_intent) {
        if (bad_.size() > 1 || !shows_after_unreported_delivery(r, job, o, w)) return false;
      } else if (topic_index_of(job, call.threads) != static_cast<size_t>(call.intent.arg) ||
                 !may_be(r, job, w, St::dead) ||
                 !shows(after_call(r, job, call.intent, nullptr, w), job, o)) {
        return false;
      }
    }
    return true;
  }

  void describe(size_t closest, const std::set<uint64_t>& bad, std::string* why,
                std::vector<uint64_t>* suspects, size_t lane) {
    *why = "no prefix of " + lane_name(lane) + "'s " + std::to_string(cs_.size()) +
           " calls explains its jobs; the closest, its first " + std::to_string(closest) +
           " calls" +
           (closest > 0 ? " (up to the " + call_text(cs_[closest - 1]) + ")" : std::string()) +
           ", leaves " + std::to_string(bad.size()) + " jobs different:";
    reset();  // replay up to `closest` to name what each differing job should be
    for (size_t c = 0; c < closest; ++c) apply(cs_[c]);
    size_t named = 0;
    for (uint64_t key : bad) {
      if (named++ == 4) {
        *why += " ...";
        break;
      }
      if (is_topic_key(key)) {
        const bool paused = e_[key].st == St::reserved;
        *why += " topic " + kTopics[key - kTopicKey] + " should be " +
                (paused ? "paused" : "running") + ", the store has it " +
                (paused ? "running;" : "paused;");
        continue;
      }
      if (is_occ_key(key)) {
        const auto& [n, t] = sv_.occs[key - kOccKey];
        *why += " the ack of " + occurrence_job_id(schedule_id(n), at_ns(t)) + " should be " +
                (e_[key].st == St::absent ? "kept" : "lost") + ", the store has it " +
                (e_[key].st == St::absent ? "lost;" : "kept;");
        continue;
      }
      if (is_schedule_key(key)) {
        auto state = [](const Rec& r) {
          if (r.st == St::absent) return std::string("gone");
          return std::string(r.st == St::reserved ? "paused" : "running") + " with rule " +
                 (r.attempts < kScheduleRules.size() ? kScheduleRules[r.attempts] : "?");
        };
        auto it = sv_.s.seen.find(key - kScheduleKey);
        *why += " " + schedule_id(key - kScheduleKey) + " should be " + state(e_[key]) +
                ", the store has it " +
                state(schedule_rec(it != sv_.s.seen.end(),
                                   it != sv_.s.seen.end() ? it->second : SchedState{})) +
                ";";
        continue;
      }
      *why += " " + job_id(key) + " should be " + rec_text(e_[key], origin_) +
              ", the store has it " + obs_text(seen_of(key), origin_) + ";";
      suspects->push_back(key);
    }
  }

  const std::vector<Call>& cs_;
  const std::map<uint64_t, Obs>& seen_;
  const uint32_t seen_paused_;
  const ScheduleView& sv_;
  const size_t shards_;
  const int64_t origin_;
  std::vector<size_t> topics_;
  std::map<uint64_t, Rec> initial_, e_;
  std::map<uint64_t, Fed> fed_initial_, fed_;
  std::set<uint64_t> bad_;  // jobs (and pseudo jobs) that differ from what the store shows
};

}  // namespace

PrefixVerdict explain_by_prefix(const std::unordered_map<uint64_t, JobModel>& before,
                                const std::vector<Record>& records,
                                const std::map<uint64_t, Obs>& seen, int64_t kill_hi, size_t shards,
                                int64_t origin, const PrefixPauses& pauses, bool consumer,
                                size_t threads, const PrefixSchedules& schedules) {
  PrefixVerdict v;
  const std::array<std::vector<Call>, kLanes> calls =
      calls_of(records, kill_hi, shards, pauses.before, threads, schedules.before);
  // The schedule calls are thread 0's (schedule_load.cc), and so the occurrences they took.
  ScheduleView sv{schedules, {}};
  for (const Call& c : calls[0])
    if (c.occurrence) sv.occs.push_back(*c.occurrence);
  std::sort(sv.occs.begin(), sv.occs.end());
  sv.occs.erase(std::unique(sv.occs.begin(), sv.occs.end()), sv.occs.end());
  // The lane that makes the calls on a job (other than its push, made by its owner's lane).
  auto lane_of_job = [consumer, threads](uint64_t job) {
    if (!consumer) return owner_of(job, threads);
    const size_t topic = topic_index_of(job, threads);
    return topic == kConsumerTopic  ? kConsumerLane
           : topic == kConsumeTopic ? kConsumeLane
                                    : owner_of(job, threads);
  };
  std::array<std::optional<size_t>, kLanes> feeder;
  if (consumer) {
    feeder[kConsumerLane] = kConsumerTopic / 2;  // the thread that pushes to the topic
    feeder[kConsumeLane] = kConsumeTopic / 2;
  }
  std::array<std::vector<Cut>, kLanes> fits;
  // lost_from[l][c]: the answered writes among lane l's calls from c on.
  std::array<std::vector<uint64_t>, kLanes> lost_from;
  for (size_t l = 0; l < kLanes; ++l) {
    const std::vector<Call>& cs = calls[l];
    const size_t n = cs.size();
    v.calls[l] = n;
    lost_from[l].assign(n + 1, 0);
    for (size_t c = n; c-- > 0;) lost_from[l][c] = lost_from[l][c + 1] + answered_write(cs[c]);
    v.answered += lost_from[l][0];
    std::map<uint64_t, Rec> initial;  // the lane's jobs before the cycle
    for (const auto& [job, j] : before)
      if (lane_of_job(job) == l && !j.cands.empty()) initial[job] = j.cands[0];
    std::map<uint64_t, Fed> fed;
    const std::vector<Call>& pushers = feeder[l] ? calls[*feeder[l]] : cs;
    for (size_t c = 0; c < pushers.size(); ++c) {
      const Call& p = pushers[c];
      if (p.intent.kind != Kind::push_intent && p.intent.kind != Kind::batch_intent) continue;
      for (uint64_t job : jobs_of(p)) {
        if (lane_of_job(job) != l) continue;
        if (!feeder[l]) {
          initial.try_emplace(job);  // absent yet
        } else if (p.done->code == 0) {
          initial[job] = after_call(Rec{}, job, p.intent, p.answered ? &*p.done : nullptr,
                                    Span{p.intent.t0, p.done->t1});
          fed[job] = Fed{c, false};
        }
      }
    }
    // Topics whose pause state this lane's calls set: its own, when it is a worker thread.
    std::vector<size_t> topics;
    if (l < kMaxThreads)
      for (size_t i = 2 * l; i < 2 * l + 2; ++i) topics.push_back(i);
    LaneSearch search(cs, seen, pauses.seen, sv, shards, origin);
    search.start(initial, pauses.before, topics, fed, l == 0);
    std::string why;
    fits[l] = search.run(&why, &v.suspects, l);
    if (fits[l].empty() && v.why.empty()) v.why = why;
  }
  for (size_t l = 0; l < kLanes; ++l)
    if (fits[l].empty()) return v;
  Joint joint(calls, fits, feeder);
  const std::optional<std::array<size_t, kLanes>> best = joint.solve(&v.why);
  if (!best) return v;
  v.explained = true;
  for (size_t l = 0; l < kLanes; ++l) {
    v.kept[l] = fits[l][(*best)[l]].kept;
    v.lost += lost_from[l][v.kept[l]];
    v.lost_in[l] = lost_from[l][v.kept[l]];
    for (size_t c = v.kept[l]; c < calls[l].size(); ++c) {
      if (!answered_write(calls[l][c])) continue;
      v.lost_schedule_calls += is_schedule_call(calls[l][c].intent.kind);
      if (v.lost_calls.size() < 8)
        v.lost_calls.push_back(lane_name(l) + ": " + call_text(calls[l][c]));
    }
  }
  return v;
}

}  // namespace delayq::crash
