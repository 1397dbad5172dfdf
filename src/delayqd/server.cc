// The Beast/Asio server of delayqd (see server.h): listens, accepts connections and hands each
// to serve_connection (session.h), runs the threads, and drains on SIGTERM/SIGINT.
#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include "delayqd/server.h"

#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <cerrno>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "delayqd/log.h"
#include "delayqd/session.h"

namespace delayq::http {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

class Listener {
 public:
  // The acceptor lives on a strand: the signal handler closes it from any pool thread.
  Listener(asio::io_context& ioc, Connections& shared)
      : ioc_(ioc),
        acceptor_(asio::make_strand(ioc)),
        retry_(acceptor_.get_executor()),
        shared_(shared) {}

  bool open(const tcp::endpoint& ep, std::string& error) {
    beast::error_code ec;
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      error = "cannot listen on " + ep.address().to_string() + ":" + std::to_string(ep.port()) +
              ": " + ec.message();
      return false;
    }
    return true;
  }
  tcp::endpoint local() const { return acceptor_.local_endpoint(); }

  void accept() {
    acceptor_.async_accept(
        asio::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
          if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
          if (!ec) {
            starved_ = false;
            beast::error_code ignored;
            const asio::ip::address peer = socket.remote_endpoint(ignored).address();
            std::string refusal = shared_.admit(peer);
            serve_connection(std::move(socket), shared_, peer, std::move(refusal));
          } else if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
                     ec == asio::error::no_memory || ec.value() == ENFILE) {
            // Out of file descriptors (or memory): try again a little later, on a timer, so that
            // this thread goes on serving the open connections meanwhile (and their closing frees
            // descriptors).
            if (!starved_)
              log(LogLevel::error,
                  "cannot accept connections: {}; retrying every 50 ms (raise LimitNOFILE / "
                  "ulimit -n?)",
                  ec.message());
            starved_ = true;
            retry_.expires_after(std::chrono::milliseconds(50));
            return retry_.async_wait([this](beast::error_code e) {
              if (!e && acceptor_.is_open()) accept();
            });
          }
          accept();
        });
  }

  void stop() {
    asio::post(acceptor_.get_executor(), [this] {
      beast::error_code ec;
      acceptor_.close(ec);
      retry_.cancel();
    });
  }

 private:
  asio::io_context& ioc_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_;  // on the acceptor's strand
  bool starved_ = false;      // the last accept ran out of descriptors (logged once)
  Connections& shared_;
};

// Runs the io_context on this thread until it stops. An exception thrown by a handler (memory
// running out inside Beast, a bug) ends only the connection it was serving, whose handler is
// unwound with it; the thread logs it and goes on serving the others.
void run_guarded(asio::io_context& ioc) {
  for (;;) {
    try {
      ioc.run();
      return;
    } catch (const std::exception& e) {
      log(LogLevel::error, "error while serving a connection (it was closed): {}", e.what());
    } catch (...) {
      log(LogLevel::error, "unknown error while serving a connection (it was closed)");
    }
  }
}

}  // namespace

void ServerStop::request() {
  std::lock_guard lock(mu_);
  requested_ = true;
  if (hook_) hook_();
}

bool run_server_hook(ServerStop& stop, std::function<void()> hook) {
  std::lock_guard lock(stop.mu_);
  stop.hook_ = std::move(hook);
  return stop.requested_;
}

bool run_server(Api& api, Queue& queue, const ServerOptions& options,
                const std::function<void(const std::string&)>& on_listening, std::string& error,
                const std::function<void()>& on_draining) {
  beast::error_code ec;
  const auto address = asio::ip::make_address(options.host, ec);
  if (ec) {
    error = "bad listen address '" + options.host + "': " + ec.message();
    return false;
  }
  const size_t threads = std::max<size_t>(1, options.threads);
  asio::io_context ioc(static_cast<int>(threads));
  // SIGINT/SIGTERM are caught from here on (queued until the drain's handler below is waiting):
  // before the "listening" line, so a signal sent as soon as it is read drains cleanly rather
  // than killing the process.
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  Connections shared{api, options, {}, {}, {}, {}};
  Listener listener(ioc, shared);
  if (!listener.open(tcp::endpoint(address, options.port), error)) return false;
  const tcp::endpoint local = listener.local();
  const std::string host = local.address().is_v6() ? "[" + local.address().to_string() + "]"
                                                   : local.address().to_string();
  on_listening(host + ":" + std::to_string(local.port()));
  listener.accept();

  // Drain, in the order that loses nothing: no new connections; new requests refused; requests
  // in flight finish; then the queue closes, which answers the waiting pops (no job); the
  // connections end once their last answer is written, and then run() returns.
  asio::steady_timer poll(ioc);
  std::chrono::steady_clock::time_point deadline;
  std::function<void()> wait_in_flight = [&] {
    if (api.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
      poll.expires_after(std::chrono::milliseconds(10));
      poll.async_wait([&](beast::error_code) { wait_in_flight(); });
      return;
    }
    if (api.in_flight() > 0)
      log(LogLevel::warn, "drain timeout: closing the queue with {} requests in flight",
          api.in_flight());
    queue.close();
    drain_connections(shared);  // idle keep-alive connections left since the drain began
  };
  // The drain begins once, on one strand, whether a signal or options.stop asked for it.
  asio::strand<asio::io_context::executor_type> stop_strand(ioc.get_executor());
  bool draining = false;  // on stop_strand only
  const auto drain = [&](const std::string& why) {
    if (draining) return;
    draining = true;
    log(LogLevel::info, "{}: draining", why);
    if (on_draining) on_draining();
    listener.stop();
    signals.cancel();
    api.begin_drain();
    drain_connections(shared);
    deadline = std::chrono::steady_clock::now() + options.drain_timeout;
    wait_in_flight();
  };
  signals.async_wait([&](beast::error_code e, int signo) {
    if (!e) asio::post(stop_strand, [&, signo] { drain("signal " + std::to_string(signo)); });
  });
  if (options.stop != nullptr) {
    const auto ask = [&] { asio::post(stop_strand, [&] { drain("stop requested"); }); };
    if (run_server_hook(*options.stop, ask)) ask();
  }

  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i) pool.emplace_back([&] { run_guarded(ioc); });
  run_guarded(ioc);
  for (auto& t : pool) t.join();
  if (options.stop != nullptr) run_server_hook(*options.stop, {});
  return true;
}

}  // namespace delayq::http
