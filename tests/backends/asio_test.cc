// delayq/asio.h's async_reserve as Asio users expect it (the rules are in that header): run()
// waits for a pending wait, a destroyed context gets nothing posted and the job back, a stop
// request withdraws a wait and gives back a job it had taken, coroutines co_await it, use_future
// gives a future; and the move-only callables that reserve_async and consume take.
//
// Asio first, on purpose: Boost 1.74's <boost/asio.hpp> needs <utility> before it under C++20,
// which the delayq target provides (src/CMakeLists.txt); this file compiles only with that.
#include <boost/asio.hpp>

#include "delayq/asio.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <thread>

#include "delayq/engine.h"
#include "forwarding_queue.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

std::unique_ptr<Engine> open_engine() {
  return Engine::open({}).value();
}

template <class F>
bool wait_for(F done, Duration limit = 10s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// A pending wait is outstanding work: run() returns only once its handler ran, on the thread
// that runs the context. Seen to fail before the fix: run() returned at once, handler not run.
TEST(AsyncReserve, RunDoesNotReturnWhileAWaitIsPending) {
  auto q = open_engine();
  asio::io_context io;
  std::optional<Result<Delivery>> got;
  std::thread::id ran_on;
  async_reserve(*q, {"t"}, 10s, asio::bind_executor(io, [&](Result<Delivery> r) {
                  got = std::move(r);
                  ran_on = std::this_thread::get_id();
                }));
  std::thread pusher([&] {
    std::this_thread::sleep_for(100ms);
    (void)q->push({.topic = "t", .id = "a"});
  });
  io.run();
  pusher.join();
  ASSERT_TRUE(got.has_value()) << "run() returned while the wait was pending";
  ASSERT_TRUE(got->ok()) << got->status().to_string();
  EXPECT_EQ((*got)->id, "a");
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

// The context destroyed (never run) while a wait is pending: the wait is withdrawn, nothing is
// posted into the freed context, and the job stays ready for others with no attempt counted.
// Seen to fail before the fix: the wait took the job (reserved, attempt 1) and posted into the
// destroyed context.
TEST(AsyncReserve, DestroyingTheContextWithdrawsItsWaitsAndPostsNothing) {
  auto q = open_engine();
  auto io = std::make_unique<asio::io_context>();
  std::atomic<bool> called{false};
  async_reserve(*q, {"t"}, 10s,
                asio::bind_executor(*io, [&](Result<Delivery>) { called.store(true); }));
  io.reset();
  ASSERT_TRUE(q->push({.topic = "t", .id = "a"}).ok());
  std::this_thread::sleep_for(200ms);  // time for a wait that was not withdrawn to take it
  EXPECT_FALSE(called.load());
  Result<JobInfo> j = q->get("a");
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ(j->state, JobState::ready);
  EXPECT_EQ(j->attempts, 0u);
  EXPECT_TRUE(q->reserve("t", 1s).ok());
}

// A stop request withdraws a pending wait: the handler gets cancelled, and a job pushed later
// is there for the next consumer. Seen to fail before the fix (no way to cancel: it did not
// compile).
TEST(AsyncReserve, AStopRequestWithdrawsAPendingWait) {
  auto q = open_engine();
  asio::io_context io;
  std::stop_source stop;
  std::optional<Result<Delivery>> got;
  async_reserve(*q, {"t"}, 10s, stop.get_token(),
                asio::bind_executor(io, [&](Result<Delivery> r) { got = std::move(r); }));
  stop.request_stop();
  io.run();
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->is(Errc::cancelled)) << got->status().to_string();
  ASSERT_TRUE(q->push({.topic = "t", .id = "b"}).ok());
  Result<Delivery> next = q->reserve("t", 1s);
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_EQ(next->id, "b");
}

// The race no caller can close: the queue took a job for the wait, then the stop came. The job
// is given back with release() (no attempt counted) and the handler still gets cancelled.
class TakesThenStops final : public testing::ForwardingQueue {
 public:
  explicit TakesThenStops(std::stop_source& stop) : stop_(stop) {}
  using ForwardingQueue::reserve_async;
  void reserve_async(std::vector<std::string> topics, Duration,
                     std::function<void(Result<Delivery>)> done, std::stop_token) override {
    Result<Delivery> taken = reserve(topics, 1s);
    stop_.request_stop();
    done(std::move(taken));
  }

 private:
  std::stop_source& stop_;
};

TEST(AsyncReserve, AJobTakenForAWithdrawnWaitIsGivenBackUncounted) {
  std::stop_source stop;
  TakesThenStops q(stop);
  ASSERT_TRUE(q.push({.topic = "t", .id = "a"}).ok());
  asio::io_context io;
  std::optional<Result<Delivery>> got;
  async_reserve(q, {"t"}, 10s, stop.get_token(),
                asio::bind_executor(io, [&](Result<Delivery> r) { got = std::move(r); }));
  io.run();
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->is(Errc::cancelled)) << got->status().to_string();
  Result<JobInfo> j = q.get("a");
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ(j->state, JobState::ready);
  EXPECT_EQ(j->attempts, 0u);
}

