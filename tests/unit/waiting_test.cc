// The waiting component (src/common/waiting.h) on its own, driven by a fake backend: a counter
// of ready jobs and a "look again" instant. Nothing here sleeps to let something happen: every
// wait that must end is bounded by a generous timeout and checked by what it returned.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "common/waiting.h"

namespace {

using namespace delayq;
using namespace std::chrono_literals;
using Steady = Waiting::Steady;

// Jobs the backend holds, taken one per successful attempt.
struct FakeBackend {
  std::atomic<int> jobs{0};
  std::atomic<int> attempts{0};
  // Where a waiter sleeping on nothing else should look again (next_look).
  std::atomic<int64_t> look_at_ns{INT64_MAX};

  Waiting::Attempt attempt() {
    attempts.fetch_add(1);
    for (int n = jobs.load(); n > 0;)
      if (jobs.compare_exchange_weak(n, n - 1)) return {Delivery{.id = "job-" + std::to_string(n)}};
    return {Status(Errc::timeout, "nothing"), true};
  }
  Waiting::Try try_fn() {
    return [this](Steady::time_point) { return attempt(); };
  }
  Steady::time_point next_look() const {
    const int64_t ns = look_at_ns.load();
    return ns == INT64_MAX ? Steady::time_point::max() : Steady::time_point(Steady::duration(ns));
  }
};

// A result delivered to a wait_async callback, and the thread it ran on.
struct AsyncResult {
  std::promise<std::pair<Result<Delivery>, std::thread::id>> promise;
  Waiting::Done done() {
    return [this](Result<Delivery> r) {
      promise.set_value({std::move(r), std::this_thread::get_id()});
    };
  }
  std::pair<Result<Delivery>, std::thread::id> get() {
    auto f = promise.get_future();
    EXPECT_EQ(f.wait_for(60s), std::future_status::ready) << "done never ran";
    return f.get();
  }
};

TEST(Waiting, ABlockingWaitTakesAJobMadeReadyWhileItSleeps) {
  FakeBackend b;
  Waiting w;
  auto waiter = std::async(std::launch::async, [&] { return w.wait(b.try_fn(), 60s); });
  // The waiter may or may not have made its first attempt yet: either way it must get the job.
  b.jobs.store(1);
  w.ready();
  Result<Delivery> r = waiter.get();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->id, "job-1");
}

TEST(Waiting, AWaitWhoseTimeRunsOutEndsWithTheLastAttempt) {
  FakeBackend b;
  Waiting w;
  Result<Delivery> r = w.wait(b.try_fn(), 0s);
  EXPECT_TRUE(r.is(Errc::timeout));
  EXPECT_EQ(r.status().message(), "nothing");
  EXPECT_GE(b.attempts.load(), 1);
}

TEST(Waiting, ALookAgainInstantIsKeptWithoutBeingTold) {
  // The backend has nothing for two tries and asks to be asked again at once; the third finds a
  // job. Nobody calls ready().
  Waiting w;
  int tries = 0;
  Result<Delivery> r = w.wait(
      [&](Steady::time_point) -> Waiting::Attempt {
        if (++tries < 3) return {Status(Errc::timeout, "not yet"), true, Steady::now()};
        return {Delivery{.id = "third"}};
      },
      60s);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(tries, 3);
}

TEST(Waiting, SoonerMakesSleepersAskNextLookAgain) {
  FakeBackend b;
  Waiting w([&b] { return b.next_look(); });
  auto waiter = std::async(std::launch::async, [&] { return w.wait(b.try_fn(), 60s); });
  // A job the backend will only find on a try, and a deadline that says "now": no ready().
  b.jobs.store(1);
  b.look_at_ns.store(Steady::now().time_since_epoch().count());
  w.sooner();
  Result<Delivery> r = waiter.get();
  EXPECT_TRUE(r.ok()) << r.status().to_string();
}

