// Reading one request on a delayqd connection (session_machine.h): what a client can make the
// server hold before it has proven anything is bounded. The first byte must come within
// idle_timeout, the head within header_timeout and the body within body_timeout (total
// deadlines, however the bytes trickle in); the head is capped; the route, the method and the
// token are checked once, when the head has come (Api::screen), before a body is read or "100
// Continue" sent, and that screening goes with the request to the Api (Request::screening).
#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include <charconv>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <stop_token>
#include <string>
#include <string_view>

#include "delayqd/log.h"
#include "delayqd/session_machine.h"

namespace delayq::http {

namespace {

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
                     hosts > 1
                         ? "the request has " + std::to_string(hosts) +
                               " Host headers; send exactly one (RFC 9112, 3.2)"
                         : std::string("an HTTP/1.1 request needs a Host header (RFC 9112, 3.2)"));
  const size_t codings = req.count(bhttp::field::transfer_encoding);
  if (codings > 0) {
    beast::string_view coding = req[bhttp::field::transfer_encoding];
    while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t'))
      coding.remove_prefix(1);
    while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t'))
      coding.remove_suffix(1);
    if (codings > 1 || !beast::iequals(coding, "chunked"))
      return api.error(501, wire::Refusal::not_supported,
                       "delayqd understands no Transfer-Encoding but \"chunked\" alone; send the "
                       "body plain or chunked, uncompressed");
  }
  if (const size_t auths = req.count(bhttp::field::authorization); auths > 1)
    return api.error(
        400, wire::Refusal::bad_http,
        "the request has " + std::to_string(auths) + " Authorization headers; send exactly one");
  return std::nullopt;
}

}  // namespace

// Idle: the next request's first byte must come within idle_timeout.
void Session::read() {
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
void Session::read_header() {
  stream_.expires_after(shared_.options.header_timeout);
  bhttp::async_read_header(stream_, buffer_, *parser_,
                           beast::bind_front_handler(&Session::on_header, shared_from_this()));
}

// `head_bytes`: the request line, the header lines and the blank line after them.
void Session::on_header(beast::error_code ec, size_t head_bytes) {
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

void Session::read_body() {
  bhttp::async_read(stream_, buffer_, *parser_,
                    beast::bind_front_handler(&Session::on_read, shared_from_this()));
}

Response Session::too_large() {
  return shared_.api.error(413, wire::Refusal::too_large,
                           "the request body is larger than " +
                               std::to_string(shared_.options.max_body_bytes) +
                               " bytes (--max-body-bytes)");
}

Response Session::headers_too_large() {
  return shared_.api.error(431, wire::Refusal::too_large,
                           "the request's head (its request line and header lines) is over " +
                               std::to_string(kHeaderLimit) + " bytes");
}

void Session::on_error(beast::error_code ec) {
  reading_ = false;
  if (ec == bhttp::error::end_of_stream || ec == asio::error::eof || ec == beast::error::timeout ||
      ec == asio::error::operation_aborted || ec == asio::error::connection_reset || !parser_ ||
      !parser_->got_some())
    return close();
  if (ec == bhttp::error::body_limit) return write(too_large());
  if (ec == bhttp::error::header_limit) return write(headers_too_large());
  // Anything else is malformed HTTP: say so, then close (the stream is out of step).
  return write(
      shared_.api.error(400, wire::Refusal::bad_http, "malformed HTTP request: " + ec.message()));
}

void Session::on_read(beast::error_code ec, size_t) {
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

}  // namespace delayq::http
