// The prefix search after a power loss (prefix.h).
#include "prefix.h"

#include <algorithm>
#include <optional>
#include <set>

namespace delayq::crash {

namespace {

// One call of a worker thread: its intent and, if it returned before the kill, its outcome.
// An in-flight call gets an outcome made up as if it succeeded at the kill (`answered` false):
// kept, it is the call done; not kept, the call not done or refused (which changes nothing).
struct Call {
  Record intent;
  std::optional<Record> done;
  bool answered = false;
  std::vector<uint64_t> listed;  // purge_dead, requeue_dead_topic: the jobs it deleted, requeued
  size_t intent_at = 0;          // positions in the cycle's records (the order they were sent)
  size_t done_at = SIZE_MAX;
  uint64_t item = 0;  // push_batch split into pushes: this call's job
};

// Whether the call was answered and changed the queue: one atomic write to the store.
bool answered_write(const Call& c) {
  if (!c.answered || c.done->code != 0) return false;
  if (c.done->kind == Kind::reserve_done) return false;  // nothing delivered
  if (c.done->kind == Kind::purge_done || c.done->kind == Kind::rqtopic_done) return c.done->n > 0;
  // A pause or resume changes no job: the search below cannot tell whether it was kept.
  return c.done->kind != Kind::pause_done && c.done->kind != Kind::resume_done;
}

std::string call_text(const Call& c) {
  std::string what = std::string(call_name(c.intent.kind));
  if (c.intent.kind == Kind::reserve_intent) {
    if (c.done && c.done->kind == Kind::reserved)
      what += " that delivered " + job_id(c.done->job) + " (attempt " +
              std::to_string(c.done->attempt) + ")";
  } else if (is_topic_call(c.intent.kind)) {
    what += " of " + kTopics[c.intent.arg];
  } else {
    what += " of " + job_id(c.item ? c.item : c.intent.job);
  }
  if (!c.answered) return what + " (in flight)";
  return what + " (returned " + errc_text(c.done->code) + ")";
}

// Each thread's calls, from the cycle's records. In-flight calls get a made-up outcome.
std::array<std::vector<Call>, kThreads> calls_of(const std::vector<Record>& records,
                                                 int64_t kill_hi, size_t shards) {
  std::array<std::vector<Call>, kThreads> calls;
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (r.thread >= kThreads) continue;
    std::vector<Call>& mine = calls[r.thread];
    if (is_intent(r.kind)) {
      mine.push_back(Call{r, std::nullopt, false, {}, i, SIZE_MAX, 0});
    } else if ((r.kind == Kind::purged || r.kind == Kind::requeued) && !mine.empty()) {
      mine.back().listed.push_back(r.job);
    } else if (!mine.empty() && !mine.back().done &&
               (r.kind == done_of(mine.back().intent.kind) || r.kind == Kind::reserved)) {
      mine.back().done = r;
      mine.back().answered = true;
      mine.back().done_at = i;
    }
  }
  for (std::vector<Call>& mine : calls) {
    if (!mine.empty() && !mine.back().done) {
      Call& c = mine.back();
      c.done = done_record(done_of(c.intent.kind), c.intent, Status(), kill_hi);
    }
    // ack_batch is one ack (one write) per token, in order; on several shards push_batch is one
    // push (one write) per job.
    std::vector<Call> split;
    for (const Call& c : mine) {
      if (c.intent.kind == Kind::ackb_intent) {
        for (size_t i = 0; i < c.intent.n; ++i) {
          split.push_back(c);
          split.back().intent = ack_of_batch(c.intent, i);
          split.back().done =
              c.answered ? ack_done_of_batch(*c.done, i)
                         : done_record(Kind::ack_done, split.back().intent, Status(), kill_hi);
        }
        continue;
      }
      if (c.intent.kind != Kind::batch_intent || shards == 1) {
        split.push_back(c);
        continue;
      }
      for (uint64_t k = 0; k < c.intent.n; ++k) {
        split.push_back(c);
        split.back().item = c.intent.job + k * kThreads;
      }
    }
    mine = std::move(split);
  }
  return calls;
}

// The jobs a call changes.
std::vector<uint64_t> jobs_of(const Call& c) {
  if (c.item) return {c.item};
  switch (c.intent.kind) {
    case Kind::reserve_intent:
      return c.done->kind == Kind::reserved ? std::vector<uint64_t>{c.done->job}
                                            : std::vector<uint64_t>{};
    case Kind::purge_intent:
    case Kind::rqtopic_intent:
      return c.listed;
    case Kind::pause_intent:
    case Kind::resume_intent:
      return {};
    case Kind::batch_intent: {
      std::vector<uint64_t> out;
      for (uint64_t k = 0; k < c.intent.n; ++k) out.push_back(c.intent.job + k * kThreads);
      return out;
    }
    default:
      return {c.intent.job};
  }
}

// Where a thread's calls are cut: its first `kept` calls kept, and if `partial`, part of the
// next one (a purge_dead on several shards writes each shard's part on its own).
struct Cut {
  size_t kept = 0;
  bool partial = false;
};

// One thread's search: the cuts that explain its jobs.
class ThreadSearch {
 public:
  ThreadSearch(const std::vector<Call>& calls, const std::map<uint64_t, Obs>& seen, size_t shards,
               int64_t origin)
      : cs_(calls), seen_(seen), shards_(shards), origin_(origin) {}

