// Writing the answer to one request on a delayqd connection (session_machine.h), then on to the
// next request (keep-alive) or to the end of the connection. An answer that cannot be written
// (the client has left) gives back what it handed out (Response::undelivered), so that a
// delivery is not lost with it.
#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include <memory>

#include "delayqd/session_machine.h"

namespace delayq::http {

void Session::write(Response r) {
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
                     [self = shared_from_this(), res, keep, undelivered = std::move(r.undelivered)](
                         beast::error_code ec, size_t) {
                       if (ec && undelivered) undelivered();
                       if (ec) return self->close();
                       // Draining: no next request, even on a connection kept alive. The
                       // drain closes the idle ones it finds; this one was writing then.
                       self->after_answer(keep && !self->gone_ && !self->shared_.api.draining());
                     });
}

// The answer is written: on to the next request, or to the end of the connection. A watch
// still outstanding is cancelled first (only it: nothing else is outstanding now).
void Session::after_answer(bool next) {
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

}  // namespace delayq::http
