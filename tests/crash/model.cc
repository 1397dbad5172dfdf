// The rule book: applying a worker's records to the model (model.h).
#include "model.h"

#include <algorithm>
#include <vector>

namespace delayq::crash {
namespace {

// The jobs a push (one: r.job) or push_batch intent (r.n: r.job, r.job + threads, ...) names.
std::vector<uint64_t> pushed_jobs(const Record& r, size_t threads) {
  const uint64_t n = r.kind == Kind::push_intent ? 1 : r.n;
  std::vector<uint64_t> jobs(n);
  for (uint64_t i = 0; i < n; ++i) jobs[i] = r.job + i * threads;
  return jobs;
}

}  // namespace

bool JobModel::gone() const {
  return std::all_of(cands.begin(), cands.end(), [](const Rec& r) { return r.st == St::absent; });
}

JobModel* Model::find(uint64_t job) {
  auto it = jobs.find(job);
  return it == jobs.end() ? nullptr : &it->second;
}

const Rec* Model::live_rec(uint64_t job) const {
  auto it = jobs.find(job);
  return it != jobs.end() && it->second.live() ? &it->second.cands[0] : nullptr;
}

std::vector<uint64_t> Model::live_jobs() const {
  std::vector<uint64_t> out;
  for (const auto& [job, j] : jobs)
    if (j.live()) out.push_back(job);
  std::sort(out.begin(), out.end());
  return out;
}

void Model::begin_run() {
  fence_floor = max_fence;
  last_fence = {};
}

void Model::take_pauses(uint32_t paused) {
  for (size_t i = 0; i < kTopics.size(); ++i)
    pause_may[i] = (paused >> i) & 1 ? kMayPause : kMayRun;
}

void Model::problem(const std::string& s) {
  problems.push_back("cycle " + std::to_string(cycle) +
                     (cycle_label.empty() ? "" : " (" + cycle_label + ")") + ": " + s);
}

void Model::report_violations() {
  for (const auto& [job, texts] : violations) {
    std::string s = "the worker saw a broken promise: ";
    for (size_t i = 0; i < texts.size(); ++i) s += (i ? "; " : "") + texts[i];
    problem_about(job, s);
  }
  violations.clear();
}

void Model::note(uint64_t job, const Record& r) {
  std::vector<Event>& h = history[job];
  if (h.size() == kHistoryCap) h.erase(h.begin());
  h.push_back(Event{cycle, r});
}

bool Model::apply(const Record& r) {
  if (keep_cycle_records) cycle_records.push_back(r);
  if (r.thread >= kWorkers) {
    problem("a record from thread " + std::to_string(r.thread));
    return false;
  }
  switch (r.kind) {
    case Kind::opened:
      ++counts.opened;
      begin_run();
      return true;
    case Kind::bg_begin:
      ++background;
      return true;
    case Kind::bg_end:
      --background;
      return true;
    case Kind::refill_begin:
      ++refilling;
      ++counts.refills;
      return true;
    case Kind::refill_end:
      --refilling;
      return true;
    case Kind::violation:
      violations[r.job].push_back(text_of(r));  // reported together, see report_violations()
      return false;
    case Kind::error:
      problem("the worker failed: " + text_of(r));
      return false;
    case Kind::seen:
      pending.jobs[r.job] = obs_of_seen(r);
      if (r.text[0] != '\0') pending.wrong[r.job] = text_of(r);
      return true;
    case Kind::seen_schedule:
    case Kind::seen_occurrence:
      return apply_seen_schedule(r);
    case Kind::occ_reserved:
      return apply_occurrence_delivery(r);
    case Kind::observed: {
      Observation o = std::move(pending);
      pending = Observation{};
      o.stored = r.n;
      o.pushed = r.totals[0];
      o.acked = r.totals[1];
      o.cancelled = r.totals[2];
      o.purged = r.totals[3];
      o.paused = r.attempt;
      o.limits = static_cast<uint64_t>(r.arg);
      o.occurrence_jobs = static_cast<uint64_t>(r.due);
      o.occurrences_counted = static_cast<uint64_t>(r.lease);
      o.open_began = r.t0;
      o.complete = true;
      return check_observation(*this, o);
    }
    case Kind::purged:
    case Kind::requeued: {
      const Kind call = r.kind == Kind::purged ? Kind::purge_intent : Kind::rqtopic_intent;
      std::optional<Record>& slot = in_flight[r.thread];
      const Rec* rec = live_rec(r.job);
      if (!slot || slot->kind != call || rec == nullptr ||
          topic_index(r.job) != static_cast<size_t>(slot->arg)) {
        problem_about(r.job, std::string("a record that ") + call_name(call) + " changed " +
                                 job_id(r.job) + ", out of place");
        return false;
      }
      note(r.job, r);
      listed[r.thread].push_back(r.job);
      return true;
    }
    default:
      break;
  }
  if (is_intent(r.kind)) return apply_intent(r);
  std::optional<Record>& slot = in_flight[r.thread];
  if (!slot || (done_of(slot->kind) != r.kind &&
                !(slot->kind == Kind::reserve_intent && r.kind == Kind::reserved))) {
    problem("an outcome (record kind " + std::to_string(static_cast<int>(r.kind)) +
            ") without its call");
    return false;
  }
  const Record intent = *std::exchange(slot, std::nullopt);
  return apply_outcome(r, intent);
}

bool Model::apply_intent(const Record& r) {
  std::optional<Record>& slot = in_flight[r.thread];
  if (slot) {
    problem(std::string("a ") + call_name(r.kind) + " began while another call of its thread " +
            "was in flight");
    return false;
  }
  slot = r;
  ++counts.by_thread[r.thread];
  auto fail = [&](const std::string& why) {
    problem_about(r.job, why);
    return false;
  };
  if (is_schedule_call(r.kind)) return apply_schedule_intent(r);
  if (is_topic_call(r.kind)) {
    if (r.arg < 0 || static_cast<size_t>(r.arg) >= kTopics.size() ||
        static_cast<size_t>(r.arg) / 2 != r.thread || consumed_topic(static_cast<size_t>(r.arg)))
      return fail(std::string("the worker called ") + call_name(r.kind) + " on topic " +
                  std::to_string(r.arg) + ", not one of its thread's");
    listed[r.thread].clear();
    return true;
  }
  switch (r.kind) {
    case Kind::reserve_intent:
      return true;
    case Kind::ackb_intent:
      if (r.n == 0 || r.n > kMaxAckBatch) return fail("an ack_batch of " + std::to_string(r.n));
      for (size_t i = 0; i < r.n; ++i) {
        if (live_rec(r.items[i]) == nullptr || handler_of(r.items[i]) != r.thread)
          return fail("the worker called ack_batch on " + job_id(r.items[i]) +
                      ", not a live job of its thread");
        note(r.items[i], r);
      }
      return true;
    case Kind::push_intent:
    case Kind::batch_intent: {
      const std::vector<uint64_t> pushed = pushed_jobs(r, threads);
      for (uint64_t job : pushed) {
        if (job < next_job) return fail("the worker pushed " + job_id(job) + " twice");
        if (owner(job) != r.thread) return fail(job_id(job) + " pushed by the wrong thread");
        JobModel& j = jobs[job];
        j.cands = {Rec{}};  // until the push returns
        j.pushing = true;
        j.taken = false;
        j.push_t0 = r.t0;
        j.push_delay = r.arg;
        note(job, r);
      }
      if (!pushed.empty()) next_job = pushed.back() + 1;
      return true;
    }
    default:
      if (live_rec(r.job) == nullptr || handler_of(r.job) != r.thread)
        return fail(std::string("the worker called ") + call_name(r.kind) + " on " + job_id(r.job) +
                    ", not a live job of its thread");
      note(r.job, r);
      return true;
  }
}

bool Model::apply_outcome(const Record& r, const Record& intent) {
  const Span w{intent.t0, r.t1};
  auto fail = [&](const std::string& why) {
    problem_about(r.job, why);
    return false;
  };
  const std::string what = std::string(call_name(intent.kind)) + " of " + job_id(r.job);
  const std::string outcome = r.code == 0 ? std::string("ok") : text_of(r);
  if (is_schedule_call(intent.kind)) return apply_schedule_outcome(r, intent);
  switch (r.kind) {
    case Kind::reserved:
      return apply_delivery(r);
    case Kind::reserve_done:
      if (has_code(r, Errc::timeout)) return true;
      problem("reserve failed: " + text_of(r));
      return false;
    case Kind::push_done:
    case Kind::batch_done: {
      const std::vector<uint64_t> pushed = pushed_jobs(intent, threads);
      for (uint64_t job : pushed) {
        note(job, r);
        JobModel& j = jobs[job];
        j.pushing = false;
        if (std::exchange(j.taken, false)) {  // delivered already: that record stands
          if (r.code != 0)
            return fail(job_id(job) + " was delivered before its push returned, and the push " +
                        "failed: " + outcome);
          continue;
        }
        j.cands = {r.code == 0 ? after_call(Rec{}, job, intent, &r, w) : Rec{}};
      }
      if (r.code != 0) return fail(what + " failed: " + outcome);
      ++(pushed.size() == 1 ? counts.pushes : counts.batches);
      return true;
    }
    case Kind::purge_done:
    case Kind::rqtopic_done:
      return apply_topic_jobs(r, intent);
    case Kind::ackb_done:
      return apply_batch_acks(r, intent);
    case Kind::pause_done:
    case Kind::resume_done: {
      const bool pause = r.kind == Kind::pause_done;
      if (r.code != 0) {
        problem(std::string(call_name(intent.kind)) + " of " + kTopics[intent.arg] +
                " failed: " + outcome);
        return false;
      }
      pause_may[intent.arg] = pause ? kMayPause : kMayRun;
      ++(pause ? counts.pauses : counts.resumes);
      return true;
    }
    case Kind::limits_done:
      if (r.code != 0) {
        problem(std::string(intent.n == 0 ? "clear_topic_limits" : "set_topic_limits") + " of " +
                kTopics[intent.arg] + " failed: " + outcome);
        return false;
      }
      limits_may[intent.arg] = static_cast<uint16_t>(1u << intent.n);
      ++(intent.n == 0 ? counts.limits_cleared : counts.limits_set);
      return true;
    case Kind::list_done:
      if (r.code != 0) {
        problem("list_jobs of " + kTopics[intent.arg] + " failed: " + outcome);
        return false;
      }
      ++counts.lists;
      counts.listed += r.n;
      return true;
    default:
      break;
  }
  note(r.job, r);
  JobModel* j = find(r.job);
  if (j == nullptr || !j->live()) return fail(what + ": an outcome for a job not live");
  Rec& rec = j->cands[0];
  if (is_token_call(intent.kind)) return apply_token_outcome(r, intent, rec);
  const bool refused = has_code(r, Errc::invalid_state);
  // reschedule and requeue_dead: a live job takes the call only in state `needs` (waiting, dead)
  // and refuses it (invalid_state) in the other two.
  auto only_when = [&](St needs, uint64_t& done) {
    const auto may_be_other = [&] {
      for (St s : {St::waiting, St::reserved, St::dead})
        if (s != needs && may_be(rec, r.job, w, s)) return true;
      return false;
    };
    if (r.code == 0 && !may_be(rec, r.job, w, needs))
      return fail(what + " succeeded, but the job was not " + st_text(needs));
    if (refused && !may_be_other())
      return fail(what + " was refused (" + outcome + "), but the job was " + st_text(needs));
    if (r.code != 0 && !refused) return fail(what + ", a live job, failed: " + outcome);
    ++(r.code == 0 ? done : counts.refused);
    return true;
  };
  switch (intent.kind) {
    case Kind::cancel_intent:
      if (r.code != 0) return fail(what + ", a live job, failed (a lost job?): " + outcome);
      ++counts.cancels;
      break;
    case Kind::resched_intent:
      if (!only_when(St::waiting, counts.reschedules)) return false;
      break;
    case Kind::requeue_intent:
      if (!only_when(St::dead, counts.requeues)) return false;
      break;
    default:
      return fail("unknown outcome kind " + std::to_string(static_cast<int>(r.kind)));
  }
  if (r.code == 0) rec = after_call(rec, r.job, intent, &r, w);
  if (rec.st == St::absent) j->cands = {Rec{}};
  return true;
}

bool Model::settle_in_flight(int64_t kill_hi) {
  bool writing = false;
  for (size_t t = 0; t < kWorkers; ++t) {
    if (!in_flight[t]) continue;
    const Record intent = *std::exchange(in_flight[t], std::nullopt);
    ++counts.killed_in[static_cast<size_t>(intent.kind) % counts.killed_in.size()];
    writing |= intent.kind != Kind::reserve_intent;
    settle(intent, kill_hi);
    listed[t].clear();
  }
  unchecked = true;
  return writing;
}

// One call in flight at the kill: its job may have its record from before or from after it.
void Model::settle(const Record& intent, int64_t kill_hi) {
  const Span w{intent.t0, kill_hi};
  const Record mark = make_record(Kind::settled, intent.job);
  auto add = [&](uint64_t job, const Rec& r) {
    note(job, mark);
    jobs[job].cands.push_back(r);
  };
  if (is_schedule_call(intent.kind)) return settle_schedule(intent, kill_hi);
  switch (intent.kind) {
    case Kind::reserve_intent:
      unreported[intent.thread] = w;
      return;
    case Kind::push_intent:
    case Kind::batch_intent: {
      for (uint64_t job : pushed_jobs(intent, threads)) {
        JobModel& j = jobs[job];
        j.pushing = false;
        // A reservation that returned was written after the push: the push was kept.
        if (std::exchange(j.taken, false))
          ++counts.kept_by_reservation;
        else
          add(job, after_call(Rec{}, job, intent, nullptr, w));
      }
      return;
    }
    case Kind::purge_intent:
    case Kind::rqtopic_intent:
      for (auto& [job, j] : jobs)
        if (j.live() && topic_index(job) == static_cast<size_t>(intent.arg) &&
            may_be(j.cands[0], job, w, St::dead))
          add(job, after_call(j.cands[0], job, intent, nullptr, w));
      return;
    case Kind::pause_intent:
      pause_may[intent.arg] |= kMayPause;
      return;
    case Kind::resume_intent:
      pause_may[intent.arg] |= kMayRun;
      return;
    case Kind::limits_intent:
      limits_may[intent.arg] |= static_cast<uint16_t>(1u << intent.n);
      return;
    case Kind::list_intent:  // reads only
      return;
    case Kind::ackb_intent:
      for (size_t i = 0; i < intent.n; ++i) settle(ack_of_batch(intent, i), kill_hi);
      return;
    default:
      break;
  }
  const Rec* rec = live_rec(intent.job);
  if (rec == nullptr) return;
  const Rec before = *rec;
  const bool may_happen =
      is_token_call(intent.kind)            ? may_hold(before, intent.n, w)
      : intent.kind == Kind::resched_intent ? may_be(before, intent.job, w, St::waiting)
      : intent.kind == Kind::requeue_intent ? may_be(before, intent.job, w, St::dead)
                                            : true;
  if (may_happen) add(intent.job, after_call(before, intent.job, intent, nullptr, w));
}

}  // namespace delayq::crash
