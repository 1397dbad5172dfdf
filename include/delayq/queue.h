// The Queue interface: what every backend (in-memory engine, durable engine, Redis) offers.
//
// Guarantees (docs/semantics.md has the long form):
//  - Nothing is delivered before its due time.
//  - At-least-once: a reserved job is held by one consumer until it is acknowledged, nacked, or
//    its lease (ttr) runs out; a lease that runs out counts as a failed attempt.
//  - A failed attempt is retried after the job's RetryPolicy delay, or moved to the dead letters
//    of its topic once max_attempts deliveries have failed.
//  - Within a topic, ready jobs come out by priority (smaller first), then due order, ties in
//    push order (per shard, when the queue is sharded).
//  - A call that fails changes nothing.
//
// Thread safety: every method may be called from any number of threads at once.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "delayq/error.h"
#include "delayq/job.h"
#include "delayq/schedule.h"

namespace delayq {

// What a consume() handler decides about a delivery.
struct HandlerResult {
  enum class Action : uint8_t { ack, retry, dead_letter };
  Action action = Action::ack;
  std::optional<Duration> delay{};  // retry only: wait this long instead of the policy's delay

  static HandlerResult ack() { return {Action::ack, std::nullopt}; }
  static HandlerResult retry(std::optional<Duration> delay = std::nullopt) {
    return {Action::retry, delay};
  }
  static HandlerResult dead_letter() { return {Action::dead_letter, std::nullopt}; }
};
using Handler = std::function<HandlerResult(const Delivery&)>;

class Queue;

// A running consume() loop: `concurrency` threads (Queue::consume() says how they batch). Its
// destruction (or stop()) lets each thread finish the job it holds, give back the rest of its
// batch and send its acks, then joins them; jobs not yet reserved stay in the queue.
//
// Lifetimes: closing the queue (or destroying it, which closes it) stops and joins its
// consumers first, so a Consumer may outlive its queue, or be declared before it: its stop() and
// destructor then have nothing left to do. stop() (or the destructor) may be called from the
// consumer's own handler: the calling thread is not joined (it ends when its handler returns, and
// that job is settled as the handler decided); the other threads are. In a child forked after
// the queue opened, stop() and the destructor join nothing (see Queue::close()).
class Consumer {
 public:
  Consumer() = default;
  Consumer(Consumer&&) noexcept = default;
  Consumer& operator=(Consumer&&) noexcept;
  ~Consumer();

  void stop();
  // Deliveries handled so far (whatever the handler decided).
  uint64_t handled() const;

 private:
  friend class Queue;
  struct State;
  // Stops the loop and waits for its threads (consumer.cc); `forget_queue`: the queue is closing.
  static void halt(State& st, bool forget_queue);
  std::shared_ptr<State> state_;
};

class Queue {
 public:
  virtual ~Queue() = default;

  // Adds a job. Returns its id (the given one, or a generated one).
  // Errors: invalid_argument (empty or oversized topic/id/body, negative delay, delay beyond
  // max_delay, both delay and due_at, bad retry policy), duplicate_id, closed, io_error.
  virtual Result<std::string> push(JobSpec spec) = 0;

  // Pushes each spec as push() would; one result per spec, in order. Specs are independent:
  // one bad spec does not stop the others.
  virtual std::vector<Result<std::string>> push_batch(std::vector<JobSpec> specs) = 0;

  // Takes the next ready job of any of `topics` (the most urgent first: the smallest priority,
  // then the earliest due) and leases it for its ttr. Topics whose limits allow no hand-out now
  // (set_topic_limits) are passed over. Waits up to `timeout` for one to become ready.
  // Errors: timeout (nothing became ready in time), invalid_argument (no topics), closed.
  virtual Result<Delivery> reserve(std::span<const std::string> topics, Duration timeout) = 0;
  Result<Delivery> reserve(const std::string& topic, Duration timeout) {
    return reserve(std::span<const std::string>(&topic, 1), timeout);
  }

