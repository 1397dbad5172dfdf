// async_reserve: Queue::reserve_async() for any Boost.Asio completion token.
//
// Completion signature: void(delayq::Result<delayq::Delivery>). A Result rather than an
// error_code, so the message that explains a failure reaches the caller:
//
//   async_reserve(q, {"orders"}, 5s, [](Result<Delivery> d) { ... });           // callback
//   std::future<Result<Delivery>> f = async_reserve(q, {"orders"}, 5s, asio::use_future);
//   Result<Delivery> d = co_await async_reserve(q, {"orders"}, 5s, asio::use_awaitable);
//   async_reserve(q, {"orders"}, 5s, stop_source.get_token(), handler);          // cancellable
//
// As Asio users expect of an asynchronous operation:
//  - The handler runs on its associated executor (the coroutine's, a strand, ...), or on the
//    system executor when it has none; never inside the call. It may be move-only.
//  - A pending wait is outstanding work on that executor: io_context::run() does not return
//    while one is pending.
//  - Cancelling: with a std::stop_token, a stop request withdraws the wait and the handler gets
//    Errc::cancelled. A job the queue had already taken for it (a race no caller can close) is
//    given back with release(), so no attempt is counted, and the handler still gets cancelled.
//  - The execution context may be destroyed while a wait is pending (an io_context that is not
//    run again): the wait is withdrawn, nothing is posted into the destroyed context, a job
//    already taken is given back with release(), and the handler is destroyed without being
//    called, as Asio does with the handlers pending in a context that goes away.
//  - The queue must outlive the waits it serves; closing it completes them with Errc::closed.
//
// Include this header only where you need it: it pulls in Asio. Include order does not matter:
// Boost 1.74's <boost/asio/awaitable.hpp> (pulled in by <boost/asio.hpp>) needs <utility>
// included before it under C++20 with g++ 12, and the delayq::delayq CMake target adds
// `-include utility` to the C++ compilations of everything that links it for that reason.
#pragma once

#include <utility>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/system_executor.hpp>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "delayq/queue.h"

namespace delayq {
namespace detail {

// One pending async_reserve: what withdraws it, the work it holds on its executor, its handler.
struct AsioWait {
  virtual ~AsioWait() = default;
  // Lets go of the executor's outstanding work. Under AsioWaits::Shared::mu.
  virtual void drop_work() = 0;
  // Destroys the handler uncalled (the context shut down). Once `alive` is false, so that the
  // queue's callback no longer touches it.
  virtual void drop_handler() = 0;
  std::stop_source stop;  // the caller's stop_token, or the context's end
  std::optional<std::stop_callback<std::function<void()>>> caller_stop;
  std::list<std::shared_ptr<AsioWait>>::iterator where;  // in Shared::waits
};

template <class Executor, class Handler>
struct AsioWaitOn final : AsioWait {
  AsioWaitOn(const Executor& ex, Handler&& h)
      : work(boost::asio::make_work_guard(ex)), handler(std::move(h)) {}
  void drop_work() override { work.reset(); }
  void drop_handler() override { handler.reset(); }
  boost::asio::executor_work_guard<Executor> work;
  std::optional<Handler> handler;
};

// The pending async_reserve waits of one execution context, as an Asio service of it: when the
// context shuts down (its destruction), the waits are withdrawn and nothing is posted into it.
class AsioWaits final : public boost::asio::execution_context::service {
 public:
  using key_type = AsioWaits;
  static inline boost::asio::execution_context::id id;

  struct Shared {
    std::mutex mu;
    bool alive = true;                            // under mu: the context still runs
    std::list<std::shared_ptr<AsioWait>> waits;  // under mu: pending, oldest first
  };

  explicit AsioWaits(boost::asio::execution_context& ctx)
      : boost::asio::execution_context::service(ctx), shared_(std::make_shared<Shared>()) {}
  const std::shared_ptr<Shared>& shared() const { return shared_; }

