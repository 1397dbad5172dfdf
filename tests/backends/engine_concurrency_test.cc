// Many threads against one in-memory Engine on the real SystemClock, through the public API.
//
// What must hold whatever the interleaving: every pushed job is acknowledged exactly once (none
// lost, none acknowledged twice), nothing is delivered before its due time, a job is held by one
// consumer at a time, attempts count up one by one, callbacks run exactly once, close() wakes
// everyone promptly, and the final stats are empty. The sizes are bounded so that each test takes
// a few seconds at most under AddressSanitizer on a slow 2-core machine; the only time limits
// here are generous guards against hangs, never assertions on speed.
//
// Kept whole over ~400 lines: one suite of invariants under threads, most tests reporting through
// the one Violations collector, all sized by the same bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "delayq/engine.h"

namespace {

using namespace delayq;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

// A hang guard: far beyond what any test needs, even under sanitizers.
constexpr auto kGuard = 60s;

TimePoint system_now() { return SystemClock::instance().now(); }

std::string show(TimePoint t) { return std::to_string(t.time_since_epoch().count()) + "ns"; }

// Problems seen on worker threads: counted, the first few kept for the failure message.
class Violations {
 public:
  void add(const std::string& what) {
    if (count_.fetch_add(1) < 20) {
      std::lock_guard lock(mu_);
      first_.push_back(what);
    }
  }
  uint64_t count() const { return count_.load(); }
  std::string report() const {
    std::lock_guard lock(mu_);
    std::ostringstream o;
    o << count_.load() << " violation(s):";
    for (const std::string& s : first_) o << "\n  " << s;
    return o.str();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> first_;
  std::atomic<uint64_t> count_{0};
};

#define EXPECT_NO_VIOLATIONS(v) EXPECT_EQ((v).count(), 0u) << (v).report()

std::unique_ptr<Engine> OpenEngine(EngineOptions o = {}) {
  auto r = Engine::open(o);
  if (!r.ok()) {
    ADD_FAILURE() << r.status().to_string();
    return nullptr;
  }
  return std::move(r).value();
}

// Waits (bounded) until `cond` holds. Returns whether it did.
template <class F>
bool WaitFor(F&& cond, Duration limit = kGuard) {
  const auto until = Steady::now() + limit;
  while (!cond()) {
    if (Steady::now() > until) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

void ExpectEmpty(const Stats& s) {
  for (const auto& [topic, c] : s.topics)
    EXPECT_EQ(c.delayed + c.ready + c.reserved + c.dead, 0u)
        << "topic " << topic << " still holds jobs: delayed " << c.delayed << " ready " << c.ready
        << " reserved " << c.reserved << " dead " << c.dead;
  EXPECT_TRUE(s.topics.empty()) << "stats lists topics with no live jobs";
}

// Starts `producers` threads that push jobs idx = p * per_producer + i (p = 0, 1, ...), each
// with a delay drawn from [0, max_delay_us] µs (seed `seed` + p): `note(idx, delay)` runs before
// the push (to record when the job may come at the earliest), `spec(idx, delay)` builds it.
template <class Note, class Spec>
void StartProducers(std::vector<std::thread>& threads, Engine& q, int producers, int per_producer,
                    unsigned seed, int max_delay_us, Violations& v, Note note, Spec spec) {
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&q, &v, p, per_producer, seed, max_delay_us, note, spec] {
      std::mt19937 rng(seed + p);
      std::uniform_int_distribution<int> delay_us(0, max_delay_us);
      for (int i = 0; i < per_producer; ++i) {
        const int idx = p * per_producer + i;
        const Duration delay = std::chrono::microseconds(delay_us(rng));
        note(idx, delay);
        JobSpec job = spec(idx, delay);
        const std::string id = job.id;
        auto r = q.push(std::move(job));
        if (!r.ok()) v.add("push " + id + ": " + r.status().to_string());
        else if (*r != id) v.add("push returned id " + *r + " for " + id);
      }
    });
}

// One turn of a consumer loop: a delivery, or nullopt to turn again (nothing came in 20 ms).
// Sets `stop` when the loop must end: the guard passed, or reserve failed (both recorded).
std::optional<Delivery> NextDelivery(Engine& q, const std::vector<std::string>& topics,
                                     Steady::time_point guard, Violations& v, bool& stop) {
  if (Steady::now() > guard) {
    v.add("a consumer gave up: time is up");
    stop = true;
    return std::nullopt;
  }
  auto r = q.reserve(topics, 20ms);
  if (r.is(Errc::timeout)) return std::nullopt;
  if (!r.ok()) {
    v.add("reserve: " + r.status().to_string());
    stop = true;
    return std::nullopt;
  }
  return std::move(*r);
}

// Starts `callers` threads that call reserve_async `per_caller` times each: call number
// c * per_caller + i waits timeout(i), and its callback runs on_done(result) once (a second run is
// a violation; `callbacks` counts the runs of each call).
template <class Timeout, class OnDone>
void StartAsyncCallers(std::vector<std::thread>& threads, Engine& q, int callers, int per_caller,
                       const std::vector<std::string>& topics,
                       std::vector<std::atomic<int>>& callbacks, Violations& v, Timeout timeout,
                       OnDone on_done) {
  for (int c = 0; c < callers; ++c)
    threads.emplace_back([&q, &topics, &callbacks, &v, c, per_caller, timeout, on_done] {
      for (int i = 0; i < per_caller; ++i) {
        const int call = c * per_caller + i;
        q.reserve_async(topics, timeout(i), [&callbacks, &v, call, on_done](Result<Delivery> r) {
          if (callbacks[call].fetch_add(1) != 0) v.add("callback ran twice");
          on_done(std::move(r));
        });
      }
    });
}

// ---- producers and consumers, ack only ----

// 4 producers x 2000 jobs with delays of 0-20 ms over 3 topics; 4 consumers reserve from all of
// them and ack.
void ProduceAndConsume(size_t shards, Duration tick = 1ms) {
  auto q = OpenEngine({.tick = tick, .shards = shards});
  ASSERT_TRUE(q);
  constexpr int kProducers = 4, kPerProducer = 2000, kConsumers = 4;
  constexpr int kTotal = kProducers * kPerProducer;
  const std::vector<std::string> topics{"t0", "t1", "t2"};

  // Written by a producer before its push, read by consumers after a reserve of that job: the
  // push and the reserve meet in the engine's lock, which orders the two.
  std::vector<TimePoint> earliest(kTotal);
  std::vector<std::atomic<int>> delivered(kTotal), acked(kTotal);
  std::atomic<int> acked_total{0};
  std::vector<std::vector<uint64_t>> fences(kConsumers);
  Violations v;
  const auto guard = Steady::now() + kGuard;

  std::vector<std::thread> threads;
  StartProducers(
      threads, *q, kProducers, kPerProducer, 1000, 20000, v,
      [&](int idx, Duration delay) { earliest[idx] = system_now() + delay; },
      [&](int idx, Duration delay) {
        return JobSpec{.topic = topics[idx % 3],
                       .id = std::to_string(idx),
                       .delay = delay,
                       .body = "body-" + std::to_string(idx)};
      });
  for (int c = 0; c < kConsumers; ++c)
    threads.emplace_back([&, c] {
      for (bool stop = false; !stop && acked_total.load() < kTotal;) {
        std::optional<Delivery> r = NextDelivery(*q, topics, guard, v, stop);
        if (!r) continue;
        const TimePoint seen = system_now();
        const int idx = std::stoi(r->id);
        if (idx < 0 || idx >= kTotal) {
          v.add("unknown id " + r->id);
          continue;
        }
        if (seen < r->due)
          v.add("job " + r->id + " delivered at " + show(seen) + " before its due " + show(r->due));
        if (r->due < earliest[idx])
          v.add("job " + r->id + " due " + show(r->due) + " is before push time + delay " +
                show(earliest[idx]));
        if (seen < earliest[idx])
          v.add("job " + r->id + " delivered before push time + delay");
        if (r->lease_deadline - 30s < r->due || r->lease_deadline - 30s > seen)
          v.add("job " + r->id + " lease deadline " + show(r->lease_deadline) +
                " is not reserve time + ttr");
        if (r->topic != topics[idx % 3] || r->body != "body-" + r->id)
          v.add("job " + r->id + " came back with topic " + r->topic + " body " + r->body);
        if (r->attempt != 1 || r->max_attempts != 10)
          v.add("job " + r->id + " attempt " + std::to_string(r->attempt) + "/" +
                std::to_string(r->max_attempts));
        if (r->token.id != r->id) v.add("token names " + r->token.id + " for job " + r->id);
        fences[c].push_back(r->token.fence);
        if (delivered[idx].fetch_add(1) != 0) v.add("job " + r->id + " delivered twice");
        const Status s = q->ack(r->token);
        if (!s.ok()) {
          v.add("ack " + r->id + ": " + s.to_string());
          continue;
        }
        if (acked[idx].fetch_add(1) != 0) v.add("job " + r->id + " acked twice");
        acked_total.fetch_add(1);
      }
    });
  for (auto& t : threads) t.join();

  EXPECT_NO_VIOLATIONS(v);
  int lost = 0, twice = 0;
  for (int i = 0; i < kTotal; ++i) {
    if (acked[i].load() == 0) ++lost;
    if (acked[i].load() > 1) ++twice;
  }
  EXPECT_EQ(lost, 0) << "jobs never acked";
  EXPECT_EQ(twice, 0) << "jobs acked more than once";

  // Every delivery had its own token. (Across shards, ShardedQueueHandsOutDistinctFences.)
  if (shards == 1) {
    std::vector<uint64_t> all;
    for (auto& f : fences) all.insert(all.end(), f.begin(), f.end());
    std::sort(all.begin(), all.end());
    EXPECT_TRUE(std::adjacent_find(all.begin(), all.end()) == all.end())
        << "two deliveries share a fence";
  }

  const Stats s = q->stats();
  ExpectEmpty(s);
  EXPECT_EQ(s.pushed, uint64_t{kTotal});
  EXPECT_EQ(s.delivered, uint64_t{kTotal});
  EXPECT_EQ(s.acked, uint64_t{kTotal});
  EXPECT_EQ(s.retried, 0u);
  EXPECT_EQ(s.leases_expired, 0u);
  EXPECT_EQ(s.dead_lettered, 0u);
}

TEST(EngineConcurrency, ProducersAndConsumersAckEveryJobOnce) { ProduceAndConsume(1); }

TEST(EngineConcurrency, ProducersAndConsumersAckEveryJobOnceWithFourShards) {
  ProduceAndConsume(4);
}

// A coarse tick must not make jobs due inside a tick fire at its start (early) -- nor, with exact
// timers, at its end; only the first is asserted.
TEST(EngineConcurrency, ProducersAndConsumersWithAOneSecondTick) { ProduceAndConsume(4, 1s); }

// ---- consumers that nack at random ----

TEST(EngineConcurrency, RandomNacksRetryUntilAcked) {
  auto q = OpenEngine({.shards = 2});
  ASSERT_TRUE(q);
  constexpr int kProducers = 4, kPerProducer = 500, kConsumers = 4;
  constexpr int kTotal = kProducers * kPerProducer;
  constexpr uint32_t kMaxAttempts = 50;  // far above what the consumers make use of
  constexpr uint32_t kNackBelow = 5;     // consumers nack only attempts 1..4
  const std::vector<std::string> topics{"n0", "n1", "n2"};

  struct Track {
    TimePoint earliest;              // the next delivery may not come before this
    std::vector<uint32_t> attempts;  // attempts seen, in order
    int acked = 0;
  };
  // One lock over the bookkeeping: a broken engine that delivered a job twice at once must show
  // up as a violation, not as a data race in the test.
  std::mutex mu;
  std::vector<Track> track(kTotal);
  std::atomic<int> acked_total{0};
  std::atomic<uint64_t> nacks{0}, deliveries{0};
  Violations v;
  const auto guard = Steady::now() + kGuard;

  std::vector<std::thread> threads;
  StartProducers(
      threads, *q, kProducers, kPerProducer, 2000, 5000, v,
      [&](int idx, Duration delay) {
        std::lock_guard lock(mu);
        track[idx].earliest = system_now() + delay;
      },
      [&](int idx, Duration delay) {
        return JobSpec{.topic = topics[idx % 3],
                       .id = "n" + std::to_string(idx),
                       .delay = delay,
                       .retry = RetryPolicy::fixed(2ms, kMaxAttempts)};
      });
  for (int c = 0; c < kConsumers; ++c)
    threads.emplace_back([&, c] {
      std::mt19937 rng(3000 + c);
      std::bernoulli_distribution coin(0.4);
      std::uniform_int_distribution<int> nack_delay_us(0, 3000);
      for (bool stop = false; !stop && acked_total.load() < kTotal;) {
        std::optional<Delivery> r = NextDelivery(*q, topics, guard, v, stop);
        if (!r) continue;
        const TimePoint seen = system_now();
        deliveries.fetch_add(1);
        const int idx = std::stoi(r->id.substr(1));
        if (seen < r->due) v.add("job " + r->id + " delivered before its due time");
        if (r->max_attempts != kMaxAttempts) v.add("job " + r->id + " wrong max_attempts");
        const bool nack = r->attempt < kNackBelow && coin(rng);
        std::optional<Duration> delay;
        if (nack && coin(rng)) delay = std::chrono::microseconds(nack_delay_us(rng));
        {
          std::lock_guard lock(mu);
          Track& t = track[idx];
          if (r->due < t.earliest || seen < t.earliest)
            v.add("job " + r->id + " attempt " + std::to_string(r->attempt) +
                  " came before push/nack time + delay");
          const uint32_t expected = static_cast<uint32_t>(t.attempts.size()) + 1;
          if (r->attempt != expected)
            v.add("job " + r->id + " attempt " + std::to_string(r->attempt) + ", expected " +
                  std::to_string(expected));
          if (t.acked) v.add("job " + r->id + " delivered after its ack");
          t.attempts.push_back(r->attempt);
          // Recorded before the nack: the redelivery cannot come before the nack.
          if (nack) t.earliest = system_now() + (delay ? *delay : 2ms);
        }
        if (nack) {
          const Status s = q->nack(r->token, delay);
          if (!s.ok()) v.add("nack " + r->id + ": " + s.to_string());
          nacks.fetch_add(1);
          // The nacked token is spent.
          const Status again = q->ack(r->token);
          if (again.ok()) v.add("ack after nack of " + r->id + " succeeded");
          continue;
        }
        const Status s = q->ack(r->token);
        if (!s.ok()) {
          v.add("ack " + r->id + ": " + s.to_string());
          continue;
        }
        {
          std::lock_guard lock(mu);
          if (track[idx].acked++) v.add("job " + r->id + " acked twice");
        }
        acked_total.fetch_add(1);
      }
    });
  for (auto& t : threads) t.join();

  EXPECT_NO_VIOLATIONS(v);
  int lost = 0, retried_jobs = 0;
  uint64_t extra = 0;
  for (const Track& t : track) {
    if (t.acked != 1) ++lost;
    if (t.attempts.size() > 1) ++retried_jobs;
    extra += t.attempts.size() - 1;
  }
  EXPECT_EQ(lost, 0) << "jobs not acked exactly once";
  EXPECT_GT(retried_jobs, kTotal / 10) << "the test meant to retry many jobs";
  EXPECT_EQ(extra, nacks.load());

  const Stats s = q->stats();
  ExpectEmpty(s);
  EXPECT_EQ(s.pushed, uint64_t{kTotal});
  EXPECT_EQ(s.acked, uint64_t{kTotal});
  EXPECT_EQ(s.delivered, deliveries.load());
  EXPECT_EQ(s.retried, nacks.load());
  EXPECT_EQ(s.dead_lettered, 0u);
  EXPECT_EQ(s.leases_expired, 0u);
}

// ---- short leases that run out, and late acks ----

// Leases of 20 ms; consumers "forget" some deliveries and try to ack them later. Whatever the
// timing, each job is acknowledged successfully exactly once, and only by its latest delivery;
// and no delivery comes early: the first not before push time + delay, each later one not before
// the reservation of the one before (whose lease had to run out) + ttr + the retry wait.
TEST(EngineConcurrency, ExpiredLeasesRedeliverAndLateAcksAreRefused) {
  auto q = OpenEngine();
  ASSERT_TRUE(q);
  constexpr int kProducers = 2, kPerProducer = 500, kConsumers = 4;
  constexpr int kTotal = kProducers * kPerProducer;
  const std::string topic = "lease";

  constexpr Duration kTtr = 20ms, kRetryWait = 1ms;
  struct Seen {
    uint64_t fence;
    TimePoint reserve_called;  // read before the reserve() that returned it
    TimePoint returned;        // read after
  };
  std::mutex mu;
  std::vector<uint64_t> max_fence(kTotal, 0);   // latest delivery of each job
  std::vector<uint64_t> acked_fence(kTotal, 0); // the delivery whose ack succeeded
  std::vector<int> acks(kTotal, 0);
  std::vector<std::vector<Seen>> deliveries(kTotal);  // each job's deliveries
  std::vector<TimePoint> pushed(kTotal);              // push time + delay, read before the push
  std::atomic<int> acked_total{0};
  std::atomic<uint64_t> forgotten{0}, late_ok{0}, late_refused{0};
  Violations v;
  const auto guard = Steady::now() + kGuard;

  auto settle = [&](const Token& t, bool late) {
    const int idx = std::stoi(t.id);
    const Status s = q->ack(t);
    if (s.ok()) {
      std::lock_guard lock(mu);
      if (acks[idx]++) v.add("job " + t.id + " acked twice");
      acked_fence[idx] = t.fence;
      if (t.fence != max_fence[idx])
        v.add("job " + t.id + " acked by delivery " + std::to_string(t.fence) +
              " while delivery " + std::to_string(max_fence[idx]) + " was out");
      acked_total.fetch_add(1);
      if (late) late_ok.fetch_add(1);
    } else if (s.is(Errc::stale_token) || s.is(Errc::not_found)) {
      if (late) late_refused.fetch_add(1);
    } else {
      v.add("ack " + t.id + ": " + s.to_string());
    }
  };

  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p)
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        const int idx = p * kPerProducer + i;
        const Duration delay = std::chrono::milliseconds(idx % 7);
        {
          std::lock_guard lock(mu);
          pushed[idx] = system_now() + delay;
        }
        auto r = q->push({.topic = topic,
                          .id = std::to_string(idx),
                          .delay = delay,
                          .ttr = kTtr,
                          .retry = RetryPolicy::fixed(kRetryWait, 100000)});
        if (!r.ok()) v.add("push: " + r.status().to_string());
      }
    });
  for (int c = 0; c < kConsumers; ++c)
    threads.emplace_back([&, c] {
      std::mt19937 rng(4000 + c);
      std::bernoulli_distribution forget(0.1), late(0.3);
      std::vector<Token> held;
      while (acked_total.load() < kTotal) {
        if (Steady::now() > guard) {
          v.add("consumer gave up");
          return;
        }
        if (!held.empty() && late(rng)) {
          settle(held.back(), true);
          held.pop_back();
        }
        const TimePoint called = system_now();
        auto r = q->reserve(topic, 10ms);
        if (r.is(Errc::timeout)) continue;
        if (!r.ok()) {
          v.add("reserve: " + r.status().to_string());
          return;
        }
        const TimePoint returned = system_now();
        const int idx = std::stoi(r->id);
        {
          // A delivery may be recorded late (its consumer preempted past its lease), so order
          // and earliness are checked at the end, from the fences.
          std::lock_guard lock(mu);
          max_fence[idx] = std::max(max_fence[idx], r->token.fence);
          deliveries[idx].push_back({r->token.fence, called, returned});
        }
        if (forget(rng)) {
          forgotten.fetch_add(1);
          held.push_back(r->token);
          continue;
        }
        settle(r->token, false);
      }
      for (const Token& t : held) settle(t, true);  // all of these must be refused by now
    });
  for (auto& t : threads) t.join();

  EXPECT_NO_VIOLATIONS(v);
  int wrong = 0;
  for (int i = 0; i < kTotal; ++i) wrong += acks[i] != 1;
  EXPECT_EQ(wrong, 0) << "jobs not acked exactly once";
  // The ack that succeeded belonged to the job's last delivery: nothing was delivered after it,
  // and no two deliveries of a job shared a fence.
  int after_ack = 0, shared = 0, early = 0;
  uint64_t total_deliveries = 0;
  for (int i = 0; i < kTotal; ++i) {
    std::vector<Seen>& f = deliveries[i];
    total_deliveries += f.size();
    std::sort(f.begin(), f.end(), [](const Seen& a, const Seen& b) { return a.fence < b.fence; });
    if (!f.empty() && f.back().fence != acked_fence[i]) ++after_ack;
    for (size_t k = 0; k < f.size(); ++k) {
      if (k > 0 && f[k].fence == f[k - 1].fence) ++shared;
      const TimePoint due = k == 0 ? pushed[i] : f[k - 1].reserve_called + kTtr + kRetryWait;
      if (f[k].returned < due) ++early;
    }
  }
  EXPECT_EQ(after_ack, 0) << "jobs delivered again after their successful ack";
  EXPECT_EQ(shared, 0) << "jobs whose deliveries shared a fence";
  EXPECT_EQ(early, 0) << "deliveries before the due time the test computed";
  EXPECT_GT(forgotten.load(), 0u);
  const Stats s = q->stats();
  ExpectEmpty(s);
  EXPECT_EQ(s.acked, uint64_t{kTotal});
  EXPECT_GE(s.leases_expired, forgotten.load() - late_ok.load());
  EXPECT_EQ(s.retried, s.leases_expired);
  EXPECT_EQ(s.delivered, s.acked + s.leases_expired);
  EXPECT_EQ(s.delivered, total_deliveries);
}