  // The callback form of reserve(): `done` runs exactly once with a Delivery, or with timeout /
  // closed / cancelled. It runs on a thread owned by the queue, except when the call is refused
  // at once (no topics, or the queue is already closed) or the queue closes meanwhile: then it
  // runs on the calling thread, or on the thread that calls close(). Prefer delayq/asio.h's
  // async_reserve, which takes any Boost.Asio completion token and runs the handler on its
  // executor.
  //
  // Withdrawing: once `stop` is requested (a waiter whose client went away), the wait reserves
  // nothing more and `done` runs soon after with Errc::cancelled, on the queue's thread. A job
  // reserved before the request (a race the caller cannot close) still reaches `done`: give it
  // back with release() if it cannot be used.
  virtual void reserve_async(std::vector<std::string> topics, Duration timeout,
                             std::function<void(Result<Delivery>)> done, std::stop_token stop) = 0;
  void reserve_async(std::vector<std::string> topics, Duration timeout,
                     std::function<void(Result<Delivery>)> done) {
    reserve_async(std::move(topics), timeout, std::move(done), std::stop_token());
  }
  // The same with a callback that cannot be copied (a std::function needs one that can): it is
  // kept in one shared allocation and called once, as above.
  template <class F>
    requires(!std::is_copy_constructible_v<std::decay_t<F>> &&
             std::is_invocable_v<std::decay_t<F>&, Result<Delivery>>)
  void reserve_async(std::vector<std::string> topics, Duration timeout, F&& done,
                     std::stop_token stop = {}) {
    auto kept = std::make_shared<std::decay_t<F>>(std::forward<F>(done));
    reserve_async(std::move(topics), timeout,
                  std::function<void(Result<Delivery>)>(
                      [kept](Result<Delivery> r) { (*kept)(std::move(r)); }),
                  std::move(stop));
  }

  // Acknowledges a delivery: the job is done and gone.
  // Errors: stale_token (the token is not the job's current delivery), not_found.
  virtual Status ack(const Token& token) = 0;

  // Acknowledges several deliveries: one Status per token, in order, each what ack() would have
  // returned had the tokens been acked one after the other (a token given twice: the second is
  // not_found). One refused token does not stop the others. A backend may share the work
  // between them (Redis: one round trip and one script run per shard and topic); the default
  // calls ack() for each. An empty batch returns an empty vector.
  virtual std::vector<Status> ack_batch(std::span<const Token> tokens);

  // Gives a delivery back as failed. The job is retried after `delay` if given, else after its
  // policy's delay; or dead-lettered if this was its last attempt. Either way the delay counts
  // from now; a lease that runs out counts from the instant it ran out.
  // Errors: stale_token, not_found, invalid_argument (negative delay).
  virtual Status nack(const Token& token, std::optional<Duration> delay = std::nullopt) = 0;

  // Moves a delivery to the dead letters at once, whatever attempts it has left.
  virtual Status dead_letter(const Token& token) = 0;

  // Gives a delivery back undone, as if it had never been made: for a delivery that never
  // reached a consumer (its connection closed as it was being sent). The job is ready again in
  // its place in its topic's line (by due time, ties in push order), its attempts are what they
  // were before this delivery, and the token is stale. Counted in Stats::released, not as a
  // failed attempt. Durable like every change. Errors: stale_token, not_found.
  virtual Status release(const Token& token) = 0;

  // Extends a lease: it now runs out ttr from now. Returns the new lease deadline.
  // Errors: stale_token, not_found.
  virtual Result<TimePoint> touch(const Token& token) = 0;

  // Removes a job in any state. Its current holder's ack will be refused (not_found).
  // Errors: not_found.
  virtual Status cancel(std::string_view id) = 0;

  // A snapshot of a job. Errors: not_found.
  virtual Result<JobInfo> get(std::string_view id) = 0;

  // Moves a delayed or ready job to a new due time (the past means now).
  // Errors: not_found, invalid_state (reserved or dead: nack or requeue those instead),
  // invalid_argument (beyond max_delay).
  virtual Status reschedule(std::string_view id, TimePoint when) = 0;

  // Dead letters of a topic, oldest first, at most `limit`.
  virtual Result<std::vector<JobInfo>> list_dead(std::string_view topic, size_t limit) = 0;
  // Puts a dead job back as ready now, with its attempts reset to zero.
  // Errors: not_found, invalid_state (the job is not dead).
  virtual Status requeue_dead(std::string_view id) = 0;
  // requeue_dead() for every dead job of a topic; returns how many.
  virtual Result<uint64_t> requeue_dead_topic(std::string_view topic) = 0;
  // Deletes every dead job of a topic; returns how many.
  virtual Result<uint64_t> purge_dead(std::string_view topic) = 0;

