// The load of one worker thread (worker_process.h): a random mix of every call of the Queue
// that changes a job, on its own topics and jobs, each reported as an intent before the call
// and an outcome after it; or the consumer thread's reserves, acks and releases (load.h).
#include <algorithm>
#include <random>
#include <vector>

#include "check.h"
#include "worker_process.h"

namespace delayq::crash {

namespace {

class Loop {
 public:
  Loop(WorkerProcess& w, size_t thread, uint64_t seed)
      : w_(w), m_(w.m_), q_(*w.q_), t_(thread), rng_(mix(seed + thread)), topics_(topics()) {}

  [[noreturn]] void run() {
    for (;;) step();
  }

 private:
  Record intent(Kind kind, uint64_t job = 0) const {
    Record r = make_record(kind, job);
    r.thread = static_cast<uint8_t>(t_);
    r.t0 = now();
    return r;
  }
  static int64_t now() { return ns_of(wall_now()); }
  uint64_t below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  // This thread's live jobs (those `keep` accepts), from the model.
  template <class F>
  std::vector<uint64_t> mine(F keep) {
    std::lock_guard lock(w_.mu_);
    std::vector<uint64_t> out;
    for (const auto& [job, j] : m_.jobs)
      if (m_.handler_of(job) == t_ && j.live() && keep(job, j.cands[0])) out.push_back(job);
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<uint64_t> live() {
    return mine([](uint64_t, const Rec&) { return true; });
  }
  std::vector<uint64_t> maybe_dead() {
    const Span w = Span::at(now());
    return mine([w](uint64_t job, const Rec& r) { return may_be(r, job, w, St::dead); });
  }

  // The jobs this thread pushed that are live (whoever handles them).
  size_t pushed_live() {
    std::lock_guard lock(w_.mu_);
    size_t n = 0;
    for (const auto& [job, j] : m_.jobs) n += m_.owner(job) == t_ && j.live();
    return n;
  }

  // The topics this thread reserves from.
  std::vector<std::string> topics() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < kTopics.size(); ++i)
      if (t_ == kConsumer ? i == kConsumerTopic : i / 2 == t_ && !m_.consumed_topic(i))
        out.push_back(kTopics[i]);
    return out;
  }

  // The consumer thread (load.h): reserves, then acks or releases what it holds.
  void consumer_step() {
    const uint64_t roll = below(100);
    if (held_.empty() || roll < 40) return reserve();
    return token_call(roll < 85 ? Kind::ack_intent : Kind::release_intent);
  }

  void step() {
    if (t_ == kConsumer) return consumer_step();
    // A call that has nothing to act on reserves instead.
    // About one call in fifty sets or clears a topic's limits (not in the power-loss cycles:
    // their check of what a power loss may take knows only the calls on jobs and pauses).
    if (!w_.power_loss_ && below(50) == 0) return limits_call();
    // And about one in forty browses a topic (list_jobs), checking what it lists (browse.cc).
    if (!w_.power_loss_ && below(40) == 0) return list_call();
    // And thread 0 makes a schedule call about one time in ten (schedule_load.cc), in the
    // power-loss cycles too (the prefix search fits them among its other calls, prefix.h).
    if (t_ == 0 && below(10) == 0) return schedule_call(w_, t_, rng_);
    const uint64_t roll = below(100);
    const bool room = pushed_live() < kLiveCap / m_.threads;
    if (roll < 16) return room ? push() : reserve();
    if (roll < 21) return room ? push_batch() : reserve();
    if (roll < 43) return reserve();
    if (roll < 46) return held_.empty() ? reserve() : token_call(Kind::release_intent);
    if (roll < 57) return held_.empty() ? reserve() : token_call(Kind::ack_intent);
    if (roll < 60) return ack_batch();
    if (roll < 66) return held_.empty() ? reserve() : token_call(Kind::nack_intent);
    if (roll < 69) return held_.empty() ? reserve() : token_call(Kind::dead_intent);
    if (roll < 73) return held_.empty() ? reserve() : token_call(Kind::touch_intent);
    if (roll < 79) return job_call(Kind::cancel_intent, live());
    if (roll < 84) return job_call(Kind::resched_intent, live());
    if (roll < 89) return job_call(Kind::requeue_intent, maybe_dead());
    if (roll < 92) return topic_jobs_call(Kind::rqtopic_intent);
    if (roll < 95) return topic_jobs_call(Kind::purge_intent);
    if (roll < 96) return pause_call(Kind::pause_intent);
    return pause_call(Kind::resume_intent);
  }