// ---- consume() ----

TEST(EngineConcurrency, ConsumeRetriesThrowingHandlersPerPolicy) {
  auto q = OpenEngine();
  ASSERT_TRUE(q);
  constexpr int kTotal = 2000;
  constexpr uint32_t kMaxAttempts = 5;
  auto poison = [](int i) { return i % 101 == 0; };          // always throws: dead after 5
  auto flaky = [&](int i) { return !poison(i) && i % 7 == 0; };  // throws on attempts 1 and 2

  std::vector<std::atomic<int>> calls(kTotal);
  std::vector<std::atomic<bool>> in_flight(kTotal);
  // Per job, the earliest instant of its next delivery (ns since the epoch), as the test
  // computes it: push time + delay, then the instant of a throw + the retry wait (1 ms; the
  // consumer nacks after the handler has thrown).
  std::vector<std::atomic<int64_t>> earliest(kTotal);
  auto ns_at = [](TimePoint t) { return t.time_since_epoch().count(); };
  std::atomic<uint64_t> total_calls{0};
  Violations v;

  Handler handler = [&](const Delivery& d) -> HandlerResult {
    total_calls.fetch_add(1);
    const int idx = std::stoi(d.id);
    if (in_flight[idx].exchange(true)) v.add("job " + d.id + " handled twice at once");
    const int n = calls[idx].fetch_add(1) + 1;
    if (d.attempt != static_cast<uint32_t>(n))
      v.add("job " + d.id + " attempt " + std::to_string(d.attempt) + " on call " +
            std::to_string(n));
    if (d.max_attempts != kMaxAttempts) v.add("job " + d.id + " wrong max_attempts");
    if (ns_at(system_now()) < earliest[idx].load())
      v.add("job " + d.id + " delivered before the due time the test computed");
    in_flight[idx].store(false);
    const bool fails = poison(idx) || (flaky(idx) && d.attempt < 3);
    if (fails) earliest[idx].store(ns_at(system_now() + 1ms));
    if (poison(idx)) throw std::runtime_error("poison " + d.id);
    if (flaky(idx) && d.attempt < 3) {
      if (d.attempt == 1) throw 42;  // not even a std::exception
      throw std::logic_error("flaky " + d.id);
    }
    return HandlerResult::ack();
  };

  Consumer consumer = q->consume("work", handler, 4);
  // Pushed while the consumer runs, from two threads.
  std::vector<std::thread> producers;
  for (int p = 0; p < 2; ++p)
    producers.emplace_back([&, p] {
      for (int i = p; i < kTotal; i += 2) {
        const Duration delay = std::chrono::milliseconds(i % 5);
        earliest[i].store(ns_at(system_now() + delay));
        auto r = q->push({.topic = "work",
                          .id = std::to_string(i),
                          .delay = delay,
                          .retry = RetryPolicy::fixed(1ms, kMaxAttempts)});
        if (!r.ok()) v.add("push: " + r.status().to_string());
      }
    });
  for (auto& t : producers) t.join();

  int n_poison = 0, n_flaky = 0;
  for (int i = 0; i < kTotal; ++i) {
    n_poison += poison(i);
    n_flaky += flaky(i);
  }
  const uint64_t want_acked = kTotal - n_poison;
  const bool done = WaitFor([&] {
    const Stats s = q->stats();
    return s.acked == want_acked && s.dead_lettered == uint64_t(n_poison);
  });
  consumer.stop();
  ASSERT_TRUE(done) << "consume() did not finish the jobs in time";

  EXPECT_NO_VIOLATIONS(v);
  int wrong = 0;
  for (int i = 0; i < kTotal; ++i) {
    const int want = poison(i) ? int(kMaxAttempts) : flaky(i) ? 3 : 1;
    wrong += calls[i].load() != want;
  }
  EXPECT_EQ(wrong, 0) << "jobs handled a wrong number of times";
  EXPECT_EQ(consumer.handled(), total_calls.load());

  auto dead = q->list_dead("work", 10 * kTotal);
  ASSERT_TRUE(dead.ok()) << dead.status().to_string();
  std::set<std::string> dead_ids;
  for (const JobInfo& j : *dead) {
    dead_ids.insert(j.id);
    EXPECT_EQ(j.state, JobState::dead);
    EXPECT_EQ(j.attempts, kMaxAttempts) << j.id;
  }
  std::set<std::string> want_dead;
  for (int i = 0; i < kTotal; ++i)
    if (poison(i)) want_dead.insert(std::to_string(i));
  EXPECT_EQ(dead_ids, want_dead);

  const Stats s = q->stats();
  EXPECT_EQ(s.pushed, uint64_t{kTotal});
  EXPECT_EQ(s.retried, uint64_t(n_flaky * 2 + n_poison * (kMaxAttempts - 1)));
  EXPECT_EQ(s.delivered, total_calls.load());
  ASSERT_EQ(s.topics.size(), 1u);
  EXPECT_EQ(s.topics.at("work"), (TopicStats{0, 0, 0, uint64_t(n_poison)}));
}

