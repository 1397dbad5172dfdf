// Wall-clock steps (docs/semantics.md, "Time"). Due times are instants of the wall clock, and the
// wall clock can jump: NTP stepping at boot, an operator's `date -s`, a VM resumed hours later.
// What is promised, and proven here on real timers and real sleeping consumers:
//  - nothing is handed out before its due time as read from the queue's clock, whatever the step;
//  - a step back does not leave consumers asleep while jobs pushed after it fall due;
//  - a step forward wakes waiting consumers for what it made due, instead of letting them sleep
//    out the distance they counted before the step;
//  - fences and generated ids never repeat, even when the store is reopened with the wall clock
//    stepped back (clock_step_process_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>

#include "delayq/engine.h"
#include "delayq/store.h"
#include "temp_dir.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;

// The real time plus an offset that the test steps. Not manual: the queue arms real timers and
// its consumers really sleep, as they do on the system clock.
class SteppingClock final : public Clock {
 public:
  TimePoint now() const override {
    return SystemClock::instance().now() + Duration(offset_.load());
  }
  void step(Duration d) { offset_.fetch_add(d.count()); }

 private:
  std::atomic<int64_t> offset_{0};
};

using testing::TempDir;

// Long enough that a consumer sleeping out a distance counted before a step of an hour fails the
// test, short enough that the failure does not take long. Correct runs end well before it.
constexpr Duration kBound = 20s;

// The in-memory engine and the durable store: both wait the same way, the store also journals.
class ClockStep : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    EngineOptions eo;
    eo.clock = &clock;
    eo.shards = 2;
    Result<std::unique_ptr<Engine>> opened = Engine::open(eo);
    if (GetParam() == "store")
      opened = open_store({.dir = dir.path(), .sync = Sync::none, .engine = eo});
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    q = std::move(opened).value();
  }
  void TearDown() override {
    if (q) q->close();
  }

  // Pushes a job and returns the earliest instant it may be handed out, as the test computes it:
  // the clock before the push plus the delay. (The caller keeps the clock from stepping during
  // the push.) A ttr of 0 is the queue's default (30 s).
  TimePoint push(const std::string& id, Duration delay, const std::string& topic = "t",
                 Duration ttr = 0s) {
    const TimePoint due = clock.now() + delay;
    EXPECT_TRUE(q->push({.topic = topic, .id = id, .delay = delay, .ttr = ttr}).ok()) << id;
    return due;
  }

  // A consumer is waiting (`got`) and nothing is due yet; the clock steps by `step`, and the
  // waiting consumer gets job `id`, not before `due`, and without sleeping out the time it had
  // counted before the step (that would take an hour, so it would time out after kBound).
  void step_then_expect(std::future<Result<Delivery>>& got, Duration step, const std::string& id,
                        TimePoint due) {
    ASSERT_EQ(got.wait_for(300ms), std::future_status::timeout) << "handed out early";
    clock.step(step);
    const Result<Delivery> d = got.get();
    const TimePoint seen = clock.now();
    ASSERT_TRUE(d.ok()) << "the waiter slept through the step: " << d.status().to_string();
    EXPECT_EQ(d->id, id);
    EXPECT_GE(seen, due);
  }

  SteppingClock clock;
  TempDir dir{"delayq-clock"};
  std::unique_ptr<Engine> q;
};

TEST_P(ClockStep, AStepForwardWakesABlockedConsumerForWhatItMadeDue) {
  const TimePoint due = push("a", 1h);
  auto got = std::async(std::launch::async, [&] { return q->reserve("t", kBound); });
  step_then_expect(got, 1h, "a", due);
}

TEST_P(ClockStep, AStepForwardServesAnAsyncWaiterForWhatItMadeDue) {
  const TimePoint due = push("a", 1h);
  std::promise<Result<Delivery>> p;
  auto got = p.get_future();
  q->reserve_async({"t"}, kBound, [&p](Result<Delivery> r) { p.set_value(std::move(r)); });
  step_then_expect(got, 1h, "a", due);
}

