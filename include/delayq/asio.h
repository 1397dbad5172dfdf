// async_reserve: Queue::reserve_async() for any Boost.Asio completion token.
//
// Completion signature: void(delayq::Result<delayq::Delivery>). A Result rather than an
// error_code, so the message that explains a failure reaches the caller:
//
//   async_reserve(q, {"orders"}, 5s, [](Result<Delivery> d) { ... });           // callback
//   std::future<Result<Delivery>> f = async_reserve(q, {"orders"}, 5s, asio::use_future);
//   Result<Delivery> d = co_await async_reserve(q, {"orders"}, 5s, asio::use_awaitable);
//
// The handler runs on its associated executor (the coroutine's, a strand, ...), or on the system
// executor when it has none. Include this header only where you need it: it pulls in Asio.
#pragma once

#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <memory>

#include "delayq/queue.h"

namespace delayq {

template <class CompletionToken>
auto async_reserve(Queue& queue, std::vector<std::string> topics, Duration timeout,
                   CompletionToken&& token) {
  auto initiation = [&queue](auto handler, std::vector<std::string> topics, Duration timeout) {
    auto executor = boost::asio::get_associated_executor(handler);
    // std::function needs a copyable callable; completion handlers may be move-only.
    auto shared = std::make_shared<decltype(handler)>(std::move(handler));
    queue.reserve_async(std::move(topics), timeout,
                        [shared, executor](Result<Delivery> r) mutable {
                          boost::asio::post(executor, [shared, r = std::move(r)]() mutable {
                            (*shared)(std::move(r));
                          });
                        });
  };
  return boost::asio::async_initiate<CompletionToken, void(Result<Delivery>)>(
      std::move(initiation), token, std::move(topics), timeout);
}

}  // namespace delayq
