// The connections to one server (see node.h): pooling, reconnection with backoff, and loading
// the function library.
#include "redis/node.h"

#include <algorithm>

#include "common/format.h"

namespace delayq::redis {

Node::Node(Endpoint ep, NodeOptions opt, const Library* lib)
    : ep_(std::move(ep)), opt_(opt), lib_(lib) {}

Node::~Node() {
  close();
}

void Node::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  open_ -= static_cast<uint32_t>(idle_.size());
  idle_.clear();
  cv_.notify_all();
}

Status Node::load_library(Connection& c) {
  // Usually the library is there already (another connection or client loaded it): ask first,
  // since loading compiles the whole source.
  Result<Reply> listed = c.call({"FUNCTION", "LIST", "LIBRARYNAME", lib_->name});
  if (!listed) return listed.status();
  if (listed->is_error() && listed->str.starts_with("NOAUTH"))
    return Status(Errc::invalid_argument,
                  "redis at " + ep_.url + " requires AUTH and " +
                      (ep_.password.empty() ? "no password was given"
                                            : "did not take the one given") +
                      ": " + listed->str +
                      " (give it as RedisOptions::password, or in the url: "
                      "redis://[user]:password@host:port, unix:///path?password=...)");
  if (listed->type == Reply::Type::array) {
    for (const Reply& entry : listed->elements)
      for (size_t i = 0; i + 1 < entry.elements.size(); i += 2)
        if (entry.elements[i].str == "library_name" && entry.elements[i + 1].str == lib_->name)
          return {};
  }
  Result<Reply> r = c.call({"FUNCTION", "LOAD", lib_->source});
  if (!r) return r.status();
  // A client loading the same library at the same moment is not a failure.
  if (r->is_error() && r->str.find("already exists") == std::string::npos)
    return Status(Errc::unavailable,
                  "redis at " + endpoint().url + " refused the function library: " + r->str);
  return {};
}

Result<std::unique_ptr<Connection>> Node::acquire() {
  using Steady = std::chrono::steady_clock;
  // Never the parent's connections in a forked child; checked before mu_, which a thread that
  // stayed in the parent may hold (common/fork_guard.h).
  if (fork_.forked()) return fork_.refusal();
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
    return Status(
        Errc::unavailable,
        "redis at " + ep_.url + " is unreachable (" + last_error_ + "); next attempt in " +
            format_duration(
                std::chrono::duration_cast<std::chrono::milliseconds>(next_attempt_ - now)));
  ++open_;  // counted while connecting, so that the pool does not overshoot
  const Endpoint ep = ep_;
  lock.unlock();
  Result<std::unique_ptr<Connection>> c =
      Connection::open(ep, opt_.connect_timeout, opt_.call_timeout);
  Status loaded = c ? load_library(**c) : c.status();
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

Endpoint Node::endpoint() const {
  std::lock_guard lock(mu_);
  return ep_;
}

void Node::retarget(const Endpoint& ep) {
  std::lock_guard lock(mu_);
  if (ep.host == ep_.host && ep.port == ep_.port && ep.unix_path == ep_.unix_path) return;
  ep_ = ep;
  // Connections in use reach the old server still: a write there fails (the server is gone, or
  // answers READONLY), which drops them.
  open_ -= static_cast<uint32_t>(idle_.size());
  idle_.clear();
  backoff_ = Duration::zero();
  next_attempt_ = {};
  cv_.notify_all();
}

Result<Reply> Node::command(const std::vector<std::string_view>& argv, bool asking, bool* sent) {
  Result<std::unique_ptr<Connection>> c = acquire();
  if (sent) *sent = c.ok();
  if (!c) return c.status();
  Result<Reply> r = Status();
  if (asking) {
    Result<std::vector<Reply>> both = (*c)->call_many({{"ASKING"}, argv});
    r = both ? Result<Reply>(std::move(both->back())) : Result<Reply>(both.status());
  } else {
    r = (*c)->call(argv);
  }
  release(std::move(*c));
  return r;
}

Status Node::eval_raw(size_t script, const std::vector<const ScriptCall*>& calls, bool asking,
                      std::vector<Reply>* out, bool* sent) {
  Result<std::unique_ptr<Connection>> c = acquire();
  if (sent) *sent = c.ok();
  if (!c) return c.status();
  const bool wait = opt_.wait.on() && lib_->scripts[script].writes;
  const std::string& function = lib_->scripts[script].function;
  std::vector<std::string> nkeys;
  std::vector<std::vector<std::string_view>> cmds;
  nkeys.reserve(calls.size());
  cmds.reserve(calls.size() * (asking ? 2 : 1));
  for (const ScriptCall* call : calls) {
    const auto& [keys, args] = *call;
    if (asking) cmds.push_back({"ASKING"});
    nkeys.push_back(std::to_string(keys.size()));
    std::vector<std::string_view> argv{"FCALL", function, nkeys.back()};
    argv.reserve(3 + keys.size() + args.size());
    for (const std::string& k : keys) argv.push_back(k);
    for (const std::string& a : args) argv.push_back(a);
    cmds.push_back(std::move(argv));
  }
  if (wait) cmds.push_back(opt_.wait.command());
  auto send = [&]() -> Status {
    std::vector<Reply> got;
    Status s = (*c)->pipeline(cmds, &got);
    out->clear();
    if (wait) {
      // WAIT's reply comes last: without it (the connection broke), no call is known to be on
      // the replicas, and every one may or may not have taken effect.
      if (got.size() < cmds.size()) {
        got.clear();
      } else {
        const Reply w = std::move(got.back());
        got.pop_back();
        if (Status enough = opt_.wait.check(w, got, endpoint().url); !enough.ok()) {
          got.clear();
          s = enough;
        }
      }
    }
    if (!asking) {
      *out = std::move(got);
      return s;
    }
    // Keep the replies to the calls: each follows the +OK of its ASKING (a call whose reply
    // did not arrive is left out).
    for (size_t i = 1; i < got.size(); i += 2) out->push_back(std::move(got[i]));
    return s;
  };
  Status s = send();
  // The server lost the library while this connection stayed up (FUNCTION FLUSH). Nothing ran,
  // as every call of the batch calls the same function: load and send again.
  if (s.ok() && !out->empty() && out->front().is_error() &&
      out->front().str.find("Function not found") != std::string::npos) {
    s = load_library(**c);
    if (s.ok()) s = send();
  }
  // A primary demoted by a failover answers writes with READONLY: its connections are of no
  // more use, and the next ones go where the node is pointed (retarget()).
  for (const Reply& r : *out)
    if (r.is_error() && r.str.starts_with("READONLY")) (*c)->discard();
  release(std::move(*c));
  return s;
}

}  // namespace delayq::redis