  Duration push_delay() {
    return below(3) == 0 ? Duration::zero() : Duration(below(kMaxPushDelay.count() + 1));
  }

  // Reports the intent of a push of `n` jobs (this thread's next unused ids) and returns it.
  Record push_intent(Kind kind, uint64_t n, Duration delay) {
    std::lock_guard lock(w_.mu_);
    uint64_t job = m_.next_job;
    while (m_.owner(job) != t_) ++job;
    Record r = intent(kind, job);
    r.arg = delay.count();
    r.n = n;
    w_.emit_locked(r);
    return r;
  }

  void push() {
    const Record in = push_intent(Kind::push_intent, 1, push_delay());
    const JobSpec spec = spec_of(m_.salt, in.job, Duration(in.arg), m_.threads);
    const Status s = q_.push(spec).status();
    w_.emit(done_record(Kind::push_done, in, s, now()));
  }

  void push_batch() {
    const Record in = push_intent(Kind::batch_intent, 2 + below(3), push_delay());
    std::vector<JobSpec> specs;
    for (uint64_t k = 0; k < in.n; ++k)
      specs.push_back(spec_of(m_.salt, in.job + k * m_.threads, Duration(in.arg), m_.threads));
    Status first;
    for (const Result<std::string>& r : q_.push_batch(std::move(specs)))
      if (!r.ok() && first.ok()) first = r.status();
    w_.emit(done_record(Kind::batch_done, in, first, now()));
  }

  void reserve() {
    // Most calls do not wait (a worker that waits is mostly killed while waiting); one in five
    // waits up to 3 ms for a job to fall due.
    // The consumer waits one time in two, so that pushes wake it.
    const bool waits = below(t_ == kConsumer ? 2 : 5) == 0;
    const Duration timeout = waits ? Duration(below(3'000'001)) : Duration::zero();
    const Record in = intent(Kind::reserve_intent);
    w_.emit(in);
    Result<Delivery> r = q_.reserve(topics_, timeout);
    const int64_t t1 = now();
    if (!r.ok()) return w_.emit(done_record(Kind::reserve_done, in, r.status(), t1));
    w_.report_delivery(*r, t_, in.t0, t1);
    held_.push_back(r->token);
  }

  // ack, nack, dead_letter, touch or release on a delivery this thread holds.
  void token_call(Kind kind) {
    const size_t i = below(held_.size());
    const Token t = held_[i];
    const uint64_t job = *parse_job_id(t.id);
    Record in = intent(kind, job);
    in.n = t.fence;
    std::optional<Duration> delay;
    if (kind == Kind::nack_intent && below(3) != 0) delay = Duration(below(100'000'001));
    in.arg = delay ? delay->count() : -1;
    w_.emit(in);
    Status s;
    int64_t lease = 0;
    switch (kind) {
      case Kind::ack_intent:
        s = q_.ack(t);
        break;
      case Kind::nack_intent:
        s = q_.nack(t, delay);
        break;
      case Kind::dead_intent:
        s = q_.dead_letter(t);
        break;
      case Kind::release_intent:
        s = q_.release(t);
        break;
      default: {
        Result<TimePoint> r = q_.touch(t);
        s = r.status();
        if (r.ok()) lease = ns_of(*r);
        break;
      }
    }
    Record done = done_record(done_of(kind), in, s, now());
    done.lease = lease;
    w_.emit(done);
    if (kind != Kind::touch_intent || !s.ok()) held_.erase(held_.begin() + static_cast<long>(i));
    forget_gone();  // an older delivery of an acked job
  }

