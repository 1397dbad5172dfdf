// The calls of a power-loss cycle, by lane (prefix_calls.h).
#include "prefix_calls.h"

#include "load.h"

namespace delayq::crash {

size_t lane_of_thread(size_t thread) {
  if (thread < kMaxThreads) return thread;
  return thread == kConsumer ? kConsumerLane : kConsumeLane;
}

std::string lane_name(size_t lane) {
  if (lane == kConsumerLane) return "the consumer thread";
  if (lane == kConsumeLane) return "the consume() loop";
  return "worker thread " + std::to_string(lane);
}

bool answered_write(const Call& c) {
  if (!c.answered || c.done->code != 0) return false;
  if (c.done->kind == Kind::reserve_done) return false;  // nothing delivered
  if (c.done->kind == Kind::purge_done || c.done->kind == Kind::rqtopic_done) return c.done->n > 0;
  // A pause of a paused topic (or a resume of a running one) writes nothing; nor does a
  // pause_schedule of a paused schedule (or a resume_schedule of a running one).
  if (c.done->kind == Kind::pause_done || c.done->kind == Kind::resume_done ||
      c.done->kind == Kind::spause_done || c.done->kind == Kind::sresume_done)
    return c.flips;
  // An occurrence job taken: its reservation and its ack (counted as one: at the least).
  if (c.done->kind == Kind::occ_done) return c.occurrence.has_value();
  return true;
}

std::string call_text(const Call& c) {
  std::string what = std::string(call_name(c.intent.kind));
  if (c.intent.kind == Kind::occ_intent) {
    if (c.occurrence)
      what += " (" + occurrence_job_id(schedule_id(c.occurrence->first),
                                       at_ns(c.occurrence->second)) + ")";
  } else if (is_schedule_call(c.intent.kind)) {
    what += " of " + schedule_id(c.intent.job);
  } else if (c.intent.kind == Kind::reserve_intent) {
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

std::array<std::vector<Call>, kLanes> calls_of(const std::vector<Record>& records, int64_t kill_hi,
                                               size_t shards, uint32_t paused_before,
                                               size_t threads,
                                               const std::map<uint64_t, SchedState>& sched_before) {
  std::array<std::vector<Call>, kLanes> calls;
  // Per worker thread: its call in flight, as (lane, index in the lane).
  std::array<std::optional<size_t>, kWorkers> open;
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (r.thread >= kWorkers) continue;
    std::vector<Call>& mine = calls[lane_of_thread(r.thread)];
    std::optional<size_t>& at = open[r.thread];
    if (is_intent(r.kind)) {
      at = mine.size();
      mine.push_back(Call{r, std::nullopt, false, {}, i, SIZE_MAX, 0, false, threads});
    } else if (!at) {
      continue;
    } else if (r.kind == Kind::purged || r.kind == Kind::requeued) {
      mine[*at].listed.push_back(r.job);
    } else if (r.kind == Kind::occ_reserved) {
      mine[*at].occurrence = std::pair{r.job, r.due};
    } else if (r.kind == done_of(mine[*at].intent.kind) || r.kind == Kind::reserved) {
      mine[*at].done = r;
      mine[*at].answered = true;
      mine[*at].done_at = i;
      at.reset();
    }
  }
  for (std::vector<Call>& mine : calls) {
    uint32_t paused = paused_before;
    std::map<uint64_t, bool> spaused;  // the schedules there, paused or not
    for (const auto& [n, s] : sched_before) spaused[n] = s.paused;
    std::vector<Call> split;
    for (Call& c : mine) {
      if (!c.done) c.done = done_record(done_of(c.intent.kind), c.intent, Status(), kill_hi);
      if (is_schedule_call(c.intent.kind) && c.answered && c.done->code == 0) {
        const uint64_t n = c.intent.job;
        if (c.intent.kind == Kind::sched_intent) {
          spaused.try_emplace(n, false);  // created running; a replacement keeps its pause
        } else if (c.intent.kind == Kind::unsched_intent) {
          spaused.erase(n);
        } else if (c.intent.kind != Kind::occ_intent) {
          const bool now = c.intent.kind == Kind::spause_intent;
          auto it = spaused.find(n);
          c.flips = it != spaused.end() && it->second != now;
          if (it != spaused.end()) it->second = now;
        }
      }
      if ((c.intent.kind == Kind::pause_intent || c.intent.kind == Kind::resume_intent) &&
          c.answered && c.done->code == 0) {
        const uint32_t bit = uint32_t{1} << c.intent.arg;
        const uint32_t now = c.intent.kind == Kind::pause_intent ? paused | bit : paused & ~bit;
        c.flips = now != paused;
        paused = now;
      }
      if (c.intent.kind == Kind::ackb_intent) {
        for (size_t k = 0; k < c.intent.n; ++k) {
          split.push_back(c);
          split.back().intent = ack_of_batch(c.intent, k);
          split.back().done =
              c.answered ? ack_done_of_batch(*c.done, k)
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
        split.back().item = c.intent.job + k * c.threads;
      }
    }
    mine = std::move(split);
  }
  return calls;
}

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
    case Kind::limits_intent:
    case Kind::list_intent:
    case Kind::sched_intent:  // schedules and their occurrence jobs: no job of the load's
    case Kind::unsched_intent:
    case Kind::spause_intent:
    case Kind::sresume_intent:
    case Kind::occ_intent:
      return {};
    case Kind::batch_intent: {
      std::vector<uint64_t> out;
      for (uint64_t k = 0; k < c.intent.n; ++k) out.push_back(c.intent.job + k * c.threads);
      return out;
    }
    default:
      return {c.intent.job};
  }
}

}  // namespace delayq::crash
