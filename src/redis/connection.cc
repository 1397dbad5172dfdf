// The Redis connection layer (see connection.h): hiredis calls, reply copying, pooling,
// reconnection with backoff and script loading.
#include "redis/connection.h"

#include <hiredis.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <charconv>

#include "common/format.h"

namespace delayq::redis {

namespace {

timeval to_timeval(Duration d) {
  const int64_t us = std::max<int64_t>(d.count() / 1000, 1000);
  return timeval{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
}

Reply copy_reply(const redisReply* r) {
  Reply out;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      out.type = Reply::Type::integer;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_STRING:
      out.type = Reply::Type::string;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = Reply::Type::status;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = Reply::Type::error;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::Type::array;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(copy_reply(r->element[i]));
      break;
    default:
      out.type = Reply::Type::nil;
  }
  return out;
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

int64_t Reply::as_int(int64_t fallback) const {
  if (type == Type::integer) return integer;
  if (type != Type::string && type != Type::status) return fallback;
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(str.data(), str.data() + str.size(), v);
  return ec == std::errc() && p == str.data() + str.size() ? v : fallback;
}

Result<Endpoint> parse_url(std::string_view url) {
  Endpoint ep;
  ep.url = std::string(url);
  auto bad = [&](const std::string& why) {
    return Status(Errc::invalid_argument, "redis url '" + std::string(url) + "': " + why +
                                              " (use unix:///path/to/redis.sock or "
                                              "redis://host:port)");
  };
  if (url.starts_with("unix://")) {
    ep.unix_path = std::string(url.substr(7));
    if (ep.unix_path.empty() || ep.unix_path[0] != '/') return bad("the socket path must be absolute");
    return ep;
  }
  if (!url.starts_with("redis://")) return bad("unknown scheme");
  std::string_view rest = url.substr(8);
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    // A trailing "/" or "/0" (database 0) is harmless; other databases are not supported, since
    // Redis Cluster has only database 0.
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && db != "0") return bad("only database 0 is supported");
    rest = rest.substr(0, slash);
  }
  if (rest.find('@') != std::string_view::npos) return bad("passwords are not supported yet");
  const size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos) {
    const std::string_view port = rest.substr(colon + 1);
    const auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), ep.port);
    if (ec != std::errc() || p != port.data() + port.size() || ep.port <= 0 || ep.port > 65535)
      return bad("the port is not a number between 1 and 65535");
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return bad("the host is missing");
  ep.host = std::string(rest);
  return ep;
}

// ---- Connection ----

Result<std::unique_ptr<Connection>> Connection::open(const Endpoint& ep, Duration connect_timeout,
                                                     Duration call_timeout) {
  const timeval ct = to_timeval(connect_timeout);
  redisContext* c = ep.unix_path.empty() ? redisConnectWithTimeout(ep.host.c_str(), ep.port, ct)
                                         : redisConnectUnixWithTimeout(ep.unix_path.c_str(), ct);
  if (c == nullptr) return Status(Errc::unavailable, "cannot reach redis at " + ep.url + ": out of memory");
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
  return std::unique_ptr<Connection>(new Connection(c, ep.url));
}

Connection::~Connection() { redisFree(ctx_); }

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
  if (broken_) return Status(Errc::unavailable, "the connection to redis at " + url_ + " is broken");
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
  std::vector<Reply> out;
  out.reserve(cmds.size());
  for (size_t i = 0; i < cmds.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr) return transport_error("while waiting for a reply");
    out.push_back(copy_reply(static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
  return out;
}

Result<Reply> Connection::read() {
  if (broken_) return Status(Errc::unavailable, "the connection to redis at " + url_ + " is broken");
  void* raw = nullptr;
  if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr) return transport_error("while reading");
  Reply out = copy_reply(static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  return out;
}

void Connection::shutdown() { ::shutdown(ctx_->fd, SHUT_RDWR); }

// ---- Node ----

Node::Node(Endpoint ep, NodeOptions opt, const std::vector<Script>* scripts)
    : ep_(std::move(ep)), opt_(opt), scripts_(scripts), shas_(scripts->size()) {}

Node::~Node() { close(); }

void Node::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  open_ -= static_cast<uint32_t>(idle_.size());
  idle_.clear();
  cv_.notify_all();
}

Status Node::load_scripts(Connection& c) {
  for (size_t i = 0; i < scripts_->size(); ++i) {
    const Script& s = (*scripts_)[i];
    Result<Reply> r = c.call({"SCRIPT", "LOAD", s.source});
    if (!r) return r.status();
    if (r->type != Reply::Type::string)
      return Status(Errc::unavailable, "redis at " + ep_.url + " refused the script '" + s.name +
                                           "': " + r->str);
    std::lock_guard lock(mu_);
    shas_[i] = r->str;
  }
  return {};
}

