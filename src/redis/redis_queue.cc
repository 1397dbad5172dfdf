// RedisQueue (see redis_queue.h for the map of its files): opening and closing (the constructor,
// start(), the destructor, close()), and the calls about one job (ack, nack, dead_letter,
// release, touch, cancel, get, reschedule, requeue_dead), each one script run on the job's shard
// through about(); give_back() is here because it is such a call (a nack) made by close().
#include "redis/redis_queue.h"

#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <utility>

#include "common/format.h"
#include "redis/sentinel.h"

namespace delayq::redis {

namespace {

std::vector<std::string> wake_channels(const KeyLayout& keys) {
  std::vector<std::string> out;
  for (const ShardKeys& sh : keys.shards()) out.push_back(sh.wake);
  return out;
}

uint64_t random_seed() {
  std::random_device rd;
  return uint64_t{rd()} << 32 | rd();
}

JobCall delivery(ScriptId script, const Token& t) {
  return {.script = script, .id = t.id, .token = &t};
}

std::string fence(const Token& t) {
  return std::to_string(t.fence);
}

// The user and password the data nodes take (the sentinels' primary among them).
Endpoint credentials(const RedisOptions& opt) {
  Endpoint ep;
  ep.user = opt.user;
  ep.password = opt.password;
  return ep;
}

}  // namespace

RedisQueue::Parts::Parts(const RedisOptions& opt, Endpoint ep, const KeyLayout& keys)
    : router(std::move(ep),
             NodeOptions{opt.connections, opt.connect_timeout, opt.call_timeout, opt.reconnect_min,
                         opt.reconnect_max, ReplicaWait(opt.replicas_to_ack, opt.replicas_timeout)},
             &library(), sentinel_locator(opt.sentinels, opt.sentinel_master, opt.connect_timeout,
                              credentials(opt))),
      ahead(opt.claim_batch),
      listener(
          wake_channels(keys), [this] { return router.endpoints(); }, [this] { waiting.ready(); },
          {opt.connect_timeout, opt.reconnect_min, opt.reconnect_max}),
      waiting() {}

RedisQueue::RedisQueue(const RedisOptions& opt, Endpoint ep)
    : opt_(opt),
      rules_(opt.limits),
      keys_(opt.queue, opt.shards),
      parts_(std::make_unique<Parts>(opt, std::move(ep), keys_)),
      common_(opt.limits.max_delay, opt.seed ? opt.seed : random_seed(), opt.clock),
      jobs_(keys_, router_, common_, rules_) {
  // A generated id: a base-36 counter that starts at the time of opening in nanoseconds, then
  // '-' and this opening's number (start()), so that two openings never draw the same id,
  // whatever their wall clocks say.
  next_id_.store(static_cast<uint64_t>(SystemClock::instance().now().time_since_epoch().count()));
}

// Checks the queue's shard count and starts the listener threads.
Status RedisQueue::start() {
  if (Status s = router_.start(); !s.ok()) return s;
  const uint16_t meta_slot = keys_.shard(0).slot;
  Result<Reply> r =
      router_.command(meta_slot, {"HSETNX", keys_.meta(), "shards", std::to_string(opt_.shards)});
  if (!r) return r.status();
  Result<Reply> got = router_.command(meta_slot, {"HGET", keys_.meta(), "shards"});
  if (!got) return got.status();
  if (got->as_int(-1) != static_cast<int64_t>(opt_.shards))
    return Status(Errc::invalid_argument, "redis options: queue '" + opt_.queue +
                                              "' was created with " + got->str +
                                              " shards; open it with shards = " + got->str);
  // This opening's number, for its generated ids: the server counts the queue's openings.
  Result<Reply> n = router_.command(meta_slot, {"HINCRBY", keys_.meta(), "clients", "1"});
  if (!n) return n.status();
  if (n->as_int(0) <= 0)
    return Status(Errc::unavailable, "redis: HINCRBY " + keys_.meta() + " clients gave no count");
  id_tag_ = to_base36(static_cast<uint64_t>(n->as_int(0)));
  started_ = true;
  listener_.start();
  // A test clock that moves by command (RedisOptions::clock): each move may make jobs due, so
  // every waiter looks again, as the engine's Driver has them do.
  if (opt_.clock && opt_.clock->manual())
    clock_listener_ = opt_.clock->subscribe([this] {
      fire_schedules();  // before the move returns, as the engine's schedules fire
      waiting_.ready();
    });
  else
    parts_->schedules = std::jthread([this](std::stop_token st) { run_schedules(st); });
  // What fell due while no client ran, by each schedule's catch-up policy.
  fire_schedules();
  return {};
}

RedisQueue::~RedisQueue() {
  // In a child forked after the open: nothing is closed, joined or freed (common/fork_guard.h).
  if (waiting_.forked()) {
    (void)parts_.release();
    return;
  }
  // Destroying the queue from one of its own reserve_async callbacks would free the waiting
  // thread's state under its feet: a programming error, reported rather than left undefined.
  if (waiting_.on_own_thread()) {
    std::fprintf(stderr, "delayq: a Redis queue was destroyed from its own reserve_async callback\n");
    std::abort();
  }
  close();
}

void RedisQueue::close() {
  if (waiting_.forked()) return;  // the parent's queue: left alone (common/fork_guard.h)
  stop_consumers();  // first, while their last acks are still served
  if (closed_.exchange(true)) return;
  if (clock_listener_ != 0) opt_.clock->unsubscribe(clock_listener_);
  if (parts_->schedules.joinable()) {
    parts_->schedules.request_stop();
    parts_->schedules.join();
  }
  waiting_.close(closed_error());
  listener_.stop();
  give_back(ahead_.close());
  // A queue whose start() failed (open_redis() returns its error) reads no stats: the server may
  // be unreachable, and each call would wait out call_timeout before the error is returned.
  if (started_) {
    Stats last = stats();
    std::lock_guard lock(final_stats_mu_);
    final_stats_ = std::move(last);
  }
  router_.close();
  // The waiting thread finishes its waiters with `closed` and ends; it cannot join itself
  // (close() from a reserve_async callback: the destructor joins it).
  if (!waiting_.on_own_thread()) waiting_.join();
}

// A call about one job: refused after close(); refusals in the engine's words (JobCalls).
Result<Reply> RedisQueue::about(const JobCall& call, const std::vector<std::string>& args) {
  if (shut()) return shut_status();
  return run_job(call, args);
}

Result<Reply> RedisQueue::run_job(const JobCall& call, const std::vector<std::string>& args) {
  if (!sharded()) return jobs_.run(call, args);
  std::string topic;
  Result<Reply> r = jobs_.run(call, args, &topic);
  if (r) follow_place(call.script, topic, call.id, *r);
  return r;
}

Status RedisQueue::ack(const Token& t) {
  // A consumer of this topic holding no jobs ahead will reserve again next: the same script
  // run takes its next jobs (one round trip per job instead of two). Only with claim_batch > 1,
  // which is the caller's consent to jobs being leased before a reserve() asks for them.
  const std::string topic = opt_.claim_batch > 1 ? jobs_.topic_of(t.id) : std::string();
  if (const uint32_t want = ahead_.refill_wanted(topic); want > 0) {
    std::vector<std::string> args{fence(t), std::to_string(want), topic};
    if (sharded()) args.push_back("m");  // a limited topic takes nothing: see ack_claim.lua
    Result<Reply> r = about(delivery(kAckClaim, t), args);
    if (!r) return r.status();
    jobs_.forget(t.id);
    if (sharded() && r->elements.size() == 2) return {};  // a limited topic: acked, no claim
    Result<std::vector<Delivery>> more = read_ack_claim(std::move(*r));
    if (!more) return more.status();
    remember_topics(*more);
    keep(std::move(*more));
    return {};
  }
  Result<Reply> r = about(delivery(kAck, t), {fence(t)});
  // The connection broke after the ack went out (a failover, most likely): an ack by token is
  // safe to send again, and not_found then means the first one removed the job.
  if (!r && sent_and_lost(r.status()))
    r = resend(std::move(r), [&]() -> Result<Reply> {
      Result<Reply> again = about(delivery(kAck, t), {fence(t)});
      if (!again && again.status().is(Errc::not_found)) return Reply{};
      return again;
    });
  if (!r) return r.status();
  jobs_.forget(t.id);
  return {};
}

Result<Reply> RedisQueue::resend(Result<Reply> first,
                                 const std::function<Result<Reply>()>& send) {
  Result<Reply> r = first;
  for (int again = 0; again < 3 && !r && sent_and_lost(r.status()); ++again) {
    // The node waits reconnect_min after a broken connection before it opens another.
    std::this_thread::sleep_for(opt_.reconnect_min + std::chrono::milliseconds(1));
    r = send();
    if (!r && r.status().is(Errc::unavailable) && !sent_and_lost(r.status())) return first;
  }
  return r;
}

Status RedisQueue::nack(const Token& t, std::optional<Duration> delay) {
  if (shut()) return shut_status();
  if (Status s = rules_.check_nack_delay(delay, client_now()); !s.ok()) return s;
  return about(delivery(kNack, t), {fence(t), delay ? std::to_string(ceil_us(*delay)) : ""})
      .status();
}

Status RedisQueue::dead_letter(const Token& t) {
  return about(delivery(kDeadLetter, t), {fence(t)}).status();
}

Status RedisQueue::release(const Token& t) {
  return about(delivery(kRelease, t), {fence(t)}).status();
}

Result<TimePoint> RedisQueue::touch(const Token& t) {
  Result<Reply> r = about(delivery(kTouch, t), {fence(t)});
  if (!r) return r.status();
  return read_touch(*r);
}

Status RedisQueue::cancel(std::string_view id) {
  Result<Reply> r = about({.script = kCancel, .id = id}, {});
  if (!r) return r.status();
  jobs_.forget(id);
  return {};
}

Result<JobInfo> RedisQueue::get(std::string_view id) {
  Result<Reply> r = about({.script = kGet, .id = id}, {});
  if (!r) return r.status();
  return read_get(std::move(*r));
}

Status RedisQueue::reschedule(std::string_view id, TimePoint when) {
  const int64_t when_us = ceil_us(when);
  return about({.script = kReschedule,
                .id = id,
                .when = when,
                .when_us = when_us,
                .client_now = client_now()},
               {std::to_string(when_us)})
      .status();
}

Status RedisQueue::requeue_dead(std::string_view id) {
  return about({.script = kRequeueDead, .id = id}, {}).status();
}

// Jobs leased to this client, back to their topic: a failed attempt, as a lease running out.
void RedisQueue::give_back(const std::vector<Delivery>& jobs) {
  for (const Delivery& d : jobs) (void)run_job(delivery(kNack, d.token), {fence(d.token), "0"});
}

}  // namespace delayq::redis
