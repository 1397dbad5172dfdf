// One delayqd connection's life (session.h, session_machine.h): it starts (counted in, or
// refused at once when over a connection limit), hands its socket to the reading of requests
// (session_read.cc) and the writing of answers (session_write.cc), and ends: closed when idle at a
// drain, after a last answer (a short linger, so that the close does not reset the answer), or
// when the client leaves. While a request is being answered the socket is watched, so that a
// client that leaves is noticed: its waiting pop is withdrawn (Request::gone), and an answer that
// cannot be written gives back what it handed out (Response::undelivered, session_write.cc).
#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "delayqd/session_machine.h"

namespace delayq::http {

Peer look(tcp::socket& s) {
  char c;
  const ssize_t n = ::recv(s.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return Peer::sent_more;
  if (n == 0) return Peer::gone;  // the client closed (or half-closed) its side
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? Peer::quiet : Peer::gone;
}

Session::~Session() {
  shared_.api.connection_closed();
  shared_.leave(peer_);
  std::lock_guard lock(shared_.mu);
  shared_.sessions.erase(this);
}

void Session::start() {
  shared_.api.connection_opened();
  {
    std::lock_guard lock(shared_.mu);
    shared_.sessions.emplace(this, weak_from_this());
  }
  // Over a connection limit: answer at once and close, so the client learns why.
  if (!refusal_.empty()) return write(shared_.api.error(503, wire::Refusal::overloaded, refusal_));
  read();
}

void Session::drain() {
  asio::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->reading_ && self->buffer_.size() == 0 &&
        (!self->parser_ || !self->parser_->got_some())) {
      beast::error_code ec;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
      self->stream_.cancel();
    }
  });
}

// While the answer is being made (a pop waits), notice the client leaving: a readable socket
// is either the client's next request (kept for later) or the end of the connection.
void Session::watch() {
  watching_ = true;
  stream_.socket().async_wait(tcp::socket::wait_read,
                              beast::bind_front_handler(&Session::on_watch, shared_from_this()));
}

void Session::on_watch(beast::error_code ec) {
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
    const ssize_t n = ::recv(stream_.socket().native_handle(), buffer_.prepare(ready).data(), ready,
                             MSG_DONTWAIT);
    if (n > 0) buffer_.commit(static_cast<size_t>(n));
  }
  if (buffer_.size() < kPipelined) watch();
}

// After a last answer: no more sending, and whatever the client still sends (a body that was
// never read) is discarded for a moment, so that the close does not reset the connection
// under the answer before the client has read it. Bounded in time and bytes.
void Session::linger() {
  lingering_ = true;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream_.expires_after(std::chrono::seconds(2));
  discard(0);
}
void Session::discard(size_t so_far) {
  if (so_far > (size_t{1} << 20)) return close();
  stream_.async_read_some(asio::buffer(sink_),
                          [self = shared_from_this(), so_far](beast::error_code ec, size_t n) {
                            if (ec) return self->close();
                            self->discard(so_far + n);
                          });
}

void Session::close() {
  reading_ = false;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream_.socket().close(ec);
}

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
