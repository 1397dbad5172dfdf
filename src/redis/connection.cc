// One connection (see connection.h): hiredis calls, timeouts, and SIGPIPE kept from the process.
#include "redis/connection.h"

#include <hiredis.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>

namespace delayq::redis {

namespace {

timeval to_timeval(Duration d) {
  const int64_t us = std::max<int64_t>(d.count() / 1000, 1000);
  return timeval{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
}

// hiredis writes with write(2), so a write to a connection the server closed raises SIGPIPE,
// which kills the process by default. A library must not change the process's signal handling:
// instead, SIGPIPE is blocked in the calling thread for the duration of a call, and one that
// the call raised is consumed before the mask is restored.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  ~SigpipeGuard() {
    if (!blocked_) return;
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      const timespec zero{0, 0};
      sigtimedwait(&pipe_, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false;
  bool blocked_ = false;
};

}  // namespace

Result<std::unique_ptr<Connection>> Connection::open(const Endpoint& ep, Duration connect_timeout,
                                                     Duration call_timeout) {
  const timeval ct = to_timeval(connect_timeout);
  redisContext* c = ep.unix_path.empty() ? redisConnectWithTimeout(ep.host.c_str(), ep.port, ct)
                                         : redisConnectUnixWithTimeout(ep.unix_path.c_str(), ct);
  if (c == nullptr)
    return Status(Errc::unavailable, "cannot reach redis at " + ep.url + ": out of memory");
  if (c->err) {
    Status s(Errc::unavailable, "cannot reach redis at " + ep.url + ": " + c->errstr);
    redisFree(c);
    return s;
  }
  // hiredis keeps the connect timeout as the read timeout; set the one we mean (zero: none,
  // for a subscribed connection that waits for messages).
  const timeval rt = call_timeout > Duration::zero() ? to_timeval(call_timeout) : timeval{0, 0};
  if (redisSetTimeout(c, rt) != REDIS_OK) {
    Status s(Errc::unavailable, "cannot set the call timeout on " + ep.url + ": " + c->errstr);
    redisFree(c);
    return s;
  }
  auto conn = std::unique_ptr<Connection>(new Connection(c, ep.url));
  if (ep.password.empty()) return conn;
  std::vector<std::string_view> auth{"AUTH"};
  if (!ep.user.empty()) auth.push_back(ep.user);
  auth.push_back(ep.password);
  Result<Reply> r = conn->call(auth);
  if (!r) return r.status();
  // The server's reply (WRONGPASS ..., or ERR when it has no password set) never holds the
  // password, and neither does this message.
  if (r->is_error())
    return Status(Errc::invalid_argument,
                  "redis at " + ep.url + " refused AUTH" +
                      (ep.user.empty() ? "" : " as user '" + ep.user + "'") + ": " + r->str +
                      " (check the password and user name)");
  return conn;
}

Connection::~Connection() {
  redisFree(ctx_);
}

Status Connection::transport_error(const char* during) {
  broken_ = true;
  return Status(Errc::unavailable, "lost the connection to redis at " + url_ + " " + during + ": " +
                                       (ctx_->errstr[0] ? ctx_->errstr : "connection closed") +
                                       "; the call may or may not have taken effect");
}

Result<Reply> Connection::call(const std::vector<std::string_view>& argv) {
  Result<std::vector<Reply>> r = call_many({argv});
  if (!r) return r.status();
  return std::move(r->front());
}

Result<std::vector<Reply>> Connection::call_many(
    const std::vector<std::vector<std::string_view>>& cmds) {
  std::vector<Reply> out;
  if (Status s = pipeline(cmds, &out); !s.ok()) return s;
  return out;
}

Status Connection::pipeline(const std::vector<std::vector<std::string_view>>& cmds,
                            std::vector<Reply>* out) {
  if (broken_)
    return Status(Errc::unavailable, "the connection to redis at " + url_ + " is broken");
  SigpipeGuard guard;
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const auto& argv : cmds) {
    ptrs.clear();
    lens.clear();
    for (std::string_view a : argv) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
    if (redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), ptrs.data(), lens.data()) !=
        REDIS_OK)
      return transport_error("while sending");
  }
  out->reserve(out->size() + cmds.size());
  for (size_t i = 0; i < cmds.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr)
      return transport_error("while waiting for a reply");
    out->push_back(copy_reply(*static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
  return {};
}

Result<Reply> Connection::read() {
  if (broken_)
    return Status(Errc::unavailable, "the connection to redis at " + url_ + " is broken");
  void* raw = nullptr;
  if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr)
    return transport_error("while reading");
  Reply out = copy_reply(*static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  return out;
}

void Connection::shutdown() {
  ::shutdown(ctx_->fd, SHUT_RDWR);
}

}  // namespace delayq::redis