// ---- reserve_async ----

TEST(EngineConcurrency, ReserveAsyncFromManyThreadsDeliversEachJobOnce) {
  auto q = OpenEngine({.shards = 2});
  ASSERT_TRUE(q);
  constexpr int kCallers = 4, kPerCaller = 400;
  constexpr int kCalls = kCallers * kPerCaller;
  constexpr int kTotal = kCalls;  // one job per call
  const std::vector<std::string> topics{"x", "y"};

  std::vector<TimePoint> earliest(kTotal);
  std::vector<std::atomic<int>> callbacks(kCalls), delivered(kTotal);
  std::atomic<int> callbacks_total{0};
  Violations v;

  std::vector<std::thread> threads;
  StartAsyncCallers(
      threads, *q, kCallers, kPerCaller, topics, callbacks, v, [](int) { return 30s; },
      [&](Result<Delivery> r) {
        if (!r.ok()) {
          v.add("reserve_async: " + r.status().to_string());
        } else {
          const int idx = std::stoi(r->id);
          if (system_now() < earliest[idx])
            v.add("job " + r->id + " delivered before the due time the test computed");
          if (r->due < earliest[idx])
            v.add("job " + r->id + " reports a due time before push time + delay");
          if (delivered[idx].fetch_add(1) != 0) v.add("job " + r->id + " delivered twice");
          const Status s = q->ack(r->token);
          if (!s.ok()) v.add("ack " + r->id + ": " + s.to_string());
        }
        callbacks_total.fetch_add(1);
      });
  StartProducers(
      threads, *q, 2, kTotal / 2, 5000, 10000, v,
      [&](int idx, Duration delay) { earliest[idx] = system_now() + delay; },
      [&](int idx, Duration delay) {
        return JobSpec{.topic = topics[idx % 2], .id = std::to_string(idx), .delay = delay};
      });
  for (auto& t : threads) t.join();
  ASSERT_TRUE(WaitFor([&] { return callbacks_total.load() >= kCalls; }))
      << callbacks_total.load() << " of " << kCalls << " callbacks ran";

  EXPECT_NO_VIOLATIONS(v);
  int missing = 0;
  for (int i = 0; i < kTotal; ++i) missing += delivered[i].load() != 1;
  EXPECT_EQ(missing, 0) << "jobs not delivered exactly once";
  const Stats s = q->stats();
  ExpectEmpty(s);
  EXPECT_EQ(s.acked, uint64_t{kTotal});
  EXPECT_EQ(s.delivered, uint64_t{kTotal});
  q.reset();
  EXPECT_EQ(callbacks_total.load(), kCalls) << "callbacks ran after the engine was destroyed";
}