Result<std::unique_ptr<Connection>> Node::acquire() {
  using Steady = std::chrono::steady_clock;
  std::unique_lock lock(mu_);
  for (;;) {
    if (closed_) return Status(Errc::closed, "the queue is closed");
    if (!idle_.empty()) {
      std::unique_ptr<Connection> c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
    if (open_ < opt_.connections) break;
    cv_.wait(lock);
  }
  const Steady::time_point now = Steady::now();
  if (now < next_attempt_)
    return Status(Errc::unavailable,
                  "redis at " + ep_.url + " is unreachable (" + last_error_ + "); next attempt in " +
                      format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(
                          next_attempt_ - now)));
  ++open_;  // counted while connecting, so that the pool does not overshoot
  lock.unlock();
  Result<std::unique_ptr<Connection>> c =
      Connection::open(ep_, opt_.connect_timeout, opt_.call_timeout);
  Status loaded = c ? load_scripts(**c) : c.status();
  lock.lock();
  if (loaded.ok()) {
    backoff_ = Duration::zero();
    next_attempt_ = {};
    return c;
  }
  --open_;
  cv_.notify_one();
  backoff_ = backoff_ == Duration::zero() ? opt_.reconnect_min
                                          : std::min<Duration>(backoff_ * 2, opt_.reconnect_max);
  next_attempt_ = Steady::now() + backoff_;
  last_error_ = loaded.message();
  return loaded;
}

void Node::release(std::unique_ptr<Connection> c) {
  std::lock_guard lock(mu_);
  if (c->broken() || closed_) {
    --open_;
    // The server went away, most likely: the idle connections are dead too. Dropping them now
    // spares the next calls a failure each.
    if (c->broken()) {
      open_ -= static_cast<uint32_t>(idle_.size());
      idle_.clear();
    }
    // A broken connection usually means the server went away: make the next attempt wait a
    // little rather than hammer a restarting server.
    if (c->broken() && backoff_ == Duration::zero()) {
      backoff_ = opt_.reconnect_min;
      next_attempt_ = std::chrono::steady_clock::now() + backoff_;
      last_error_ = "the connection broke";
    }
  } else {
    idle_.push_back(std::move(c));
  }
  cv_.notify_one();
}

Result<Reply> Node::command(const std::vector<std::string_view>& argv) {
  Result<std::unique_ptr<Connection>> c = acquire();
  if (!c) return c.status();
  Result<Reply> r = (*c)->call(argv);
  release(std::move(*c));
  return r;
}

std::string Node::sha(size_t script) {
  std::lock_guard lock(mu_);
  return shas_[script];
}

Status Node::script_error(size_t script, const Reply& r) const {
  // A server that is starting, busy, read-only (a replica) or moving slots may take the call
  // later; anything else (out of memory under noeviction, a script error) is a failed write.
  bool later = false;
  for (const char* p : {"LOADING", "BUSY", "READONLY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN",
                        "MOVED", "ASK"})
    later = later || r.str.starts_with(p);
  return Status(later ? Errc::unavailable : Errc::io_error,
                "redis at " + ep_.url + " failed the script '" + (*scripts_)[script].name +
                    "': " + r.str);
}

Result<Reply> Node::eval(size_t script, const std::vector<std::string>& keys,
                         const std::vector<std::string>& args) {
  Result<std::vector<Reply>> r = eval_many(script, {{keys, args}});
  if (!r) return r.status();
  return std::move(r->front());
}

Result<std::vector<Reply>> Node::eval_many(
    size_t script,
    const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>>& calls) {
  Result<std::unique_ptr<Connection>> c = acquire();
  if (!c) return c.status();
  std::string hash = sha(script);
  std::vector<std::string> nkeys;
  std::vector<std::vector<std::string_view>> cmds;
  nkeys.reserve(calls.size());
  for (const auto& [keys, args] : calls) {
    nkeys.push_back(std::to_string(keys.size()));
    std::vector<std::string_view> argv{"EVALSHA", hash, nkeys.back()};
    for (const std::string& k : keys) argv.push_back(k);
    for (const std::string& a : args) argv.push_back(a);
    cmds.push_back(std::move(argv));
  }
  Result<std::vector<Reply>> r = (*c)->call_many(cmds);
  // NOSCRIPT: the server lost its script cache while this connection stayed up (SCRIPT FLUSH).
  // Nothing ran, as every call of the batch runs the same script: load and send again.
  if (r && !r->empty() && r->front().is_error() && r->front().str.starts_with("NOSCRIPT")) {
    if (Status s = load_scripts(**c); !s.ok()) {
      release(std::move(*c));
      return s;
    }
    hash = sha(script);
    for (auto& argv : cmds) argv[1] = hash;
    r = (*c)->call_many(cmds);
  }
  release(std::move(*c));
  if (!r) return r.status();
  for (const Reply& one : *r)
    if (one.is_error()) return script_error(script, one);
  return r;
}

}  // namespace delayq::redis