  // Pauses a topic: from now on it hands out nothing. Its jobs keep falling due (they are ready,
  // and counted so), and on resume() they are handed out in due order, as if they had become
  // ready at their due times. reserve() over several topics takes from the others; a consumer
  // waiting on paused topics only keeps waiting until its timeout or a resume(). Reservations
  // already handed out are not affected (ack, nack, touch, release work), and a job that comes
  // back to the topic (a nack, a lease that runs out) waits for the resume like the others.
  // push, cancel, get, reschedule and the dead letters work as usual. Pausing a paused topic
  // changes nothing; so does pausing a topic that holds no job yet (it is paused when its jobs
  // come). The pause is kept like a job: a durable store keeps it across restarts and crashes
  // (once pause() returned), Redis as long as its keys. stats() lists paused topics.
  // Errors: invalid_argument (a topic that push() would refuse), closed, io_error.
  virtual Status pause(std::string_view topic) = 0;
  // Lets a paused topic hand out jobs again, and wakes the consumers waiting for it. Resuming a
  // topic that is not paused changes nothing. Errors: as pause().
  virtual Status resume(std::string_view topic) = 0;

  // Limits how fast and how many of a topic's jobs are handed out, for every consumer of the
  // queue together: a rate (a token bucket: `count` per `per`, bursts of up to `burst`) and/or a
  // number of jobs reserved at once. A throttled topic's jobs wait ready, in their order, and a
  // blocked reserve() wakes when the next token is due or a place frees (an ack, nack, release,
  // dead letter, cancel or lease that runs out). Replaces the topic's limits; a topic need not
  // hold jobs. Kept like a pause (a durable store keeps them across restarts; the bucket starts
  // full after one). Errors: invalid_argument (a topic push() would refuse, count 0, per <= 0 or
  // beyond max_delay, burst 0 or over 1 000 000, max_in_flight 0, neither set), closed, io_error.
  virtual Status set_topic_limits(std::string_view topic, const TopicLimits& limits);
  // Removes a topic's limits (none set: changes nothing) and wakes its waiting consumers.
  // Errors: as pause().
  virtual Status clear_topic_limits(std::string_view topic);

  // Creates a schedule (delayq/schedule.h), or replaces the one with the same id: from now on
  // each occurrence of its rule pushes one job, named occurrence_job_id(), due at the
  // occurrence. A replaced schedule keeps its counters, its pause and its jobs already pushed,
  // and goes on from its new rule's first occurrence at or after now (or its start). A new one
  // starts at its first occurrence at or after its start (without one, now): occurrences of a
  // start in the past count as missed (ScheduleSpec::catch_up). Kept like a pause (a durable
  // store keeps schedules across restarts, and fires what fell while it was closed by their
  // catch-up policy when it opens). Errors: invalid_argument, naming the field (schedule id,
  // rule, zone, job, end, catch_up_max; see ScheduleSpec), closed, io_error.
  virtual Status schedule(const ScheduleSpec& spec);
  // Removes a schedule; the jobs it pushed stay. Errors: not_found, closed, io_error.
  virtual Status unschedule(std::string_view id);
  // A schedule as it is now. Errors: not_found, closed.
  virtual Result<ScheduleInfo> get_schedule(std::string_view id);
  // Up to `limit` (1..1000) schedules in id order; `cursor`: empty for the first page, else the
  // previous page's SchedulePage::cursor. Errors: invalid_argument (a bad limit), closed.
  virtual Result<SchedulePage> list_schedules(size_t limit, std::string_view cursor = {});
  // Pauses a schedule: its occurrences push nothing until resume_schedule(), which treats the
  // ones that fell meanwhile as missed (ScheduleSpec::catch_up). Pausing a paused schedule (or
  // resuming a running one) changes nothing. Errors: not_found, closed, io_error.
  virtual Status pause_schedule(std::string_view id);
  virtual Status resume_schedule(std::string_view id);

  // A page of up to `limit` (1..1000) of a topic's jobs in one state, in that state's order:
  // delayed by due time, ready in hand-out order, reserved by lease deadline, dead in the order
  // they died. `cursor`: empty for the first page, else the previous page's JobPage::cursor.
  // Errors: invalid_argument (a bad topic or limit; a cursor that is damaged, not delayq's, or
  // of another topic or state), closed.
  virtual Result<JobPage> list_jobs(std::string_view topic, JobState state, size_t limit,
                                    std::string_view cursor = {});

