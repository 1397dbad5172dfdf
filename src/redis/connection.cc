// The Redis connection layer (see connection.h): hiredis calls, reply copying, pooling,
// reconnection with backoff and script loading.
#include "redis/connection.h"

#include <hiredis.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <charconv>
#include <thread>

#include "common/format.h"
#include "redis/replies.h"

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

Result<std::vector<Reply>> parse_resp(std::string_view bytes) {
  std::unique_ptr<redisReader, void (*)(redisReader*)> reader(redisReaderCreate(), redisReaderFree);
  if (!reader || redisReaderFeed(reader.get(), bytes.data(), bytes.size()) != REDIS_OK)
    return Status(Errc::io_error, "out of memory reading a redis reply");
  std::vector<Reply> out;
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader.get(), &raw) != REDIS_OK)
      return Status(Errc::corrupt, std::string("redis protocol error: ") + reader->errstr);
    if (raw == nullptr) return out;  // what is left, if anything, is an incomplete reply
    out.push_back(copy_reply(static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
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
    out->push_back(copy_reply(static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
  return {};
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

Node::Node(Endpoint ep, NodeOptions opt, const Library* lib)
    : ep_(std::move(ep)), opt_(opt), lib_(lib) {}

Node::~Node() { close(); }

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
                  "redis at " + ep_.url + " refused the function library: " + r->str);
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

Result<Reply> Node::command(const std::vector<std::string_view>& argv, bool asking) {
  Result<std::unique_ptr<Connection>> c = acquire();
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
                      std::vector<Reply>* out) {
  Result<std::unique_ptr<Connection>> c = acquire();
  if (!c) return c.status();
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
  auto send = [&]() -> Status {
    std::vector<Reply> got;
    Status s = (*c)->pipeline(cmds, &got);
    out->clear();
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
  release(std::move(*c));
  return s;
}

// ---- key slots ----

namespace {

// CRC16-CCITT as Redis Cluster uses it (XMODEM: polynomial 0x1021, initial value 0, no
// reflection), one bit at a time: keys are short, and a shard computes its slot once.
uint16_t crc16(std::string_view s) {
  uint16_t crc = 0;
  for (unsigned char c : s) {
    crc ^= static_cast<uint16_t>(c) << 8;
    for (int b = 0; b < 8; ++b)
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021) : static_cast<uint16_t>(crc << 1);
  }
  return crc;
}

}  // namespace

uint16_t key_slot(std::string_view key) {
  if (const size_t open = key.find('{'); open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1)
      key = key.substr(open + 1, close - open - 1);
  }
  return crc16(key) & 16383;
}

// ---- Router ----

Router::Router(Endpoint seed, NodeOptions opt, const Library* lib)
    : seed_ep_(seed), opt_(opt), lib_(lib), seed_(std::move(seed), opt, lib) {
  for (auto& s : slots_) s.store(&seed_, std::memory_order_relaxed);
}

Router::~Router() { close(); }

void Router::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (auto& [name, node] : nodes_) node->close();
  }
  seed_.close();
}

Status Router::start() {
  Result<Reply> info = seed_.command({"CLUSTER", "INFO"});
  if (!info) return info.status();
  // A server without cluster support answers with an error ("cluster support disabled").
  if (info->is_error()) return {};
  cluster_ = true;
  for (auto& s : slots_) s.store(nullptr, std::memory_order_relaxed);
  refresh(&seed_, /*force=*/true);
  for (auto& s : slots_)
    if (s.load(std::memory_order_relaxed) != nullptr) return {};
  return Status(Errc::unavailable, "redis cluster at " + seed_ep_.url +
                                       " serves no slots (CLUSTER SLOTS is empty: is the cluster "
                                       "set up?)");
}