TEST(Waiting, AStopFlagEndsABlockingWait) {
  FakeBackend b;
  Waiting w;
  std::atomic<bool> stop{false};
  auto waiter = std::async(std::launch::async, [&] { return w.wait(b.try_fn(), 60s, &stop); });
  stop.store(true);
  w.interrupt();
  Result<Delivery> r = waiter.get();
  EXPECT_TRUE(r.is(Errc::closed));
  EXPECT_EQ(r.status().message(), "the consumer was stopped");
}

TEST(Waiting, CloseEndsEveryWaitAndAFailureOutranksAPlainClose) {
  FakeBackend b;
  Waiting w;
  auto waiter = std::async(std::launch::async, [&] { return w.wait(b.try_fn(), 60s); });
  w.close(Waiting::closed_error());
  Result<Delivery> r = waiter.get();
  EXPECT_TRUE(r.is(Errc::closed)) << r.status().to_string();
  w.close(Status(Errc::io_error, "disk"));
  EXPECT_TRUE(w.closed_status().is(Errc::io_error)) << "a failure says more than 'closed'";
  w.close(Waiting::closed_error());
  EXPECT_TRUE(w.closed_status().is(Errc::io_error)) << "and is not replaced by it";
  EXPECT_TRUE(w.wait(b.try_fn(), 60s).is(Errc::io_error)) << "later waits fail at once";
}

TEST(Waiting, AnAsyncWaitCompletesOnTheComponentsThread) {
  FakeBackend b;
  Waiting w;
  AsyncResult got;
  w.wait_async(b.try_fn(), 60s, got.done());
  b.jobs.store(1);
  w.ready();
  auto [r, thread] = got.get();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_NE(thread, std::this_thread::get_id());
}

TEST(Waiting, AnAsyncWaitTimesOutWithTheLastAttempt) {
  FakeBackend b;
  Waiting w;
  AsyncResult got;
  w.wait_async(b.try_fn(), 0s, got.done());
  auto [r, thread] = got.get();
  EXPECT_TRUE(r.is(Errc::timeout));
  EXPECT_EQ(r.status().message(), "nothing");
}

TEST(Waiting, AWithdrawnAsyncWaitIsCancelledAndTakesNothingAfter) {
  FakeBackend b;
  Waiting w;
  std::stop_source stop;
  AsyncResult got;
  w.wait_async(b.try_fn(), 60s, got.done(), stop.get_token());
  stop.request_stop();
  auto [r, thread] = got.get();
  EXPECT_TRUE(r.is(Errc::cancelled)) << r.status().to_string();
  // A job that comes later stays with the backend.
  b.jobs.store(1);
  w.ready();
  EXPECT_TRUE(w.wait(b.try_fn(), 0s).ok());
}

TEST(Waiting, AnAsyncWaitOnAClosedComponentIsRefusedOnTheCallersThread) {
  FakeBackend b;
  Waiting w;
  w.close(Waiting::closed_error());
  AsyncResult got;
  w.wait_async(b.try_fn(), 60s, got.done());
  auto [r, thread] = got.get();
  EXPECT_TRUE(r.is(Errc::closed));
  EXPECT_EQ(thread, std::this_thread::get_id());
  EXPECT_EQ(b.attempts.load(), 0);
}

TEST(Waiting, CloseCompletesPendingAsyncWaitsOnceAndACallbackMayClose) {
  FakeBackend b;
  Waiting w;
  constexpr int kWaits = 20;
  std::atomic<int> closed{0}, other{0};
  for (int i = 0; i < kWaits; ++i)
    w.wait_async(b.try_fn(), 60s, [&](Result<Delivery> r) {
      (r.is(Errc::closed) ? closed : other).fetch_add(1);
      w.close(Waiting::closed_error());  // on the component's own thread: must not hang
    });
  b.jobs.store(1);
  w.ready();  // one of them gets the job, closes; the others end with `closed`
  AsyncResult after;
  w.wait_async(b.try_fn(), 60s, after.done());
  auto [r, thread] = after.get();
  EXPECT_TRUE(r.is(Errc::closed));
  w.join();
  EXPECT_EQ(closed.load() + other.load(), kWaits) << "every callback ran exactly once";
  EXPECT_LE(other.load(), 1);
}

}  // namespace
