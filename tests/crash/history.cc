// A job's recent history, for failure messages (Model::explain).
#include <string>

#include "model.h"

namespace delayq::crash {

namespace {

std::string event_text(const Model& m, const Record& r) {
  const std::string code = errc_text(r.code);
  const std::string id = job_id(r.job);
  switch (r.kind) {
    case Kind::push_intent:
    case Kind::batch_intent:
      return std::string(call_name(r.kind)) + " at " + m.rel(r.t0) + ", delay " +
             ms_text(Duration(r.arg));
    case Kind::reserved:
      return "reserve called at " + m.rel(r.t0) + ": attempt " + std::to_string(r.attempt) +
             ", due " + m.rel(r.due) + ", lease until " + m.rel(r.lease) + ", fence " +
             std::to_string(r.n);
    case Kind::nack_intent:
      return "nack (fence " + std::to_string(r.n) + ") at " + m.rel(r.t0) + ", delay " +
             (r.arg >= 0 ? ms_text(Duration(r.arg)) : std::string("of the policy"));
    case Kind::resched_intent:
      return "reschedule at " + m.rel(r.t0) + " to " + m.rel(r.arg);
    case Kind::ack_intent:
    case Kind::dead_intent:
    case Kind::touch_intent:
    case Kind::release_intent:
      return std::string(call_name(r.kind)) + " (fence " + std::to_string(r.n) + ") at " +
             m.rel(r.t0);
    case Kind::cancel_intent:
    case Kind::requeue_intent:
      return std::string(call_name(r.kind)) + " at " + m.rel(r.t0);
    case Kind::ackb_intent: {
      std::string s = "ack_batch at " + m.rel(r.t0) + " of";
      for (size_t i = 0; i < r.n && i < kMaxAckBatch; ++i)
        s += " " + job_id(r.items[i]) + " (fence " + std::to_string(r.fences[i]) + ")";
      return s;
    }
    case Kind::ackb_done: {
      std::string s = "  ack_batch returned";
      for (size_t i = 0; i < r.n && i < kMaxAckBatch; ++i)
        s += std::string(" ") + errc_text(r.codes[i]);
      return s + " at " + m.rel(r.t1);
    }
    case Kind::touch_done:
      return "  touch returned " + code + (r.code == 0 ? ", lease until " + m.rel(r.lease) : "") +
             " at " + m.rel(r.t1);
    case Kind::push_done:
    case Kind::batch_done:
    case Kind::ack_done:
    case Kind::release_done:
    case Kind::nack_done:
    case Kind::dead_done:
    case Kind::cancel_done:
    case Kind::resched_done:
    case Kind::requeue_done:
      return "  returned " + code + " at " + m.rel(r.t1);
    case Kind::purged:
      return "purge_dead of its topic deleted it";
    case Kind::requeued:
      return "requeue_dead_topic of its topic requeued it";
    case Kind::seen:
      return "a reopened store showed " + obs_text(obs_of_seen(r), m.origin);
    case Kind::settled:
      return "  killed during that call";
    default:
      return "record kind " + std::to_string(static_cast<int>(r.kind));
  }
}

}  // namespace

std::string Model::explain(uint64_t job) const {
  auto it = history.find(job);
  if (it == history.end()) return "";
  std::string out = "\n  history of " + job_id(job) + " (times from the start of the run):";
  for (const Event& e : it->second)
    out += "\n    cycle " + std::to_string(e.cycle) + ": " + event_text(*this, e.r);
  auto j = jobs.find(job);
  if (j != jobs.end()) {
    out += "\n    the harness expects:";
    for (size_t i = 0; i < j->second.cands.size(); ++i)
      out += std::string(i ? " or " : " ") + rec_text(j->second.cands[i], origin);
  }
  return out;
}

}  // namespace delayq::crash