  virtual Stats stats() = 0;

  // Whether the queue can serve calls now: ok, or the error they would fail with. A durable
  // store that stopped on a failed write answers that io_error; a closed queue `closed`; the
  // Redis backend sends a PING (in a Redis Cluster, one per shard, each to the node that
  // holds it) and answers unavailable when a server does not reply. For health checks (delayqd's
  // GET /health).
  virtual Status health() = 0;

  // Stops the queue: blocked reserve() calls and pending reserve_async() callbacks return
  // `closed`, later calls fail with `closed`; stats() still answers, with the queue as it was
  // when it closed. Jobs stay where they are (a durable backend keeps them for the next open; the
  // durable store lets go of its directory when the queue is destroyed). Idempotent; the
  // destructor calls it.
  //
  // fork(): a queue belongs to the process that opened it. In a child forked after the open
  // every call fails with `closed` (naming fork), stats() is empty, and close() and the
  // destructor leave everything as it is (no thread joined, no file closed or flushed), so the
  // parent's queue is untouched. Fork first, then open a queue in the child (docs/semantics.md).
  virtual void close() = 0;

  // Worker-style consumption of one topic with `concurrency` threads. The handler's result
  // acks, retries or dead-letters each delivery; a handler that throws counts as a failed
  // attempt (retried per policy). Leases are not extended automatically: call touch() from the
  // handler for long work, or push with a ttr that covers it.
  //
  // Batching: each thread takes up to as many ready jobs at once as its handler gets through in
  // about a millisecond (one job at first, and whenever the handler is slower than that; at most
  // 64), hands them to the handler one after the other, and sends their acks together with
  // ack_batch() once the batch is done, or before the next handler call once the oldest of them
  // waited a millisecond. A job of the batch (other than its first) whose lease is more than half
  // gone when its turn comes, or that is still unhandled when the consumer stops, is given back
  // with release(): it never reached the handler. Retries and dead letters are sent at once.
  // handled() counts a delivery once its ack, nack or dead letter was sent. Backends that cannot
  // take several jobs at once take one (the in-memory engine and the store today).
  Consumer consume(std::string topic, Handler handler, size_t concurrency = 1);
  // The same with a handler that cannot be copied: each thread cannot have a copy of its own, so
  // the threads share it, and with concurrency > 1 it is called from several threads at once.
  template <class H>
    requires(!std::is_copy_constructible_v<std::decay_t<H>> &&
             std::is_invocable_r_v<HandlerResult, std::decay_t<H>&, const Delivery&>)
  Consumer consume(std::string topic, H&& handler, size_t concurrency = 1) {
    auto shared = std::make_shared<std::decay_t<H>>(std::forward<H>(handler));
    return consume(std::move(topic),
                   Handler([shared](const Delivery& d) { return (*shared)(d); }), concurrency);
  }

 protected:
  friend class Consumer;
  // Stops and joins every consume() thread of this queue (all but the calling one, when called
  // from a handler), letting each settle the job it holds. Every backend's close() calls it
  // first, while the queue still serves their last acks.
  void stop_consumers();
  // reserve() that also returns (Errc::closed) soon after `stop` becomes true and
  // wake_waiters() is called. The default waits in slices of 100 ms; backends override both.
  virtual Result<Delivery> reserve_interruptible(std::span<const std::string> topics,
                                                 Duration timeout, const std::atomic<bool>& stop);
  // consume()'s reserve: up to `max` (>= 1) ready jobs of `topics` at once, each leased as
  // reserve() leases it, waiting as reserve_interruptible() does for the first. Never returns an
  // empty vector. The default takes one with reserve_interruptible().
  virtual Result<std::vector<Delivery>> reserve_batch_interruptible(
      std::span<const std::string> topics, size_t max, Duration timeout,
      const std::atomic<bool>& stop);
  virtual void wake_waiters() {}

 private:
  struct Consumers;  // the consume() loops started on this queue (consumer.cc)
  std::shared_ptr<Consumers> consumers_ = make_consumers();
  static std::shared_ptr<Consumers> make_consumers();
};

}  // namespace delayq