  void start(const std::map<uint64_t, Rec>& initial) {
    initial_ = initial;
    e_ = initial;
    for (const auto& entry : e_) recheck(entry.first);
  }

  // The cuts that explain its jobs, in order.
  std::vector<Cut> run(std::string* why, std::vector<uint64_t>* suspects, size_t t) {
    std::vector<Cut> fits;
    size_t closest = 0;
    std::set<uint64_t> closest_bad = bad_;
    const size_t n = cs_.size();
    for (size_t c = 0; c <= n; ++c) {
      if (bad_.empty()) fits.push_back(Cut{c, false});
      if (c < n && partly_applied(cs_[c])) fits.push_back(Cut{c, true});
      if (bad_.size() <= closest_bad.size()) {
        closest = c;
        closest_bad = bad_;
      }
      if (c == n) break;
      const Call& call = cs_[c];
      if (!call.answered &&
          (call.intent.kind == Kind::reserve_intent || call.intent.kind == Kind::purge_intent ||
           call.intent.kind == Kind::rqtopic_intent)) {
        if (in_flight_fits(call)) fits.push_back(Cut{n, false});
        break;
      }
      apply(call);
    }
    if (fits.empty()) describe(closest, closest_bad, why, suspects, t);
    return fits;
  }

 private:
  Obs seen_of(uint64_t job) const {
    auto it = seen_.find(job);
    return it == seen_.end() ? Obs{} : it->second;
  }
  void recheck(uint64_t job) {
    if (shows(e_[job], job, seen_of(job)))
      bad_.erase(job);
    else
      bad_.insert(job);
  }