TEST(EngineConcurrency, ReserveAsyncTimeoutsRunEachCallbackOnce) {
  auto q = OpenEngine();
  ASSERT_TRUE(q);
  constexpr int kCallers = 4, kPerCaller = 50, kCalls = kCallers * kPerCaller;
  std::vector<std::atomic<int>> callbacks(kCalls);
  std::atomic<int> total{0};
  Violations v;
  std::vector<std::thread> threads;
  const std::vector<std::string> topics{"empty"};
  StartAsyncCallers(
      threads, *q, kCallers, kPerCaller, topics, callbacks, v,
      [](int i) { return std::chrono::milliseconds(i % 3); },  // 0, 1 or 2 ms
      [&](Result<Delivery> r) {
        if (!r.is(Errc::timeout)) v.add("expected a timeout, got " + r.status().to_string());
        total.fetch_add(1);
      });
  for (auto& t : threads) t.join();
  ASSERT_TRUE(WaitFor([&] { return total.load() >= kCalls; }))
      << total.load() << " of " << kCalls << " callbacks ran";
  // Jobs pushed afterwards are not taken by the callbacks that timed out.
  ASSERT_TRUE(q->push({.topic = "empty", .id = "later"}).ok());
  auto d = q->reserve("empty", 5s);
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  q.reset();
  EXPECT_EQ(total.load(), kCalls);
  EXPECT_NO_VIOLATIONS(v);
}