TEST_P(ClockStep, AStepBackDoesNotStallJobsPushedAfterIt) {
  push("far", 10s);
  const TimePoint far_due = q->get("far")->due;
  auto got = std::async(std::launch::async, [&] { return q->reserve("t", kBound); });
  std::this_thread::sleep_for(200ms);  // the consumer sleeps until "far" is due
  clock.step(-1h);
  const TimePoint near_due = push("near", 200ms);
  const Result<Delivery> d = got.get();
  ASSERT_TRUE(d.ok()) << "stalled: " << d.status().to_string();
  EXPECT_EQ(d->id, "near");
  EXPECT_GE(clock.now(), near_due);
  // "far" is due at its instant of the wall clock, an hour and ten seconds away now.
  EXPECT_TRUE(q->reserve("t", 0ms).is(Errc::timeout));
  EXPECT_EQ(q->get("far")->state, JobState::delayed);
  EXPECT_EQ(q->get("far")->due, far_due) << "a step does not move due times";
}

// A job that is ready stays ready; one that is not waits for its instant of the wall clock.
TEST_P(ClockStep, AStepBackNeverHandsOutEarlyAndAStepForwardCatchesUp) {
  push("ready", 0ms);
  const TimePoint due = push("a", 2s);
  clock.step(-1h);
  const Result<Delivery> ready = q->reserve("t", 0ms);
  ASSERT_TRUE(ready.ok()) << ready.status().to_string();
  EXPECT_EQ(ready->id, "ready");
  ASSERT_TRUE(q->ack(ready->token).ok());
  EXPECT_TRUE(q->reserve("t", 3s).is(Errc::timeout)) << "handed out before its wall-clock instant";
  auto got = std::async(std::launch::async, [&] { return q->reserve("t", kBound); });
  step_then_expect(got, 1h, "a", due);
}

// The timeout of reserve and reserve_async is steady time: a step forward does not end it early,
// a step back does not stretch it (by the hour).
TEST_P(ClockStep, ReserveTimeoutsAreSteadyTime) {
  for (Duration step : {Duration(1h), Duration(-2h)}) {
    const auto start = std::chrono::steady_clock::now();
    auto blocking = std::async(std::launch::async, [&] { return q->reserve("none", 1s); });
    std::promise<Result<Delivery>> p;
    auto async = p.get_future();
    q->reserve_async({"none"}, 1s, [&p](Result<Delivery> r) { p.set_value(std::move(r)); });
    std::this_thread::sleep_for(100ms);
    clock.step(step);
    for (auto* got : {&blocking, &async}) {
      ASSERT_EQ(got->wait_for(kBound), std::future_status::ready) << "a step back stretched it";
      EXPECT_TRUE(got->get().is(Errc::timeout));
    }
    EXPECT_GE(std::chrono::steady_clock::now() - start, 1s) << "a step forward cut it short";
  }
}

// Lease deadlines are instants of the wall clock too: a step forward past one runs the lease
// out (a failed attempt, retried per the policy), a step back lengthens it.
TEST_P(ClockStep, LeasesRunOutAtTheirWallClockInstant) {
  push("a", 0ms);
  push("b", 0ms);
  const Result<Delivery> a = q->reserve("t", 0ms);
  const Result<Delivery> b = q->reserve("t", 0ms);
  ASSERT_TRUE(a.ok() && b.ok());
  clock.step(-1h);
  EXPECT_TRUE(q->touch(a->token).ok()) << "a step back ran a lease out";
  clock.step(2h);
  EXPECT_TRUE(q->ack(b->token).is(Errc::stale_token)) << "a lease outlived its deadline";
  EXPECT_EQ(q->get(b->id)->state, JobState::ready) << "the failed attempt was not retried";
  EXPECT_EQ(q->get(b->id)->attempts, 1u);
}

