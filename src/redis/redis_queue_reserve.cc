// RedisQueue's reserves (see redis_queue.h for the map of its files): reserve(), reserve_async()
// and the interruptible reserves, the claims over the shards (try_claim()), the looks that
// Waiting drives (look(), look_batch()), and the jobs a batched claim kept ahead
// (remember_topics(), take_kept(), keep()).
#include <algorithm>
#include <iterator>
#include <utility>

#include "common/rules.h"
#include "redis/redis_queue.h"

namespace delayq::redis {

namespace {

// The most jobs one claim takes (RedisOptions::claim_batch's bound).
constexpr size_t kMaxClaim = 1000;

}  // namespace

Result<Delivery> RedisQueue::reserve(std::span<const std::string> topics, Duration timeout) {
  if (Status s = rules::check_topics(topics); !s.ok()) return s;
  const std::string call = next_call();
  return waiting_.wait([&](auto) { return look(topics, call); }, timeout);
}

void RedisQueue::reserve_async(std::vector<std::string> topics, Duration timeout,
                               std::function<void(Result<Delivery>)> done, std::stop_token stop) {
  if (Status s = rules::check_topics(topics); !s.ok()) return done(std::move(s));
  waiting_.wait_async(
      [this, topics = std::move(topics), call = next_call()](auto) { return try_claim(topics, call); },
      timeout, std::move(done), std::move(stop));
}

Result<Delivery> RedisQueue::reserve_interruptible(std::span<const std::string> topics,
                                                   Duration timeout,
                                                   const std::atomic<bool>& stop) {
  if (Status s = rules::check_topics(topics); !s.ok()) return s;
  const std::string call = next_call();
  Result<Delivery> r = waiting_.wait([&](auto) { return look(topics, call); }, timeout, &stop);
  // A consume() loop ends on any error but timeout: while the server is away, it keeps
  // waiting instead.
  if (r.is(Errc::unavailable))
    return Status(Errc::timeout, "redis unavailable: " + r.status().message());
  return r;
}

Result<std::vector<Delivery>> RedisQueue::reserve_batch_interruptible(
    std::span<const std::string> topics, size_t max, Duration timeout,
    const std::atomic<bool>& stop) {
  if (max <= 1) return Queue::reserve_batch_interruptible(topics, max, timeout, stop);
  if (Status s = rules::check_topics(topics); !s.ok()) return s;
  std::vector<Delivery> more;
  const std::string call = next_call();
  Result<Delivery> r =
      waiting_.wait([&](auto) { return look_batch(topics, call, max, &more); }, timeout, &stop);
  // As reserve_interruptible(): a consume() loop waits while the server is away.
  if (r.is(Errc::unavailable))
    return Status(Errc::timeout, "redis unavailable: " + r.status().message());
  if (!r) return r.status();  // an attempt that took jobs ends the wait: `more` is empty
  more.insert(more.begin(), std::move(*r));
  return more;
}

// One pass of the claim script over the shards, from a rotating start, taking up to `want`
// jobs from the first shard that has any: the first is the result, the others go to `more`.
// When none was ready, the earliest due time or lease deadline of the topics says when to
// look again (at most a sweep away, in case a wake-up message is lost). On a manual test clock
// that wait is in the clock's time, not the real one: the clock's moves wake the waiters
// instead, and the sweep stays.
Waiting::Attempt RedisQueue::try_claim(std::span<const std::string> topics,
                                       const std::string& call, uint32_t want,
                                       std::vector<Delivery>* more) {
  std::optional<Duration> next;
  const size_t n = keys_.size();
  const size_t start = n == 1 ? 0 : next_shard_.fetch_add(1) % n;
  for (size_t i = 0; i < n; ++i) {
    const ShardKeys& sh = keys_.shard((start + i) % n);
    // On several shards the first look asks ("?") whether topics with limits need admitting.
    Result<Claimed> got = claim_on(sh, topics, call, want, sharded() ? "?" : "");
    if (got && !got->admit.empty()) got = claim_admitted(sh, topics, call, want, *got);
    // Unavailable: the node paces its reconnections, look again soon.
    if (!got) return {got.status(), true, Waiting::Steady::now() + opt_.reconnect_min};
    if (got->jobs.empty()) {
      if (opt_.clock && opt_.clock->manual()) continue;
      if (const std::optional<Duration> w = got->next; w && (!next || *w < *next)) next = *w;
      continue;
    }
    remember_topics(got->jobs);
    Waiting::Attempt found{std::move(got->jobs.front())};
    if (more) std::move(got->jobs.begin() + 1, got->jobs.end(), std::back_inserter(*more));
    return found;
  }
  return {rules::reserve_timeout(topics), true,
          Waiting::Steady::now() + (next ? std::min(*next, opt_.sweep) : opt_.sweep)};
}

// A look of a blocking reserve(): a job kept ahead, else a claim (of several jobs ahead,
// when ClaimAhead says so).
Waiting::Attempt RedisQueue::look(std::span<const std::string> topics, const std::string& call) {
  if (std::optional<Delivery> d = take_kept(topics)) return {std::move(*d)};
  std::vector<Delivery> more;
  Waiting::Attempt a = try_claim(topics, call, ahead_.claim_size(topics), &more);
  keep(std::move(more));
  return a;
}

Waiting::Attempt RedisQueue::look_batch(std::span<const std::string> topics,
                                        const std::string& call, size_t max,
                                        std::vector<Delivery>* more) {
  if (std::optional<Delivery> d = take_kept(topics)) return {std::move(*d)};
  return try_claim(topics, call, static_cast<uint32_t>(std::min<size_t>(max, kMaxClaim)), more);
}

// A reserve call's name, the same for each of its looks: "<this opening's number>.<a counter>".
std::string RedisQueue::next_call() {
  return id_tag_ + "." + std::to_string(next_call_.fetch_add(1));
}

// The topics of jobs handed out, for the calls about them (JobCalls).
void RedisQueue::remember_topics(const std::vector<Delivery>& jobs) {
  for (const Delivery& d : jobs) jobs_.remember(d.id, d.topic);
}

// A kept job for `topics` (ClaimAhead::take); the stale ones found on the way are given back.
std::optional<Delivery> RedisQueue::take_kept(std::span<const std::string> topics) {
  std::vector<Delivery> stale;
  std::optional<Delivery> out = ahead_.take(topics, &stale);
  for (const Delivery& d : stale) (void)nack(d.token, Duration::zero());
  return out;
}

void RedisQueue::keep(std::vector<Delivery> more) {
  give_back(ahead_.keep(std::move(more)));
}

}  // namespace delayq::redis