// ---- close() ----

TEST(EngineConcurrency, CloseWakesBlockedConsumersPromptly) {
  auto q = OpenEngine();
  ASSERT_TRUE(q);
  constexpr int kBlocked = 4, kAsync = 8;
  std::atomic<int> returned{0}, async_done{0};
  std::vector<Steady::time_point> returned_at(kBlocked);
  Violations v;

  std::vector<std::thread> threads;
  for (int i = 0; i < kBlocked; ++i)
    threads.emplace_back([&, i] {
      const std::vector<std::string> topics{"idle", "idle2"};
      auto r = i % 2 ? q->reserve(topics, 60s) : q->reserve("idle", 60s);
      returned_at[i] = Steady::now();
      if (!r.is(Errc::closed)) v.add("blocked reserve returned " + r.status().to_string());
      returned.fetch_add(1);
    });
  for (int i = 0; i < kAsync; ++i)
    q->reserve_async({"idle"}, 60s, [&](Result<Delivery> r) {
      if (!r.is(Errc::closed)) v.add("pending reserve_async got " + r.status().to_string());
      async_done.fetch_add(1);
    });
  std::atomic<uint64_t> handled_calls{0};
  Consumer consumer = q->consume(
      "idle",
      [&](const Delivery&) {
        handled_calls.fetch_add(1);
        return HandlerResult::ack();
      },
      2);

  // Give the waiters a moment to block (not needed for correctness: an early close must be
  // reported as closed too).
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(returned.load(), 0) << "a 60 s reserve returned early";
  const auto closed_at = Steady::now();
  q->close();
  for (auto& t : threads) t.join();
  consumer.stop();

  EXPECT_NO_VIOLATIONS(v);
  EXPECT_EQ(returned.load(), kBlocked);
  for (int i = 0; i < kBlocked; ++i)
    EXPECT_LT(returned_at[i] - closed_at, 10s) << "reserve " << i << " was not woken by close()";
  EXPECT_EQ(async_done.load(), kAsync) << "pending reserve_async callbacks after close()";
  EXPECT_EQ(handled_calls.load(), 0u);
  EXPECT_EQ(consumer.handled(), 0u);
  // And later calls fail at once.
  EXPECT_TRUE(q->reserve("idle", 60s).is(Errc::closed));
  EXPECT_TRUE(q->push({.topic = "idle"}).is(Errc::closed));
}