  // ack_batch of two or three deliveries this thread holds, of different jobs.
  void ack_batch() {
    std::vector<size_t> picked;
    for (size_t k = 0; k < held_.size() && picked.size() < kMaxAckBatch; ++k) {
      const size_t i = (k + below(held_.size())) % held_.size();
      const bool dup = std::any_of(picked.begin(), picked.end(),
                                   [&](size_t p) { return held_[p].id == held_[i].id; });
      if (!dup) picked.push_back(i);
    }
    if (picked.size() < 2) return held_.empty() ? reserve() : token_call(Kind::ack_intent);
    Record in = intent(Kind::ackb_intent, *parse_job_id(held_[picked[0]].id));
    in.n = picked.size();
    std::vector<Token> tokens;
    for (size_t k = 0; k < picked.size(); ++k) {
      const Token& t = held_[picked[k]];
      in.items[k] = *parse_job_id(t.id);
      in.fences[k] = t.fence;
      tokens.push_back(t);
    }
    w_.emit(in);
    const std::vector<Status> acked = q_.ack_batch(tokens);
    Record done = done_record(Kind::ackb_done, in, Status(), now());
    for (size_t k = 0; k < picked.size(); ++k)
      done.codes[k] = k < acked.size() && !acked[k].ok()
                          ? static_cast<uint8_t>(acked[k].code().value())
                          : static_cast<uint8_t>(k < acked.size() ? 0 : 255);
    w_.emit(done);
    std::sort(picked.rbegin(), picked.rend());
    for (size_t i : picked) held_.erase(held_.begin() + static_cast<long>(i));
    forget_gone();
  }

  // cancel, reschedule or requeue_dead of one of `jobs`.
  void job_call(Kind kind, const std::vector<uint64_t>& jobs) {
    if (jobs.empty()) return reserve();
    const uint64_t job = jobs[below(jobs.size())];
    Record in = intent(kind, job);
    // Reschedule: from 50 ms in the past (meaning now) to 300 ms ahead.
    if (kind == Kind::resched_intent)
      in.arg = in.t0 - 50'000'000 + static_cast<int64_t>(below(350'000'001));
    w_.emit(in);
    Status s;
    switch (kind) {
      case Kind::cancel_intent:
        s = q_.cancel(job_id(job));
        break;
      case Kind::resched_intent:
        s = q_.reschedule(job_id(job), at_ns(in.arg));
        break;
      default:
        s = q_.requeue_dead(job_id(job));
        break;
    }
    w_.emit(done_record(done_of(kind), in, s, now()));
    forget_gone();
  }

  // purge_dead or requeue_dead_topic of a topic of this thread's that may hold dead jobs; then
  // every job of the topic that it changed is reported: each that is gone after a purge, and
  // after a requeue each that may have been dead and is waiting with no attempt (nothing but this
  // thread's calls touches its jobs, and only a requeue takes a dead job's attempts to 0).
  void topic_jobs_call(Kind kind) {
    const std::vector<uint64_t> dead = maybe_dead();
    if (dead.empty()) return reserve();
    const size_t topic = m_.topic_index(dead[below(dead.size())]);
    Record in = intent(kind);
    in.arg = static_cast<int64_t>(topic);
    w_.emit(in);
    const bool purge = kind == Kind::purge_intent;
    const Result<uint64_t> n =
        purge ? q_.purge_dead(kTopics[topic]) : q_.requeue_dead_topic(kTopics[topic]);
    const int64_t t1 = now();
    const Span w{in.t0, t1};
    for (uint64_t job : mine([&](uint64_t j, const Rec&r) {
           return m_.topic_index(j) == topic && (purge || may_be(r, j, w, St::dead));
         })) {
      const Result<JobInfo> got = q_.get(job_id(job));
      const bool changed = purge ? got.is(Errc::not_found)
                                 : got.ok() && got->attempts == 0 && got->state != JobState::dead &&
                                       got->state != JobState::reserved;
      if (!changed) continue;
      Record r = make_record(purge ? Kind::purged : Kind::requeued, job);
      r.thread = static_cast<uint8_t>(t_);
      w_.emit(r);
    }
    Record done = done_record(done_of(kind), in, n.status(), t1);
    done.n = n.ok() ? *n : 0;
    w_.emit(done);
    forget_gone();
  }