// co_await in a coroutine (use_awaitable), the handler type whose header needs <utility> first.
TEST(AsyncReserve, ACoroutineCoAwaitsAJob) {
  auto q = open_engine();
  ASSERT_TRUE(q->push({.topic = "t", .id = "a", .delay = 50ms}).ok());
  asio::io_context io;
  std::string seen;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        std::vector<std::string> topics = {"t"};  // (g++ 12 miscompiles a braced list here)
        Result<Delivery> d = co_await async_reserve(*q, topics, 5s, asio::use_awaitable);
        seen = d ? d->id : d.status().to_string();
      },
      asio::detached);
  io.run();
  EXPECT_EQ(seen, "a");
}

// asio::use_future: its handler's executor has no execution context (it sets the promise
// inline), so the wait is kept in the system context's registry. Seen not to compile before the
// fix (context_of queried the promise's executor for its context).
TEST(AsyncReserve, UseFutureGivesAFuture) {
  auto q = open_engine();
  ASSERT_TRUE(q->push({.topic = "t", .id = "a", .delay = 50ms}).ok());
  std::future<Result<Delivery>> f = async_reserve(*q, {"t"}, 5s, asio::use_future);
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  Result<Delivery> d = f.get();
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, "a");
  EXPECT_TRUE(q->ack(d->token).ok());
  // Nothing comes: the future holds the timeout.
  std::future<Result<Delivery>> none = async_reserve(*q, {"t"}, 50ms, asio::use_future);
  ASSERT_EQ(none.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(none.get().is(Errc::timeout));
}

// reserve_async and consume take callables that cannot be copied (before: std::function refused
// them at compile time). A shared move-only consume handler runs on every thread.
TEST(MoveOnlyCallables, ReserveAsyncAndConsumeTakeThem) {
  auto q = open_engine();
  std::promise<std::string> got;
  auto owned = std::make_unique<std::string>("kept");
  q->reserve_async({"r"}, 5s, [owned = std::move(owned), &got](Result<Delivery> r) {
    got.set_value(r ? r->id + "/" + *owned : r.status().to_string());
  });
  ASSERT_TRUE(q->push({.topic = "r", .id = "a"}).ok());
  auto f = got.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get(), "a/kept");

  auto counter = std::make_unique<std::atomic<int>>(0);
  std::atomic<int>* seen = counter.get();
  Consumer c = q->consume(
      "m",
      [counter = std::move(counter)](const Delivery&) {
        counter->fetch_add(1);
        return HandlerResult::ack();
      },
      2);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(q->push({.topic = "m"}).ok());
  EXPECT_TRUE(wait_for([&] { return c.handled() == 5; }));
  EXPECT_EQ(seen->load(), 5);  // before stop(): the handler (and its counter) go with the threads
  c.stop();
}

}  // namespace
}  // namespace delayq