Node* Router::node_for(const std::string& host, int port) {
  const std::string name = host + ":" + std::to_string(port);
  std::lock_guard lock(mu_);
  auto it = nodes_.find(name);
  if (it != nodes_.end()) return it->second.get();
  Endpoint ep;
  ep.host = host;
  ep.port = port;
  ep.url = "redis://" + name;
  auto node = std::make_unique<Node>(std::move(ep), opt_, lib_);
  if (closed_) node->close();
  Node* raw = node.get();
  nodes_.emplace(name, std::move(node));
  return raw;
}

Node* Router::owner(uint16_t slot) const { return slots_[slot].load(std::memory_order_acquire); }

std::vector<Endpoint> Router::endpoints() {
  std::vector<Endpoint> out{seed_ep_};
  std::lock_guard lock(mu_);
  for (Node* n : masters_) out.push_back(n->endpoint());
  return out;
}

void Router::refresh(Node* first, bool force) {
  using Steady = std::chrono::steady_clock;
  std::lock_guard one(refresh_mu_);
  std::vector<Node*> ask{first};
  {
    std::lock_guard lock(mu_);
    if (!force && Steady::now() - last_refresh_ < std::chrono::milliseconds(100)) return;
    for (Node* n : masters_)
      if (n != first) ask.push_back(n);
  }
  if (first != &seed_) ask.push_back(&seed_);
  for (Node* n : ask) {
    Result<Reply> r = n->command({"CLUSTER", "SLOTS"});
    if (!r || r->type != Reply::Type::array) continue;
    std::vector<std::pair<SlotRange, Node*>> ranges;
    std::vector<Node*> masters;
    for (SlotRange& range : read_slot_map(*r)) {
      // An unknown address ("" or "?") is the node that answered, reached as we reach it.
      if (range.host.empty())
        range.host = n->endpoint().host.empty() ? "127.0.0.1" : n->endpoint().host;
      Node* m = node_for(range.host, range.port);
      ranges.push_back({std::move(range), m});
      if (std::find(masters.begin(), masters.end(), m) == masters.end()) masters.push_back(m);
    }
    if (ranges.empty()) continue;
    // Slots missing from the map keep their last owner: the call will say where they went.
    for (const auto& [range, m] : ranges)
      for (int s = range.lo; s <= range.hi; ++s)
        slots_[static_cast<size_t>(s)].store(m, std::memory_order_release);
    std::lock_guard lock(mu_);
    masters_ = std::move(masters);
    last_refresh_ = Steady::now();
    return;
  }
}

std::vector<Result<Reply>> Router::route(uint16_t slot, size_t n, const Send& send) {
  using Steady = std::chrono::steady_clock;
  std::vector<Result<Reply>> out(n, Status(Errc::unavailable, "not sent"));
  std::vector<size_t> todo(n);
  for (size_t i = 0; i < n; ++i) todo[i] = i;
  const Steady::time_point deadline = Steady::now() + opt_.call_timeout;
  Duration pause = std::chrono::milliseconds(1);
  Node* ask = nullptr;
  for (;;) {
    Node* node = ask ? ask : owner(slot);
    if (node == nullptr) {
      refresh(nullptr, /*force=*/false);
      node = owner(slot);
      if (node == nullptr) {
        const Status none(Errc::unavailable, "no node of the redis cluster at " + seed_ep_.url +
                                                 " serves slot " + std::to_string(slot));
        for (size_t i : todo) out[i] = none;
        return out;
      }
    }
    std::vector<Reply> got;
    const Status sent = send(*node, todo, ask != nullptr, &got);
    if (!sent.ok()) {
      // The calls without a reply fail; those answered before the failure keep their replies.
      for (size_t k = got.size(); k < todo.size(); ++k) out[todo[k]] = sent;
      todo.resize(got.size());
      // Perhaps a failover: the next call may find the slot elsewhere.
      if (cluster_) refresh(nullptr, /*force=*/false);
    }
    std::vector<size_t> again;
    Node* moved = nullptr;
    Node* next_ask = nullptr;
    bool later = false;
    for (size_t k = 0; k < todo.size(); ++k) {
      const size_t i = todo[k];
      out[i] = std::move(got[k]);
      const Reply& e = *out[i];
      if (!cluster_ || !sent.ok() || !e.is_error()) continue;
      const bool is_moved = e.str.starts_with("MOVED "), is_ask = e.str.starts_with("ASK ");
      if (is_moved || is_ask) {
        // "MOVED <slot> <host>:<port>"
        std::string host;
        int port = 0;
        const size_t sp = e.str.rfind(' ');
        if (sp == std::string::npos ||
            !parse_address(std::string_view(e.str).substr(sp + 1), host, port))
          continue;  // unreadable: the error stands
        if (host.empty())
          host = node->endpoint().host.empty() ? "127.0.0.1" : node->endpoint().host;
        Node* target = node_for(host, port);
        if (is_moved) {
          slots_[slot].store(target, std::memory_order_release);
          moved = node;
        } else {
          next_ask = target;
        }
        again.push_back(i);
      } else if (e.str.starts_with("TRYAGAIN") || e.str.starts_with("CLUSTERDOWN")) {
        later = true;
        again.push_back(i);
      }
    }
    if (again.empty()) return out;
    if (Steady::now() >= deadline) return out;  // the last error replies stand
    if (moved) refresh(owner(slot), /*force=*/false);
    if (later && next_ask == nullptr && moved == nullptr) {
      std::this_thread::sleep_for(pause);
      pause = std::min<Duration>(pause * 2, std::chrono::milliseconds(50));
    }
    ask = next_ask;
    todo = std::move(again);
  }
}