  // pause (of a topic of this thread's) or resume (of one that may be paused).
  void pause_call(Kind kind) {
    std::vector<size_t> topics;
    {
      std::lock_guard lock(w_.mu_);
      for (size_t i = 2 * t_; i < 2 * t_ + 2; ++i)
        if (!m_.consumed_topic(i) &&
            (kind == Kind::pause_intent || (m_.pause_may[i] & Model::kMayPause)))
          topics.push_back(i);
    }
    if (topics.empty()) return reserve();
    Record in = intent(kind);
    in.arg = static_cast<int64_t>(topics[below(topics.size())]);
    w_.emit(in);
    const std::string& topic = kTopics[static_cast<size_t>(in.arg)];
    const Status s = kind == Kind::pause_intent ? q_.pause(topic) : q_.resume(topic);
    w_.emit(done_record(done_of(kind), in, s, now()));
  }

  // set_topic_limits (kTopicLimits, load.h) or clear_topic_limits on a topic of this thread's.
  void limits_call() {
    const std::vector<size_t> topics = own_topics();
    if (topics.empty()) return reserve();
    Record in = intent(Kind::limits_intent);
    in.arg = static_cast<int64_t>(topics[below(topics.size())]);
    in.n = below(kTopicLimits.size() + 1);
    w_.emit(in);
    const std::string& topic = kTopics[static_cast<size_t>(in.arg)];
    const Status s = in.n == 0 ? q_.clear_topic_limits(topic)
                               : q_.set_topic_limits(topic, kTopicLimits[in.n - 1]);
    w_.emit(done_record(Kind::limits_done, in, s, now()));
  }

  // list_jobs of a topic of this thread's: its ready or dead jobs, a page or two of 4.
  void list_call() {
    const std::vector<size_t> topics = own_topics();
    if (topics.empty()) return reserve();
    Record in = intent(Kind::list_intent);
    in.arg = static_cast<int64_t>(topics[below(topics.size())]);
    in.n = below(2);
    w_.emit(in);
    const size_t topic = static_cast<size_t>(in.arg);
    const JobState state = in.n == 0 ? JobState::ready : JobState::dead;
    std::optional<JobInfo> prev;
    std::vector<std::pair<uint64_t, std::string>> bad;
    std::string cursor;
    Status s;
    uint64_t listed = 0;
    for (int page = 0; page < 2 && bad.empty(); ++page) {
      const int64_t t0 = now();
      Result<JobPage> p = q_.list_jobs(kTopics[topic], state, 4, cursor);
      const Span w{t0, now()};
      if (!p) {
        s = p.status();
        break;
      }
      {
        std::lock_guard lock(w_.mu_);
        bad = page_problems(*p, topic, state, m_, w, prev ? &*prev : nullptr);
      }
      listed += p->jobs.size();
      if (!p->jobs.empty()) prev = p->jobs.back();
      cursor = p->cursor;
      if (cursor.empty()) break;
    }
    for (const auto& [job, text] : bad) {
      Record v = make_record(Kind::violation, job);
      v.thread = static_cast<uint8_t>(t_);
      set_text(v, text);
      w_.emit(v);
    }
    Record done = done_record(Kind::list_done, in, s, now());
    done.n = listed;
    w_.emit(done);
  }

  // This thread's topics that no consumer takes.
  std::vector<size_t> own_topics() const {
    std::vector<size_t> out;
    for (size_t i = 2 * t_; i < 2 * t_ + 2; ++i)
      if (!m_.consumed_topic(i)) out.push_back(i);
    return out;
  }

  // Deliveries of jobs that are gone (cancelled, purged) can only be refused: dropped.
  void forget_gone() {
    std::lock_guard lock(w_.mu_);
    std::erase_if(held_,
                  [&](const Token& t) { return m_.live_rec(*parse_job_id(t.id)) == nullptr; });
  }

  WorkerProcess& w_;
  Model& m_;
  Engine& q_;
  const size_t t_;
  std::mt19937_64 rng_;
  const std::vector<std::string> topics_;
  std::vector<Token> held_;  // deliveries to this thread not yet acked, nacked or dead-lettered
};

}  // namespace

void run_loop(WorkerProcess& w, size_t thread, uint64_t seed) {
  Loop(w, thread, seed).run();
}

}  // namespace delayq::crash