// close() must not wait for the next deadline: a lease (or a delayed job) armed by work that the
// driver thread still had queued when close() was called must not keep close() waiting for it.
// Here the driver is held busy in a reserve_async callback while a job is made ready for a
// second waiter and close() is called; when released, it hands that job out (taking a 10 s
// lease, earlier than the 1 h lease already armed) before it processes the close.
TEST(EngineConcurrency, CloseDoesNotWaitForALeaseArmedDuringClose) {
  EngineOptions opt;
  opt.limits.default_ttr = 10s;
  auto q = OpenEngine(opt);
  ASSERT_TRUE(q);
  // On the heap: if close() hangs, the closing thread is left behind and outlives this test.
  struct Flags {
    std::atomic<int> w2_calls{0};
    std::atomic<bool> w1_entered{false}, release{false}, closed{false};
  };
  auto f = std::make_shared<Flags>();
  // W2 waits for a job of "later".
  q->reserve_async({"later"}, 60s, [f](Result<Delivery>) { f->w2_calls.fetch_add(1); });
  // W1 gets a job at once, with a 1 h lease; its callback holds the driver thread until
  // released.
  ASSERT_TRUE(q->push({.topic = "now", .id = "w1-job", .ttr = 1h}).ok());
  q->reserve_async({"now"}, 60s, [f](Result<Delivery>) {
    f->w1_entered.store(true);
    for (int i = 0; i < 10000 && !f->release.load(); ++i) std::this_thread::sleep_for(1ms);
  });
  ASSERT_TRUE(WaitFor([&] { return f->w1_entered.load(); }, 10s));
  // A job for W2 becomes ready: the driver is told to serve W2 (queued behind W1's callback).
  ASSERT_TRUE(q->push({.topic = "later", .id = "w2-job"}).ok());
  const auto t0 = Steady::now();
  Engine* raw = q.get();
  std::thread closer([f, raw] {
    raw->close();
    f->closed.store(true);
  });
  // close() has begun (calls are refused) and queued its work behind W1's callback.
  ASSERT_TRUE(WaitFor([&] { return q->push({.topic = "x"}).is(Errc::closed); }, 10s));
  std::this_thread::sleep_for(50ms);
  f->release.store(true);
  const bool prompt = WaitFor([&] { return f->closed.load(); }, 5s);
  const auto took = Steady::now() - t0;
  EXPECT_TRUE(prompt) << "close() still blocked after "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms: its driver thread waits for the lease handed out while closing "
                         "(and then for every later deadline)";
  if (prompt) {
    closer.join();
    EXPECT_EQ(f->w2_calls.load(), 1);
  } else {
    // Leave the engine and its stuck closer behind rather than hang the test binary.
    closer.detach();
    (void)q.release();
  }
}

// close() racing with producers, consumers and reserve_async callers: every call ends with a
// normal answer (ok, timeout or closed), every callback runs exactly once, no thread hangs.
TEST(EngineConcurrency, CloseRacingWithTrafficLosesNoCallback) {
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    EngineOptions opt;
    opt.shards = 1 + round % 3;
    // Short leases: a close() that waits for the next lease (see the test above) costs little.
    opt.limits.default_ttr = 200ms;
    auto q = OpenEngine(opt);
    ASSERT_TRUE(q);
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> calls{0}, callbacks{0};
    Violations v;
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; !stop.load(); ++i) {
          calls.fetch_add(1);
          q->reserve_async({"r"}, (i % 2) ? 30s : 1ms, [&](Result<Delivery> r) {
            if (r.ok()) (void)q->ack(r->token);
            else if (!r.is(Errc::timeout) && !r.is(Errc::closed))
              v.add("reserve_async: " + r.status().to_string());
            callbacks.fetch_add(1);
          });
          auto p = q->push({.topic = "r", .id = std::to_string(t) + "-" + std::to_string(i)});
          if (!p.ok() && !p.is(Errc::closed)) v.add("push: " + p.status().to_string());
          if (i % 16 == 0) std::this_thread::yield();
        }
      });
    threads.emplace_back([&] {
      while (!stop.load()) {
        auto r = q->reserve("r", 5ms);
        if (r.ok()) (void)q->ack(r->token);
        else if (!r.is(Errc::timeout) && !r.is(Errc::closed))
          v.add("reserve: " + r.status().to_string());
      }
    });
    ASSERT_TRUE(WaitFor([&] { return calls.load() > 200; }));
    q->close();
    stop.store(true);
    for (auto& t : threads) t.join();
    q.reset();
    EXPECT_EQ(callbacks.load(), calls.load()) << "reserve_async callbacks that never ran";
    EXPECT_NO_VIOLATIONS(v);
  }
}

