// The Beast/Asio server of delayqd: accepts connections, reads HTTP/1.1 requests (keep-alive),
// hands each to the Api, writes its answer, and drains on SIGTERM/SIGINT (see server.h).
#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include "delayqd/server.h"

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace delayq::http {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

class Session;

// What the sessions share: the Api, the limits, and the registry that the drain walks.
struct Shared {
  Api& api;
  const ServerOptions& options;
  std::mutex mu;
  std::map<Session*, std::weak_ptr<Session>> sessions;
  std::atomic<size_t> count{0};
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Shared& shared, bool reject)
      : stream_(std::move(socket)), shared_(shared), reject_(reject) {}

  ~Session() {
    shared_.api.connection_closed();
    --shared_.count;
    std::lock_guard lock(shared_.mu);
    shared_.sessions.erase(this);
  }

  void start() {
    shared_.api.connection_opened();
    {
      std::lock_guard lock(shared_.mu);
      shared_.sessions.emplace(this, weak_from_this());
    }
    if (reject_) {
      // Over the connection limit: answer at once and close, so the client learns why.
      version_ = 11;
      return write(shared_.api.error(
          503, "overloaded",
          "too many connections (" + std::to_string(shared_.options.max_connections) +
              "); retry later"));
    }
    read();
  }

  // Drain: a connection waiting for a next request that has not begun is closed now; one in
  // the middle of a request finishes it (its answer says Connection: close).
  void drain() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->reading_ && self->buffer_.size() == 0 &&
          (!self->parser_ || !self->parser_->got_some())) {
        beast::error_code ec;
        self->stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
        self->stream_.cancel();
      }
    });
  }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(shared_.options.max_body_bytes);
    parser_->header_limit(16 * 1024);
    reading_ = true;
    stream_.expires_after(shared_.options.idle_timeout);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             beast::bind_front_handler(&Session::on_header, shared_from_this()));
  }

  void on_header(beast::error_code ec, size_t) {
    if (ec) return on_error(ec);
    version_ = parser_->get().version();
    // curl and others wait for "100 Continue" before sending a body announced this way.
    const auto expect = parser_->get()[bhttp::field::expect];
    if (beast::iequals(expect, "100-continue")) {
      auto cont = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_,
                                                                       version_);
      return bhttp::async_write(
          stream_, *cont,
          [self = shared_from_this(), cont](beast::error_code ec, size_t) {
            if (ec) return self->close();
            self->read_body();
          });
    }
    read_body();
  }

  void read_body() {
    bhttp::async_read(stream_, buffer_, *parser_,
                      beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  void on_error(beast::error_code ec) {
    reading_ = false;
    if (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
        ec == beast::error::timeout || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || !parser_ || !parser_->got_some())
      return close();
    if (ec == bhttp::error::body_limit)
      return write(shared_.api.error(
          413, "too_large",
          "the request body is larger than " + std::to_string(shared_.options.max_body_bytes) +
              " bytes"));
    if (ec == bhttp::error::header_limit)
      return write(shared_.api.error(431, "too_large", "the request headers are too large"));
    // Anything else is malformed HTTP: say so, then close (the stream is out of step).
    return write(shared_.api.error(400, "bad_http", "malformed HTTP request: " + ec.message()));
  }

  void on_read(beast::error_code ec, size_t) {
    if (ec) return on_error(ec);
    reading_ = false;
    stream_.expires_never();  // a pop may wait minutes; its length is bounded by the Api
    auto req = parser_->release();
    keep_alive_ = req.keep_alive();
    Request r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    r.authorization = std::string(req[bhttp::field::authorization]);
    r.body = std::move(req.body());
    parser_.reset();
    // The answer may come from another thread (a pop completed by the queue): get back on this
    // connection's strand before touching the stream.
    shared_.api.handle(std::move(r), [self = shared_from_this()](Response response) {
      asio::post(self->stream_.get_executor(),
                 [self, response = std::move(response)]() mutable {
                   self->write(std::move(response));
                 });
    });
  }

  void write(Response r) {
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(
        static_cast<bhttp::status>(r.status), version_);
    res->set(bhttp::field::server, "delayqd");
    res->set(bhttp::field::content_type, r.content_type);
    if (!r.allow.empty()) res->set(bhttp::field::allow, r.allow);
    if (r.status == 401) res->set(bhttp::field::www_authenticate, "Bearer");
    const bool keep = keep_alive_ && !r.close && !reject_;
    res->keep_alive(keep);
    res->body() = std::move(r.body);
    res->prepare_payload();
    stream_.expires_after(shared_.options.idle_timeout);
    bhttp::async_write(stream_, *res,
                       [self = shared_from_this(), res, keep](beast::error_code ec, size_t) {
                         if (ec || !keep) return self->close();
                         self->read();
                       });
  }

  void close() {
    reading_ = false;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  Shared& shared_;
  const bool reject_;
  bool reading_ = false;
  bool keep_alive_ = false;
  unsigned version_ = 11;
};

class Listener {
 public:
  // The acceptor lives on a strand: the signal handler closes it from any pool thread.
  Listener(asio::io_context& ioc, Shared& shared)
      : ioc_(ioc), acceptor_(asio::make_strand(ioc)), shared_(shared) {}

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
    acceptor_.async_accept(asio::make_strand(ioc_), [this](beast::error_code ec,
                                                            tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
      if (!ec) {
        const bool reject = ++shared_.count > shared_.options.max_connections;
        std::make_shared<Session>(std::move(socket), shared_, reject)->start();
      } else if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space) {
        // Out of file descriptors: pause a little rather than spin on the error.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      accept();
    });
  }

  void stop() {
    asio::post(acceptor_.get_executor(), [this] {
      beast::error_code ec;
      acceptor_.close(ec);
    });
  }

 private:
  asio::io_context& ioc_;
  tcp::acceptor acceptor_;
  Shared& shared_;
};

}  // namespace