Status Router::script_error(size_t script, const std::string& url, const Reply& r) const {
  // A server that is starting, busy, read-only (a replica) or moving slots may take the call
  // later; anything else (out of memory under noeviction, a script error) is a failed write.
  bool later = false;
  for (const char* p :
       {"LOADING", "BUSY", "READONLY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "MOVED", "ASK"})
    later = later || r.str.starts_with(p);
  // These are refusals at dispatch: the script did not start. An error raised inside a script
  // (the keys hold data of another type, a bug) ends it part-way, and Redis rolls nothing back.
  bool unrun = later;
  for (const char* p : {"OOM", "NOPERM", "NOREPLICAS", "MISCONF", "NOAUTH"})
    unrun = unrun || r.str.starts_with(p);
  return Status(later ? Errc::unavailable : Errc::io_error,
                "redis at " + url + " failed the script '" + lib_->scripts[script].name +
                    "': " + r.str +
                    (unrun ? " (the call was not run)"
                           : " (the script stopped at this error; what it had changed before "
                             "stays changed)"));
}

Result<Reply> Router::command(uint16_t slot, const std::vector<std::string_view>& argv) {
  std::vector<Result<Reply>> r = route(
      slot, 1, [&](Node& node, const std::vector<size_t>&, bool asking, std::vector<Reply>* got) {
        Result<Reply> one = node.command(argv, asking);
        if (!one) return one.status();
        got->push_back(std::move(*one));
        return Status();
      });
  return std::move(r.front());
}

Result<Reply> Router::eval(uint16_t slot, size_t script, std::vector<std::string> keys,
                           std::vector<std::string> args) {
  std::vector<ScriptCall> one;
  one.emplace_back(std::move(keys), std::move(args));
  return std::move(eval_each(slot, script, one).front());
}

std::vector<Result<Reply>> Router::eval_each(uint16_t slot, size_t script,
                                             const std::vector<ScriptCall>& calls) {
  std::string url = seed_ep_.url;
  std::vector<Result<Reply>> r =
      route(slot, calls.size(),
            [&](Node& node, const std::vector<size_t>& todo, bool asking, std::vector<Reply>* got) {
              std::vector<const ScriptCall*> some;
              some.reserve(todo.size());
              for (size_t i : todo) some.push_back(&calls[i]);
              url = node.endpoint().url;
              return node.eval_raw(script, some, asking, got);
            });
  for (Result<Reply>& one : r)
    if (one && one->is_error()) one = script_error(script, url, *one);
  return r;
}

}  // namespace delayq::redis
