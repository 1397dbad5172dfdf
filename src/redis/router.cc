// Routing calls to the node that serves their slot (see router.h): the slot table, CLUSTER SLOTS,
// and MOVED / ASK / TRYAGAIN / CLUSTERDOWN.
#include "redis/router.h"

#include <algorithm>
#include <thread>

#include "redis/script_replies.h"

namespace delayq::redis {

Router::Router(Endpoint seed, NodeOptions opt, const Library* lib, Locate locate)
    : seed_ep_(seed),
      opt_(opt),
      lib_(lib),
      seed_(std::move(seed), opt, lib),
      locate_(std::move(locate)) {
  for (auto& s : slots_) s.store(&seed_, std::memory_order_relaxed);
}

Router::~Router() {
  close();
}

void Router::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (auto& [name, node] : nodes_) node->close();
  }
  seed_.close();
}

Status Router::start() {
  if (locate_) {
    Result<Endpoint> primary = locate_();
    if (!primary) return primary.status();
    seed_.retarget(*primary);
  }
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
  // Every node of a cluster takes the same credentials as the one named in the options.
  ep.user = seed_ep_.user;
  ep.password = seed_ep_.password;
  auto node = std::make_unique<Node>(std::move(ep), opt_, lib_);
  if (closed_) node->close();
  Node* raw = node.get();
  nodes_.emplace(name, std::move(node));
  return raw;
}

Node* Router::owner(uint16_t slot) const {
  return slots_[slot].load(std::memory_order_acquire);
}

std::vector<Endpoint> Router::endpoints() {
  std::vector<Endpoint> out{locate_ ? seed_.endpoint() : seed_ep_};
  std::lock_guard lock(mu_);
  for (Node* n : masters_) out.push_back(n->endpoint());
  return out;
}

void Router::refresh(Node* first, bool force) {
  using Steady = std::chrono::steady_clock;
  std::lock_guard one(refresh_mu_);
  std::vector<Node*> ask;
  if (first != nullptr) ask.push_back(first);
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
    bool went = true;
    const Status sent = send(*node, todo, ask != nullptr, &got, &went);
    if (!sent.ok() && (locate_ || cluster_)) {
      // Sentinel: ask where the primary is. Cluster: a dead master's slots go to its replica
      // once the cluster promotes it, which CLUSTER SLOTS (from the nodes still up) then says.
      if (locate_) relocate();
      else refresh(nullptr, /*force=*/false);
      // Nothing went out: the calls did not run, and may go to the primary there is now
      // (unless the queue is closed).
      if (!went && !sent.is(Errc::closed) && Steady::now() < deadline) {
        std::this_thread::sleep_for(pause);
        pause = std::min<Duration>(pause * 2, std::chrono::milliseconds(100));
        continue;
      }
    }
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
    bool later = false, stale = false;
    for (size_t k = 0; k < todo.size(); ++k) {
      const size_t i = todo[k];
      out[i] = std::move(got[k]);
      const Reply& e = *out[i];
      if (!sent.ok() || !e.is_error()) continue;
      // Sentinel: a demoted primary, or one that lost its own primary or is loading, refused
      // the call before running it: ask where the primary is now, and send it again.
      if (locate_ && (e.str.starts_with("READONLY") || e.str.starts_with("MASTERDOWN") ||
                      e.str.starts_with("LOADING"))) {
        stale = later = true;
        again.push_back(i);
        continue;
      }
      if (!cluster_) continue;
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
    if (stale) relocate();
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
      slot, 1,
      [&](Node& node, const std::vector<size_t>&, bool asking, std::vector<Reply>* got,
          bool* went) {
        Result<Reply> one = node.command(argv, asking, went);
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
            [&](Node& node, const std::vector<size_t>& todo, bool asking, std::vector<Reply>* got,
                bool* went) {
              std::vector<const ScriptCall*> some;
              some.reserve(todo.size());
              for (size_t i : todo) some.push_back(&calls[i]);
              url = node.endpoint().url;
              return node.eval_raw(script, some, asking, got, went);
            });
  for (Result<Reply>& one : r)
    if (one && one->is_error()) one = script_error(script, url, *one);
  return r;
}

}  // namespace delayq::redis