// Producers push short delays, consumers take and ack, and the clock jumps back and forth
// meanwhile. Every delivery is checked against the due time the test computed, and once the
// clock has passed every due time, everything still waiting arrives (nothing stalls).
//
// A job made ready stays ready when the clock then steps back, so "early" is judged against the
// highest the clock can have read between the push and the delivery: the real time at delivery
// plus the highest offset in force in between.
TEST_P(ClockStep, ProducersAndConsumersAcrossStepsBothWays) {
  struct Pushed {
    TimePoint due;
    size_t steps;  // how many steps had been made at the push
  };
  std::shared_mutex stepping;  // pushes (shared) and steps (exclusive) do not overlap
  std::mutex mu;
  std::vector<Duration> offsets{Duration(0)};  // offsets[k]: the offset after k steps; mu
  std::map<std::string, Pushed> pushed;        // mu
  std::vector<std::string> early, delivered;   // mu
  std::atomic<bool> stop{false};

  std::vector<std::thread> consumers;
  for (int c = 0; c < 3; ++c)
    consumers.emplace_back([&] {
      // Long waits, so that a consumer that sleeps through a step shows (close() ends them).
      while (!stop.load()) {
        // The steps made before the call: the lease is set somewhere inside it, so only these
        // are surely behind it.
        size_t steps_before_reserve;
        {
          std::lock_guard l(mu);
          steps_before_reserve = offsets.size();
        }
        Result<Delivery> d = q->reserve("t", kBound);
        const TimePoint real = SystemClock::instance().now();
        if (d.is(Errc::closed)) break;
        if (!d.ok()) continue;
        const Status acked = q->ack(d->token);
        std::lock_guard l(mu);
        if (!acked.ok()) {
          // A step forward after the lease was set (inside reserve, or between the delivery
          // and the ack) can run it out, for it ends at an instant of the wall clock: the job
          // comes again. Without a step since the call began, it is a failure.
          EXPECT_TRUE(acked.is(Errc::stale_token) && offsets.size() > steps_before_reserve)
              << d->id << ": " << acked.to_string();
          continue;
        }
        delivered.push_back(d->id);
        const Pushed& p = pushed.at(d->id);
        const Duration highest = *std::max_element(offsets.begin() + p.steps, offsets.end());
        if (real + highest < p.due) early.push_back(d->id);
      }
    });
  std::thread producer([&] {
    std::mt19937 rng(7);
    for (int i = 0; i < 300; ++i) {
      {
        std::shared_lock l(stepping);
        const std::string id = "j" + std::to_string(i);
        const Duration delay = std::chrono::milliseconds(rng() % 400);
        std::lock_guard g(mu);
        // A lease longer than any step: a step that falls between a consumer's reserve and its
        // ack must not run the lease out (that redelivers the job, which is right, but not what
        // this test counts; LeasesRunOutAtTheirWallClockInstant covers it).
        pushed[id] = Pushed{push(id, delay, "t", 12h), offsets.size() - 1};
      }
      std::this_thread::sleep_for(3ms);
    }
  });
  auto step = [&](Duration d) {
    std::unique_lock l(stepping);
    std::lock_guard g(mu);
    clock.step(d);
    offsets.push_back(offsets.back() + d);
  };
  for (Duration d : {Duration(-30min), Duration(10min), Duration(-2h), Duration(3h), Duration(-1h),
                     Duration(-5s), Duration(20s), Duration(-1h)}) {
    std::this_thread::sleep_for(150ms);
    step(d);
  }
  producer.join();
  std::this_thread::sleep_for(600ms);  // what is due at this offset is out; consumers sleep
  {
    Duration to_top;
    {
      std::lock_guard g(mu);
      to_top = *std::max_element(offsets.begin(), offsets.end()) - offsets.back();
    }
    step(to_top + 1s);  // past every due time pushed at any offset
  }
  const auto give_up = std::chrono::steady_clock::now() + kBound;
  for (;;) {
    {
      std::lock_guard l(mu);
      if (delivered.size() >= pushed.size() || std::chrono::steady_clock::now() > give_up) break;
    }
    std::this_thread::sleep_for(20ms);
  }
  stop = true;
  q->close();
  for (std::thread& t : consumers) t.join();
  EXPECT_TRUE(early.empty()) << early.size() << " handed out early, e.g. " << early.front();
  EXPECT_EQ(delivered.size(), pushed.size()) << "stalled";
  EXPECT_EQ(q->stats().acked, pushed.size());
}

INSTANTIATE_TEST_SUITE_P(Backends, ClockStep, ::testing::Values("memory", "store"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace delayq