bool run_server(Api& api, Queue& queue, const ServerOptions& options,
                const std::function<void(const std::string&)>& on_listening, std::string& error) {
  beast::error_code ec;
  const auto address = asio::ip::make_address(options.host, ec);
  if (ec) {
    error = "bad listen address '" + options.host + "': " + ec.message();
    return false;
  }
  const size_t threads = std::max<size_t>(1, options.threads);
  asio::io_context ioc(static_cast<int>(threads));
  Shared shared{api, options, {}, {}, {}};
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
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  asio::steady_timer poll(ioc);
  std::chrono::steady_clock::time_point deadline;
  std::function<void()> wait_in_flight = [&] {
    if (api.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
      poll.expires_after(std::chrono::milliseconds(10));
      poll.async_wait([&](beast::error_code) { wait_in_flight(); });
      return;
    }
    if (api.in_flight() > 0)
      std::cerr << "delayqd: drain timeout: closing the queue with " << api.in_flight()
                << " requests in flight\n";
    queue.close();
    std::vector<std::shared_ptr<Session>> live;
    {
      std::lock_guard lock(shared.mu);
      for (auto& [ptr, weak] : shared.sessions)
        if (auto s = weak.lock()) live.push_back(std::move(s));
    }
    for (auto& s : live) s->drain();  // idle keep-alive connections left since step 2
  };
  signals.async_wait([&](beast::error_code e, int signo) {
    if (e) return;
    std::cerr << "delayqd: signal " << signo << ": draining\n";
    listener.stop();
    api.begin_drain();
    std::vector<std::shared_ptr<Session>> live;
    {
      std::lock_guard lock(shared.mu);
      for (auto& [ptr, weak] : shared.sessions)
        if (auto s = weak.lock()) live.push_back(std::move(s));
    }
    for (auto& s : live) s->drain();
    deadline = std::chrono::steady_clock::now() + options.drain_timeout;
    wait_in_flight();
  });

  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i) pool.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : pool) t.join();
  return true;
}

}  // namespace delayq::http