 private:
  void shutdown() override {
    std::list<std::shared_ptr<AsioWait>> pending;
    {
      std::lock_guard lock(shared_->mu);
      shared_->alive = false;
      for (const auto& w : shared_->waits) w->drop_work();
      pending.swap(shared_->waits);
    }
    // Outside the lock: a stop request runs the queue's withdrawal at once. The handlers go as
    // Asio's own pending handlers go when their context shuts down: destroyed, not called.
    for (const auto& w : pending) {
      w->stop.request_stop();
      w->drop_handler();
    }
  }

  std::shared_ptr<Shared> shared_;
};

// The execution context behind an executor (standard or legacy). An executor that has none
// (use_future's, which runs the handler inline to set the promise) keeps its waits in the system
// context's, which lives as long as the program.
template <class Executor>
boost::asio::execution_context& context_of(const Executor& ex) {
  if constexpr (boost::asio::can_query<const Executor&, boost::asio::execution::context_t>::value)
    return boost::asio::query(ex, boost::asio::execution::context);
  else if constexpr (requires { ex.context(); })
    return ex.context();
  else
    return boost::asio::query(boost::asio::system_executor(), boost::asio::execution::context);
}

}  // namespace detail

template <class CompletionToken>
auto async_reserve(Queue& queue, std::vector<std::string> topics, Duration timeout,
                   std::stop_token stop, CompletionToken&& token) {
  auto initiation = [&queue](auto handler, std::vector<std::string> topics, Duration timeout,
                             std::stop_token stop) {
    auto executor = boost::asio::get_associated_executor(handler);
    using Wait = detail::AsioWaitOn<decltype(executor), decltype(handler)>;
    auto& waits = boost::asio::use_service<detail::AsioWaits>(detail::context_of(executor));
    std::shared_ptr<detail::AsioWaits::Shared> shared = waits.shared();
    auto wait = std::make_shared<Wait>(executor, std::move(handler));
    {
      std::lock_guard lock(shared->mu);
      if (shared->alive) {
        shared->waits.push_back(wait);
        wait->where = std::prev(shared->waits.end());
      } else {
        wait->drop_work();  // a context shutting down: the wait is withdrawn at once
        wait->stop.request_stop();
      }
    }
    if (stop.stop_possible())
      wait->caller_stop.emplace(stop, std::function<void()>([w = wait.get()] {
                                  w->stop.request_stop();
                                }));
    const std::stop_token withdraw = wait->stop.get_token();
    queue.reserve_async(
        std::move(topics), timeout,
        [&queue, shared, wait](Result<Delivery> r) {
          std::unique_lock lock(shared->mu);
          if (!shared->alive || !wait->handler) {
            // The context is gone: nobody to hand a job to.
            lock.unlock();
            if (r) (void)queue.release(r->token);
            return;
          }
          shared->waits.erase(wait->where);
          if (r && wait->stop.stop_requested()) {
            (void)queue.release(r->token);
            r = Status(Errc::cancelled,
                       "the reserve was withdrawn (stop requested); the job it had taken was "
                       "given back");
          }
          // Posted under the lock: the context cannot shut down meanwhile.
          boost::asio::post(wait->work.get_executor(),
                            [h = std::move(*wait->handler), r = std::move(r)]() mutable {
                              std::move(h)(std::move(r));
                            });
          wait->handler.reset();
          wait->drop_work();
        },
        withdraw);
  };
  return boost::asio::async_initiate<CompletionToken, void(Result<Delivery>)>(
      std::move(initiation), token, std::move(topics), timeout, std::move(stop));
}

template <class CompletionToken>
auto async_reserve(Queue& queue, std::vector<std::string> topics, Duration timeout,
                   CompletionToken&& token) {
  return async_reserve(queue, std::move(topics), timeout, std::stop_token(),
                       std::forward<CompletionToken>(token));
}

}  // namespace delayq