// A handler may decide to stop the whole queue.
TEST(EngineConcurrency, CloseFromAConsumeHandler) {
  auto q = OpenEngine();
  ASSERT_TRUE(q);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(q->push({.topic = "h", .id = std::to_string(i)}).ok());
  std::atomic<int> calls{0};
  std::atomic<bool> closer_ran{false};
  Consumer consumer = q->consume(
      "h",
      [&](const Delivery& d) {
        calls.fetch_add(1);
        if (d.id == "10") {
          closer_ran = true;
          q->close();
        }
        return HandlerResult::ack();
      },
      4);
  ASSERT_TRUE(WaitFor([&] { return q->push({.topic = "h"}).is(Errc::closed); }, 30s));
  consumer.stop();  // the threads ended on `closed`; joining them must not hang
  EXPECT_TRUE(closer_ran.load());
  // Jobs 0..9 were handed out before "10", but close() stops the consumers: a worker that took
  // one and had not called its handler yet gives it back uncalled. So only the closing handler is
  // sure to have run (the ASan stage once saw 10 calls).
  EXPECT_GE(calls.load(), 1);
  EXPECT_LE(calls.load(), 100);
  EXPECT_TRUE(q->reserve("h", 1s).is(Errc::closed));
}

template <class F>
[[noreturn]] void RunChild(F& body, unsigned limit_s) {
  alarm(limit_s);
  const std::string why = body();
  if (!why.empty()) std::fprintf(stderr, "%s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(why.empty() ? 0 : 1);
}

// Runs `body` in a child process, so that a crash, std::terminate or a sanitizer abort inside
// the engine fails this test alone instead of ending the whole binary. `body` returns "" on
// success, else what went wrong. A hang ends by SIGALRM after `limit_s` seconds.
template <class F>
void RunIsolated(F body, unsigned limit_s = 30) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(RunChild(body, limit_s), ::testing::ExitedWithCode(0), "");
}

// reserve_async's callback runs on the queue's own thread; calling close() there must close the
// queue, not kill the process (joining the driver thread from itself throws
// std::system_error(EDEADLK), which escapes io_context::run() and calls std::terminate).
TEST(EngineConcurrencyDeathTest, CloseFromAReserveAsyncCallback) {
  RunIsolated([]() -> std::string {
    auto opened = Engine::open({});
    if (!opened.ok()) return opened.status().to_string();
    std::unique_ptr<Engine> q = std::move(opened).value();
    if (!q->push({.topic = "t", .id = "a"}).ok()) return "push failed";
    std::atomic<int> state{0};  // 1: in the callback, 2: close() returned in it
    q->reserve_async({"t"}, 10s, [&](Result<Delivery> r) {
      state.store(1);
      if (r.ok()) q->close();
      state.store(2);
    });
    if (!WaitFor([&] { return state.load() == 2; }, 10s))
      return "close() called from the callback did not return (state " +
             std::to_string(state.load()) + ")";
    if (!q->push({.topic = "t"}).is(Errc::closed)) return "the queue is not closed";
    q.reset();
    return "";
  });
}

// ---- consumers and their queue's lifetime ----

// A Consumer declared before its queue outlives it: the queue's destruction (its close()) stops
// the consumer first and waits for the handler in progress, whose ack is still served; the
// Consumer's own stop() then has nothing left to do. Seen to fail before the fix: the queue was
// destroyed while the handler still ran (its ack then went to freed memory).
TEST(EngineConcurrencyDeathTest, AConsumerMayOutliveItsQueue) {
  RunIsolated([]() -> std::string {
    Consumer consumer;  // declared before the queue: destroyed after it
    auto opened = Engine::open({});
    if (!opened.ok()) return opened.status().to_string();
    std::unique_ptr<Engine> q = std::move(opened).value();
    std::atomic<bool> entered{false}, returned{false};
    consumer = q->consume("t", [&](const Delivery&) {
      entered.store(true);
      std::this_thread::sleep_for(300ms);
      returned.store(true);
      return HandlerResult::ack();
    });
    if (!q->push({.topic = "t", .id = "a"}).ok()) return "push failed";
    if (!WaitFor([&] { return entered.load(); }, 10s)) return "the handler never ran";
    q.reset();
    if (!returned.load()) return "the queue was destroyed while its consumer's handler still ran";
    if (consumer.handled() != 1) return "the handler's ack was not sent before the queue closed";
    consumer.stop();  // nothing left to stop
    return "";
  });
}

// Two handlers of one consumer stop it at the same moment: neither may wait for the other's
// thread while that one waits for it. Seen to hang before the fix (each waited for the other).
TEST(EngineConcurrencyDeathTest, TwoHandlersStoppingTheirConsumerAtOnce) {
  RunIsolated([]() -> std::string {
    auto opened = Engine::open({});
    if (!opened.ok()) return opened.status().to_string();
    std::unique_ptr<Engine> q = std::move(opened).value();
    std::atomic<int> in{0}, stopped{0};
    Consumer consumer;
    consumer = q->consume(
        "two",
        [&](const Delivery&) {
          in.fetch_add(1);
          WaitFor([&] { return in.load() >= 2; }, 5s);  // both handlers inside
          consumer.stop();
          stopped.fetch_add(1);
          return HandlerResult::ack();
        },
        2);
    for (const char* id : {"a", "b"})
      if (!q->push({.topic = "two", .id = id}).ok()) return "push failed";
    if (!WaitFor([&] { return stopped.load() == 2; }, 10s))
      return "the two stops did not both return (" + std::to_string(stopped.load()) + ")";
    consumer.stop();
    if (consumer.handled() != 2) return "the two jobs were not both settled";
    return "";
  }, 20);
}