  void apply(const Call& call) {
    const Record& d = *call.done;
    if (d.code != 0) return;  // refused or failed: nothing written
    const Span w{call.intent.t0, d.t1};
    const Record* done = call.answered ? &d : nullptr;
    for (uint64_t job : jobs_of(call)) {
      Rec& r = e_[job];
      if (call.intent.kind == Kind::reserve_intent) {
        r = delivered(d, job);
      } else if (!call.answered && !may_happen(r, job, call.intent, w)) {
        continue;
      } else {
        r = after_call(r, job, call.intent, done, w);
      }
      recheck(job);
    }
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

  // A reserve in flight may have delivered one job of this thread's; a purge_dead or
  // requeue_dead_topic in flight may have deleted or requeued any of its topic's jobs that may
  // have been dead.
  bool in_flight_fits(const Call& call) const {
    const Span w{call.intent.t0, call.done->t1};
    for (uint64_t job : bad_) {
      const Rec& r = e_.at(job);
      const Obs o = seen_of(job);
      if (call.intent.kind == Kind::reserve_intent) {
        if (bad_.size() > 1 || !shows_after_unreported_delivery(r, job, o, w)) return false;
      } else if (topic_index_of(job) != static_cast<size_t>(call.intent.arg) ||
                 !may_be(r, job, w, St::dead) ||
                 !shows(after_call(r, job, call.intent, nullptr, w), job, o)) {
        return false;
      }
    }
    return true;
  }

  void describe(size_t closest, const std::set<uint64_t>& bad, std::string* why,
                std::vector<uint64_t>* suspects, size_t t) {
    *why = "no prefix of worker thread " + std::to_string(t) + "'s " + std::to_string(cs_.size()) +
           " calls explains its jobs; the closest, its first " + std::to_string(closest) +
           " calls" +
           (closest > 0 ? " (up to the " + call_text(cs_[closest - 1]) + ")" : std::string()) +
           ", leaves " + std::to_string(bad.size()) + " jobs different:";
    e_ = initial_;  // replay up to `closest` to name what each differing job should be
    for (size_t c = 0; c < closest; ++c) apply(cs_[c]);
    size_t named = 0;
    for (uint64_t job : bad) {
      if (named++ == 4) {
        *why += " ...";
        break;
      }
      *why += " " + job_id(job) + " should be " + rec_text(e_[job], origin_) +
              ", the store has it " + obs_text(seen_of(job), origin_) + ";";
      suspects->push_back(job);
    }
  }

  const std::vector<Call>& cs_;
  const std::map<uint64_t, Obs>& seen_;
  const size_t shards_;
  const int64_t origin_;
  std::map<uint64_t, Rec> initial_, e_;
  std::set<uint64_t> bad_;  // jobs that differ from what the store shows
};

}  // namespace

PrefixVerdict explain_by_prefix(const std::unordered_map<uint64_t, JobModel>& before,
                                const std::vector<Record>& records,
                                const std::map<uint64_t, Obs>& seen, int64_t kill_hi, size_t shards,
                                int64_t origin) {
  static_assert(kThreads == 2, "the search below pairs the prefixes of two threads");
  PrefixVerdict v;
  const std::array<std::vector<Call>, kThreads> calls = calls_of(records, kill_hi, shards);
  std::array<std::vector<Cut>, kThreads> fits;
  // lost_from[t][c]: the answered writes among thread t's calls from c on.
  std::array<std::vector<uint64_t>, kThreads> lost_from;
  for (size_t t = 0; t < kThreads; ++t) {
    const std::vector<Call>& cs = calls[t];
    const size_t n = cs.size();
    v.calls[t] = n;
    lost_from[t].assign(n + 1, 0);
    for (size_t c = n; c-- > 0;) lost_from[t][c] = lost_from[t][c + 1] + answered_write(cs[c]);
    v.answered += lost_from[t][0];
    std::map<uint64_t, Rec> initial;  // the thread's jobs before the cycle
    for (const auto& [job, j] : before)
      if (owner_of(job) == t && !j.cands.empty()) initial[job] = j.cands[0];
    for (const Call& c : cs)
      if (c.intent.kind == Kind::push_intent || c.intent.kind == Kind::batch_intent)
        for (uint64_t job : jobs_of(c)) initial.try_emplace(job);  // absent yet
    ThreadSearch search(cs, seen, shards, origin);
    search.start(initial);
    std::string why;
    fits[t] = search.run(&why, &v.suspects, t);
    if (fits[t].empty() && v.why.empty()) v.why = why;
  }
  if (fits[0].empty() || fits[1].empty()) return v;

  // need[t][c]: how many of the other thread's calls must be kept if thread t keeps c: those
  // that had returned before t's call c - 1 began (it was written after them).
  std::array<std::vector<size_t>, kThreads> need;
  for (size_t t = 0; t < kThreads; ++t) {
    const std::vector<Call>& mine = calls[t];
    const std::vector<Call>& other = calls[1 - t];
    need[t].assign(mine.size() + 1, 0);
    size_t k = 0;
    for (size_t c = 1; c <= mine.size(); ++c) {
      while (k < other.size() && other[k].done_at < mine[c - 1].intent_at) ++k;
      need[t][c] = k;
    }
  }
  // Two cuts fit the order of the calls iff each thread keeps whole every call of the other's
  // that had returned before its own last call (kept whole or in part) began. Of those that
  // fit, the one that loses the fewest answered calls (a call kept in part counts as lost).
  auto fit = [&](const Cut& a, const Cut& b) {
    return b.kept >= need[0][a.kept + a.partial] && a.kept >= need[1][b.kept + b.partial];
  };
  std::optional<std::pair<Cut, Cut>> best;
  uint64_t best_lost = 0;
  for (const Cut& a : fits[0])
    for (const Cut& b : fits[1]) {
      const uint64_t lost = lost_from[0][a.kept] + lost_from[1][b.kept];
      if (fit(a, b) && (!best || lost <= best_lost)) {
        best = {a, b};
        best_lost = lost;
      }
    }
  if (!best) {
    const size_t c0 = fits[0].back().kept, c1 = fits[1].back().kept;
    v.why = "each worker thread's calls are explained by a prefix of its own (at most " +
            std::to_string(c0) + " of thread 0's " + std::to_string(calls[0].size()) + " calls, " +
            std::to_string(c1) + " of thread 1's " + std::to_string(calls[1].size()) +
            "), but no two of them fit the order in which the calls were made: a call kept that "
            "began after a lost call of the other thread had returned";
    if (c0 > 0 && c1 < need[0][c0])
      v.why += " (thread 0's " + call_text(calls[0][c0 - 1]) + " began after thread 1's " +
               call_text(calls[1][need[0][c0] - 1]) + " had returned)";
    else if (c1 > 0 && c0 < need[1][c1])
      v.why += " (thread 1's " + call_text(calls[1][c1 - 1]) + " began after thread 0's " +
               call_text(calls[0][need[1][c1] - 1]) + " had returned)";
    return v;
  }
  v.explained = true;
  v.lost = best_lost;
  v.kept = {best->first.kept, best->second.kept};
  for (size_t t = 0; t < kThreads; ++t)
    for (size_t c = v.kept[t]; c < calls[t].size(); ++c)
      if (answered_write(calls[t][c]) && v.lost_calls.size() < 8)
        v.lost_calls.push_back("thread " + std::to_string(t) + ": " + call_text(calls[t][c]));
  return v;
}

}  // namespace delayq::crash
