// The rule book, continued (model.h): deliveries, the outcomes of calls on a delivery's token
// (ack, nack, dead_letter, touch, release, and ack_batch, one ack per token) and of calls over a
// topic's dead jobs (purge_dead, requeue_dead_topic).
#include <algorithm>
#include <vector>

#include "model.h"

namespace delayq::crash {

bool Model::apply_token_outcome(const Record& r, const Record& intent, Rec& rec) {
  const Span w{intent.t0, r.t1};
  const std::string what = std::string(call_name(intent.kind)) + " of " + job_id(r.job) +
                           " (fence " + std::to_string(intent.n) + ")";
  if (r.code == 0) {
    if (!may_hold(rec, intent.n, w)) {
      problem_about(r.job, what +
                               " was accepted, but its token was stale (the lease had run "
                               "out, or a later delivery held the job)");
      return false;
    }
    if (intent.kind == Kind::touch_intent && !w.plus(ttr_of(r.job)).has(r.lease)) {
      problem_about(r.job, what + " returned a lease deadline that is not the ttr after the call");
      return false;
    }
    rec = after_call(rec, r.job, intent, &r, w);
    switch (intent.kind) {
      case Kind::ack_intent:
        ++counts.acks;
        break;
      case Kind::nack_intent:
        ++counts.nacks;
        break;
      case Kind::dead_intent:
        ++counts.dead_letters;
        break;
      case Kind::release_intent:
        ++counts.releases;
        break;
      default:
        ++counts.touches;
        break;
    }
    if (rec.st == St::absent) jobs[r.job].cands = {Rec{}};
    return true;
  }
  if (has_code(r, Errc::stale_token)) {
    if (!may_be_stale(rec, r.job, intent.n, w)) {
      problem_about(r.job, what + " was refused as stale while its delivery held the job");
      return false;
    }
    ++counts.refused;
    return true;
  }
  problem_about(r.job, what + " failed: " + text_of(r));
  return false;
}

// purge_dead or requeue_dead_topic: the jobs the worker found gone or requeued after it are
// exactly those it changed (its count), each may have been dead, and it left none that was.
bool Model::apply_topic_jobs(const Record& r, const Record& intent) {
  const Span w{intent.t0, r.t1};
  const bool purge = intent.kind == Kind::purge_intent;
  const std::string call = std::string(call_name(intent.kind)) + " of " + kTopics[intent.arg];
  std::vector<uint64_t> changed = std::move(listed[r.thread]);
  listed[r.thread].clear();
  if (r.code != 0) {
    problem(call + " failed: " + text_of(r));
    return false;
  }
  bool ok = true;
  if (r.n != changed.size()) {
    problem(call + " returned " + std::to_string(r.n) + ", but " + std::to_string(changed.size()) +
            " of its jobs were " + (purge ? "gone" : "requeued") + " after it");
    ok = false;
  }
  std::sort(changed.begin(), changed.end());
  for (const auto& [job, j] : jobs) {
    if (!j.live() || topic_index(job) != static_cast<size_t>(intent.arg) ||
        std::binary_search(changed.begin(), changed.end(), job))
      continue;
    const bool may_live =
        may_be(j.cands[0], job, w, St::waiting) || may_be(j.cands[0], job, w, St::reserved);
    if (!may_live) {
      problem_about(job, call + " left " + job_id(job) + ", which was dead");
      ok = false;
    }
  }
  for (uint64_t job : changed) {
    if (!may_be(jobs[job].cands[0], job, w, St::dead)) {
      problem_about(
          job, call + (purge ? " deleted " : " requeued ") + job_id(job) + ", which was not dead");
      ok = false;
    }
    jobs[job].cands = {after_call(jobs[job].cands[0], job, intent, &r, w)};
  }
  (purge ? counts.purges : counts.requeue_topics) += !changed.empty();
  (purge ? counts.purged : counts.requeued) += changed.size();
  return ok;
}

// ack_batch: each token's answer, as the ack it is made of.
bool Model::apply_batch_acks(const Record& r, const Record& intent) {
  bool ok = true;
  for (size_t i = 0; i < intent.n; ++i) {
    const Record ack = ack_of_batch(intent, i);
    const Record done = ack_done_of_batch(r, i);
    note(ack.job, done);
    JobModel* j = find(ack.job);
    if (j == nullptr || !j->live()) {
      problem_about(ack.job, "ack_batch: an answer for " + job_id(ack.job) + ", not live");
      return false;
    }
    ok = apply_token_outcome(done, ack, j->cands[0]) && ok;
  }
  counts.ack_batches += ok;
  return ok;
}

bool Model::apply_delivery(const Record& r) {
  const std::string id = job_id(r.job);
  const std::string att = " (attempt " + std::to_string(r.attempt) + ")";
  JobModel* j = find(r.job);
  auto fail = [&](const std::string& why) {
    problem_about(r.job, why);
    return false;
  };
  if (j == nullptr && r.job > 0 && r.job < next_job)
    return fail("delivered " + id + att +
                " although it was gone (acked, cancelled, purged, "
                "or a push found undone after a kill)");
  if (j == nullptr) return fail("delivered " + id + ", which was never pushed");
  note(r.job, r);
  Rec before;
  if (j->pushing && !j->taken && j->gone()) {
    // Reserved while its push was being written: waiting as the push makes it, the push's clock
    // read before the reservation's.
    before = Rec{St::waiting, 0, Span{j->push_t0, r.t1}.plus(Duration(j->push_delay)), {}, 0};
    j->taken = true;
    ++counts.early_deliveries;
  } else {
    if (j->gone()) return fail("delivered " + id + att + " although it was gone");
    if (!j->live()) return fail("delivered " + id + " while its state was uncertain");
    before = j->cands[0];
  }
  if (pause_may[topic_index(r.job)] == kMayPause)
    return fail("delivered " + id + att + " from " + topic_of(r.job, threads) +
                ", which was paused");
  if (const std::string why = delivery_problem(before, r.job, r); !why.empty())
    return fail("delivered " + id + att + ", due " + rel(r.due) + ", but " + why +
                "; the harness had it " + rec_text(before, origin));
  if (r.n <= fence_floor || r.n <= last_fence[r.thread])
    return fail("delivered " + id + " with fence " + std::to_string(r.n) +
                ", not above the fences handed out before");
  last_fence[r.thread] = r.n;
  max_fence = std::max(max_fence, r.n);
  counts.consumed += r.thread == kConsumeReserves;
  j->cands = {delivered(r, r.job)};
  ++counts.deliveries;
  return true;
}

}  // namespace delayq::crash