// A handler may stop its own consumer: its thread is not joined (it ends when the handler
// returns), the other threads are, and the job is settled as the handler said. Seen to fail
// before the fix: stop() threw (a thread joining itself) and the job counted a failed attempt.
TEST(EngineConcurrency, AHandlerMayStopItsOwnConsumer) {
  auto q = OpenEngine();
  ASSERT_TRUE(q);
  std::atomic<bool> threw{false};
  Consumer consumer;
  consumer = q->consume(
      "own",
      [&](const Delivery&) {
        try {
          consumer.stop();
        } catch (...) {
          threw.store(true);
          throw;
        }
        return HandlerResult::ack();
      },
      3);
  ASSERT_TRUE(q->push({.topic = "own", .id = "a"}).ok());
  ASSERT_TRUE(WaitFor([&] { return consumer.handled() == 1; }, 10s));
  EXPECT_FALSE(threw.load());
  consumer.stop();  // from here: returns once every thread ended
  EXPECT_TRUE(q->get("a").is(Errc::not_found)) << "the handler's ack was not what settled the job";
  EXPECT_EQ(q->stats().acked, 1u);
  // Stopped for good: a job pushed now stays ready.
  ASSERT_TRUE(q->push({.topic = "own", .id = "b"}).ok());
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(q->get("b")->state, JobState::ready);
}

// ---- ids and tokens under contention ----

TEST(EngineConcurrency, ConcurrentPushesOfTheSameIdsAdmitOneEach) {
  auto q = OpenEngine({.shards = 4});
  ASSERT_TRUE(q);
  constexpr int kThreads = 4, kIds = 1000;
  std::vector<std::atomic<int>> wins(kIds);
  std::vector<std::atomic<int>> bodies(kIds);
  Violations v;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < kIds; ++k) {
        const int i = (k * 7 + t * 251) % kIds;  // each thread in its own order
        auto r = q->push({.topic = "same",
                          .id = "id-" + std::to_string(i),
                          .delay = 1h,
                          .body = std::to_string(t)});
        if (r.ok()) {
          wins[i].fetch_add(1);
          bodies[i].store(t);
        } else if (!r.is(Errc::duplicate_id)) {
          v.add("push: " + r.status().to_string());
        }
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_NO_VIOLATIONS(v);
  int wrong = 0, body_mismatch = 0;
  for (int i = 0; i < kIds; ++i) {
    wrong += wins[i].load() != 1;
    auto j = q->get("id-" + std::to_string(i));
    body_mismatch += !j.ok() || j->body != std::to_string(bodies[i].load());
  }
  EXPECT_EQ(wrong, 0) << "ids admitted other than once";
  EXPECT_EQ(body_mismatch, 0) << "a stored job does not hold the winning push's body";
  const Stats s = q->stats();
  EXPECT_EQ(s.pushed, uint64_t{kIds});
  EXPECT_EQ(s.topics.at("same").delayed, uint64_t{kIds});
}

TEST(EngineConcurrency, AckRacingCancelSucceedsExactlyOnce) {
  auto q = OpenEngine({.shards = 2});
  ASSERT_TRUE(q);
  constexpr int kJobs = 1000;
  std::vector<Token> tokens;
  for (int i = 0; i < kJobs; ++i)
    ASSERT_TRUE(q->push({.topic = "race", .id = std::to_string(i)}).ok());
  for (int i = 0; i < kJobs; ++i) {
    auto d = q->reserve("race", 5s);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    tokens.push_back(d->token);
  }
  std::vector<std::atomic<int>> wins(kJobs);
  Violations v;
  std::thread acker([&] {
    for (const Token& t : tokens) {
      const Status s = q->ack(t);
      if (s.ok()) wins[std::stoi(t.id)].fetch_add(1);
      else if (!s.is(Errc::not_found)) v.add("ack: " + s.to_string());
    }
  });
  std::thread canceller([&] {
    for (int i = kJobs - 1; i >= 0; --i) {
      const Status s = q->cancel(std::to_string(i));
      if (s.ok()) wins[i].fetch_add(1);
      else if (!s.is(Errc::not_found)) v.add("cancel: " + s.to_string());
    }
  });
  acker.join();
  canceller.join();
  EXPECT_NO_VIOLATIONS(v);
  int wrong = 0;
  for (int i = 0; i < kJobs; ++i) wrong += wins[i].load() != 1;
  EXPECT_EQ(wrong, 0);
  const Stats s = q->stats();
  ExpectEmpty(s);
  EXPECT_EQ(s.acked + s.cancelled, uint64_t{kJobs});
}

// Job.h: "`fence` grows with every delivery in the queue" -- the whole queue, sharded or not.
TEST(EngineConcurrency, ShardedQueueHandsOutDistinctFences) {
  auto q = OpenEngine({.shards = 4});
  ASSERT_TRUE(q);
  constexpr int kJobs = 200;
  for (int i = 0; i < kJobs; ++i)
    ASSERT_TRUE(q->push({.topic = "f", .id = "f" + std::to_string(i)}).ok());
  std::map<uint64_t, std::string> by_fence;
  std::vector<std::string> clashes;
  uint64_t last = 0;
  int not_growing = 0;
  for (int i = 0; i < kJobs; ++i) {
    auto d = q->reserve("f", 5s);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    if (d->token.fence <= last) ++not_growing;
    last = d->token.fence;
    auto [it, fresh] = by_fence.emplace(d->token.fence, d->id);
    if (!fresh && clashes.size() < 5)
      clashes.push_back("fence " + std::to_string(d->token.fence) + " given to " + it->second +
                        " and " + d->id);
  }
  EXPECT_EQ(by_fence.size(), size_t{kJobs}) << [&] {
    std::string s = "deliveries share fences:";
    for (const auto& c : clashes) s += "\n  " + c;
    return s;
  }();
  EXPECT_EQ(not_growing, 0) << "fences did not grow from one delivery to the next";
}

}  // namespace
