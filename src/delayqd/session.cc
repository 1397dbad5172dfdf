// One delayqd connection's life (session.h): reads HTTP/1.1 requests (keep-alive), hands each
// to the Api, writes its answer.
//
// What a client can make the server hold before it has proven anything is bounded: the route,
// method and token are checked once, when the headers arrive (Api::screen), before a body is
// read or "100 Continue" sent; the headers and the body each have a total deadline; connections are
// capped in all and per remote address (Connections::admit). While a request is being answered
// the socket is watched, so that a client that leaves is noticed: its waiting pop is withdrawn,
// and an answer that cannot be written gives back what it handed out (Response::undelivered).
// One connection's life is one state machine (Session), kept whole in this file so that its
// invariants (watching_, gone_) are read in one place.
#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include "delayqd/session.h"

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <charconv>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include "delayqd/log.h"

namespace delayq::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

// What a look at a socket without reading it finds.
enum class Peer { quiet, sent_more, gone };

Peer look(tcp::socket& s) {
  char c;
  const ssize_t n = ::recv(s.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return Peer::sent_more;
  if (n == 0) return Peer::gone;  // the client closed (or half-closed) its side
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? Peer::quiet : Peer::gone;
}

// Why a request's head cannot be served whatever its route, as the answer to send, or nullopt.
// RFC 9112: an HTTP/1.1 request needs one Host, and no request may have two (3.2); a transfer
// coding the server does not understand is 501 (6.1): delayqd understands `chunked` alone.
// Two Authorization headers are refused rather than one of them believed.
std::optional<Response> head_problem(Api& api,
                                     const bhttp::request_parser<bhttp::string_body>& parser) {
  const auto& req = parser.get();
  const size_t hosts = req.count(bhttp::field::host);
  if (hosts > 1 || (hosts == 0 && req.version() >= 11))
    return api.error(400, wire::Refusal::bad_http,
                     hosts > 1 ? "the request has " + std::to_string(hosts) +
                                     " Host headers; send exactly one (RFC 9112, 3.2)"
                               : std::string("an HTTP/1.1 request needs a Host header (RFC 9112, 3.2)"));
  const size_t codings = req.count(bhttp::field::transfer_encoding);
  if (codings > 0) {
    beast::string_view coding = req[bhttp::field::transfer_encoding];
    while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) coding.remove_prefix(1);
    while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) coding.remove_suffix(1);
    if (codings > 1 || !beast::iequals(coding, "chunked"))
      return api.error(501, wire::Refusal::not_supported,
                       "delayqd understands no Transfer-Encoding but \"chunked\" alone; send the "
                       "body plain or chunked, uncompressed");
  }
  if (const size_t auths = req.count(bhttp::field::authorization); auths > 1)
    return api.error(400, wire::Refusal::bad_http,
                     "the request has " + std::to_string(auths) +
                         " Authorization headers; send exactly one");
  return std::nullopt;
}

}  // namespace

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Connections& shared, asio::ip::address peer, std::string refusal)
      : stream_(std::move(socket)), shared_(shared), peer_(peer), refusal_(std::move(refusal)) {}

  ~Session() {
    shared_.api.connection_closed();
    shared_.leave(peer_);
    std::lock_guard lock(shared_.mu);
    shared_.sessions.erase(this);
  }

  void start() {
    shared_.api.connection_opened();
    {
      std::lock_guard lock(shared_.mu);
      shared_.sessions.emplace(this, weak_from_this());
    }
    // Over a connection limit: answer at once and close, so the client learns why.
    if (!refusal_.empty())
      return write(shared_.api.error(503, wire::Refusal::overloaded, refusal_));
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
  // The most a request's head may hold (docs/http-api.md).
  static constexpr size_t kHeaderLimit = 16 * 1024;
  // Bytes of a next request kept while the current one is answered (pipelining); beyond this
  // the client is plainly there, and the watch stops.
  static constexpr size_t kPipelined = 64 * 1024;

  // Idle: the next request's first byte must come within idle_timeout.
  void read() {
    head_ = false;
    screening_.reset();
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    // The body's size is checked once the headers have been screened (on_header).
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    reading_ = true;
    if (buffer_.size() > 0) return read_header();  // it has begun already (pipelined)
    stream_.expires_after(shared_.options.idle_timeout);
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->buffer_.commit(n);
                              if (ec) return self->on_error(ec);
                              self->read_header();
                            });
  }

  // From the first byte, the headers have header_timeout in all, however they trickle in.
  void read_header() {
    stream_.expires_after(shared_.options.header_timeout);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             beast::bind_front_handler(&Session::on_header, shared_from_this()));
  }

  // `head_bytes`: the request line, the header lines and the blank line after them.
  void on_header(beast::error_code ec, size_t head_bytes) {
    if (ec) return on_error(ec);
    version_ = parser_->get().version();
    head_ = parser_->get().method() == bhttp::verb::head;
    // The parser's own limit counts the request line and the header lines apart; the
    // documented one is for the whole head.
    if (head_bytes > kHeaderLimit) return write(headers_too_large());
    if (std::optional<Response> refused = head_problem(shared_.api, *parser_))
      return write(std::move(*refused));
    const auto& req = parser_->get();
    const auto view = [](beast::string_view v) { return std::string_view(v.data(), v.size()); };
    // The one screening of the request (route, token, method), carried with it to the Api.
    screening_ = shared_.api.screen(view(req.method_string()), view(req.target()),
                                    view(req[bhttp::field::authorization]));
    if (parser_->is_done()) return on_read({}, 0);  // no body: the request is all here
    // Refused on its headers: answered before the body is read (it never is: the connection
    // closes after the answer) and without "100 Continue".
    if (screening_->refused()) return write(shared_.api.refuse_unread(std::move(*screening_)));
    const size_t max = shared_.options.max_body_bytes;
    // The parser has checked the field's syntax; a chunked body has none.
    const beast::string_view announced = req[bhttp::field::content_length];
    uint64_t length = 0;
    std::from_chars(announced.data(), announced.data() + announced.size(), length);
    if (length > max) return write(too_large());
    parser_->body_limit(max);  // a chunked body is counted as it comes
    stream_.expires_after(shared_.options.body_timeout);
    // curl and others wait for "100 Continue" before sending a body announced this way.
    if (beast::iequals(req[bhttp::field::expect], "100-continue")) {
      auto cont =
          std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_, version_);
      return bhttp::async_write(stream_, *cont,
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

  Response too_large() {
    return shared_.api.error(413, wire::Refusal::too_large,
                             "the request body is larger than " +
                                 std::to_string(shared_.options.max_body_bytes) +
                                 " bytes (--max-body-bytes)");
  }

  Response headers_too_large() {
    return shared_.api.error(431, wire::Refusal::too_large,
                             "the request's head (its request line and header lines) is over " +
                                 std::to_string(kHeaderLimit) + " bytes");
  }

  void on_error(beast::error_code ec) {
    reading_ = false;
    if (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
        ec == beast::error::timeout || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || !parser_ || !parser_->got_some())
      return close();
    if (ec == bhttp::error::body_limit) return write(too_large());
    if (ec == bhttp::error::header_limit) return write(headers_too_large());
    // Anything else is malformed HTTP: say so, then close (the stream is out of step).
    return write(
        shared_.api.error(400, wire::Refusal::bad_http, "malformed HTTP request: " + ec.message()));
  }

  void on_read(beast::error_code ec, size_t) {
    if (ec) return on_error(ec);
    reading_ = false;
    stream_.expires_never();  // a pop may wait minutes; its length is bounded by the Api
    auto req = parser_->release();
    keep_alive_ = req.keep_alive();
    leaving_ = std::stop_source();
    Request r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    r.authorization = std::string(req[bhttp::field::authorization]);
    r.body = std::move(req.body());
    r.gone = leaving_.get_token();
    r.screening = std::move(screening_);
    screening_.reset();
    const std::string target = r.target;
    parser_.reset();
    answered_ = std::make_shared<std::atomic<bool>>(false);
    // The answer may come from another thread (a pop completed by the queue): get back on this
    // connection's strand before touching the stream. Exactly one answer is written.
    auto answer = [self = shared_from_this(), once = answered_](Response response) {
      if (once->exchange(true)) return;
      asio::post(self->stream_.get_executor(), [self, response = std::move(response)]() mutable {
        self->write(std::move(response));
      });
    };
    try {
      shared_.api.handle(std::move(r), answer);
    } catch (const std::exception& e) {
      // handle() does not throw for bad input: this is memory running out, or a bug. The
      // request fails; the connection and the daemon go on.
      const bool memory = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
      log(LogLevel::error, "error while answering {}: {}", target, e.what());
      answer(shared_.api.error(
          memory ? 503 : 500, memory ? wire::Refusal::overloaded : wire::Refusal::internal_error,
          memory ? "out of memory; retry later" : std::string("internal error: ") + e.what()));
    }
    if (!answered_->load()) watch();
  }

  // While the answer is being made (a pop waits), notice the client leaving: a readable socket
  // is either the client's next request (kept for later) or the end of the connection.
  void watch() {
    watching_ = true;
    stream_.socket().async_wait(tcp::socket::wait_read,
                                beast::bind_front_handler(&Session::on_watch, shared_from_this()));
  }

  void on_watch(beast::error_code ec) {
    watching_ = false;
    if (resume_) {  // the answer was written meanwhile: on to the next request
      resume_ = false;
      return read();
    }
    if (ec || gone_ || lingering_) return;  // closed, or closing
    if (look(stream_.socket()) == Peer::gone) {
      gone_ = true;
      leaving_.request_stop();  // a waiting pop is withdrawn and answers at once
      return;
    }
    const size_t ready = std::min(stream_.socket().available(ec), kPipelined);
    if (!ec && ready > 0) {
      const ssize_t n = ::recv(stream_.socket().native_handle(), buffer_.prepare(ready).data(),
                               ready, MSG_DONTWAIT);
      if (n > 0) buffer_.commit(static_cast<size_t>(n));
    }
    if (buffer_.size() < kPipelined) watch();
  }

  void write(Response r) {
    // The client left before the answer: nothing to write to. What the answer handed out goes
    // back (for such an answer, a last look just before the write narrows the window).
    if (gone_ || (r.undelivered && look(stream_.socket()) == Peer::gone)) {
      if (r.undelivered) r.undelivered();
      gone_ = true;
      return close();
    }
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(
        static_cast<bhttp::status>(r.status), version_);
    res->set(bhttp::field::server, "delayqd");
    res->set(bhttp::field::content_type, r.content_type);
    if (!r.allow.empty()) res->set(bhttp::field::allow, r.allow);
    for (const auto& [name, value] : r.headers) res->set(name, value);
    if (r.status == 401) res->set(bhttp::field::www_authenticate, "Bearer");
    const bool keep = keep_alive_ && !r.close && refusal_.empty();
    res->keep_alive(keep);
    res->body() = std::move(r.body);
    res->prepare_payload();
    // The answer to HEAD: GET's headers (its Content-Length too), no body.
    if (head_) res->body().clear();
    stream_.expires_after(shared_.options.idle_timeout);
    bhttp::async_write(stream_, *res,
                       [self = shared_from_this(), res, keep,
                        undelivered = std::move(r.undelivered)](beast::error_code ec, size_t) {
                         if (ec && undelivered) undelivered();
                         if (ec) return self->close();
                         // Draining: no next request, even on a connection kept alive. The
                         // drain closes the idle ones it finds; this one was writing then.
                         self->after_answer(keep && !self->gone_ && !self->shared_.api.draining());
                       });
  }

  // The answer is written: on to the next request, or to the end of the connection. A watch
  // still outstanding is cancelled first (only it: nothing else is outstanding now).
  void after_answer(bool next) {
    if (watching_) {
      resume_ = next;  // on_watch reads on once the watch has ended
      beast::error_code ignored;
      stream_.socket().cancel(ignored);
      if (next) return;
    } else if (next) {
      return read();
    }
    linger();
  }

  // After a last answer: no more sending, and whatever the client still sends (a body that was
  // never read) is discarded for a moment, so that the close does not reset the connection
  // under the answer before the client has read it. Bounded in time and bytes.
  void linger() {
    lingering_ = true;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(std::chrono::seconds(2));
    discard(0);
  }
  void discard(size_t so_far) {
    if (so_far > (size_t{1} << 20)) return close();
    stream_.async_read_some(asio::buffer(sink_),
                            [self = shared_from_this(), so_far](beast::error_code ec, size_t n) {
                              if (ec) return self->close();
                              self->discard(so_far + n);
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
  std::optional<Screening> screening_;  // the current request's, once its headers have come
  Connections& shared_;
  const asio::ip::address peer_;
  const std::string refusal_;  // why this connection is refused, "" when it is served
  std::stop_source leaving_;   // the current request's: requested when the client has gone
  std::shared_ptr<std::atomic<bool>> answered_;  // the current request's answer was given
  std::array<char, 4096> sink_;
  bool reading_ = false;
  bool watching_ = false;   // a watch (socket wait) is outstanding
  bool resume_ = false;     // read() once the outstanding watch ends
  bool gone_ = false;       // the client closed its side
  bool lingering_ = false;  // the last answer is written; discarding what still comes
  bool keep_alive_ = false;
  bool head_ = false;  // the current request is HEAD: its answer has no body
  unsigned version_ = 11;
};

void serve_connection(tcp::socket socket, Connections& connections, asio::ip::address peer,
                      std::string refusal) {
  std::make_shared<Session>(std::move(socket), connections, peer, std::move(refusal))->start();
}

void drain_connections(Connections& connections) {
  std::vector<std::shared_ptr<Session>> live;
  {
    std::lock_guard lock(connections.mu);
    for (auto& [ptr, weak] : connections.sessions)
      if (auto s = weak.lock()) live.push_back(std::move(s));
  }
  for (auto& s : live) s->drain();
}

}  // namespace delayq::http
