// ServerMeter (server_meter.h): the servers of a run, their commandstats and, when profiling,
// their slow logs.
#include "server_meter.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "redis/lua_sources.h"
#include "redis/scripts.h"

namespace delayq::bench {

using namespace std::chrono_literals;

namespace {

[[noreturn]] void die(const std::string& why) {
  std::cerr << "delayq-bench: redis: " << why << "\n";
  std::exit(2);
}

redis::Reply must(Result<redis::Reply> r) {
  if (!r) die(r.status().to_string());
  if (r->is_error()) die(r->str);
  return std::move(*r);
}

// The commands the library's Lua runs (counted inside the FCALLs).
const std::set<std::string>& script_commands() {
  static const std::set<std::string> names = [] {
    std::set<std::string> out;
    for (const redis::lua::File& f : redis::lua::files()) out.merge(commands_in_lua(f.text));
    return out;
  }();
  return names;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

ServerMeter::ServerMeter(const std::string& url, bool profile) : profile_(profile) {
  auto seed = redis::parse_url(url);
  if (!seed) die(seed.status().to_string());
  for (const redis::Script& s : redis::library().scripts) script_of_[s.function] = s.name;
  auto c = connect(*seed);
  const std::string cluster = must(c->call({"INFO", "cluster"})).str;
  if (cluster.find("cluster_enabled:1") == std::string::npos) {
    servers_.push_back(*seed);
    return;
  }
  // Every master that is not failed: "<id> <ip:port@cport[,host]> <flags> ..." per line.
  std::istringstream nodes(must(c->call({"CLUSTER", "NODES"})).str);
  for (std::string line; std::getline(nodes, line);) {
    std::istringstream f(line);
    std::string id, addr, flags;
    if (!(f >> id >> addr >> flags)) continue;
    if (flags.find("master") == std::string::npos || flags.find("fail") != std::string::npos) continue;
    addr = addr.substr(0, addr.find_first_of("@,"));
    auto ep = redis::parse_url("redis://" + addr);
    if (!ep) die(ep.status().to_string());
    servers_.push_back(*ep);
  }
  if (servers_.empty()) die("the cluster of " + url + " lists no master");
}

ServerMeter::~ServerMeter() {
  if (started_) (void)finish(0);
}

std::unique_ptr<redis::Connection> ServerMeter::connect(const redis::Endpoint& ep) const {
  auto c = redis::Connection::open(ep, 5s, 60s);
  if (!c) die(c.status().to_string());
  return std::move(*c);
}

void ServerMeter::start() {
  started_ = true;
  pending_.assign(servers_.size(), {});
  by_script_.clear();
  slowlog_saved_.clear();
  cpu_at_start_.clear();
  for (const redis::Endpoint& ep : servers_) {
    auto c = connect(ep);
    cpu_at_start_.push_back(parse_cpu_usec(must(c->call({"INFO", "cpu"})).str));
    if (profile_) {
      for (const char* name : {"slowlog-log-slower-than", "slowlog-max-len"}) {
        const redis::Reply r = must(c->call({"CONFIG", "GET", name}));
        slowlog_saved_.push_back(r.elements.size() == 2 ? r.elements[1].str : "");
      }
      // Entries wait at most one drain interval, so this is far more than a run needs.
      must(c->call({"CONFIG", "SET", "slowlog-max-len", "1000000"}));
      must(c->call({"CONFIG", "SET", "slowlog-log-slower-than", "0"}));
      must(c->call({"SLOWLOG", "RESET"}));
    }
    must(c->call({"CONFIG", "RESETSTAT"}));
  }
  if (!profile_) return;
  stop_ = false;
  drainer_ = std::thread([this] {
    std::vector<std::unique_ptr<redis::Connection>> conns;
    for (const redis::Endpoint& ep : servers_) conns.push_back(connect(ep));
    while (!stop_.load()) {
      std::this_thread::sleep_for(20ms);
      drain(conns);
    }
    drain(conns);
  });
}

void ServerMeter::drain(std::vector<std::unique_ptr<redis::Connection>>& conns) {
  for (size_t i = 0; i < conns.size(); ++i) {
    // GET and RESET in one transaction: no entry is lost between them.
    auto r = conns[i]->call_many({{"MULTI"}, {"SLOWLOG", "GET", "-1"}, {"SLOWLOG", "RESET"}, {"EXEC"}});
    if (!r) die(r.status().to_string());
    const redis::Reply& exec = r->back();
    if (exec.is_error() || exec.elements.empty()) die("SLOWLOG GET failed: " + exec.str);
    const std::vector<redis::Reply>& got = exec.elements[0].elements;
    std::vector<SlowEntry> log;
    log.reserve(got.size());
    // Newest first: [id, time, usec, argv, peer, client name].
    for (auto it = got.rbegin(); it != got.rend(); ++it) {
      if (it->elements.size() < 5 || it->elements[3].elements.empty()) continue;
      SlowEntry e;
      const auto& argv = it->elements[3].elements;
      e.command = lower(argv[0].str);
      e.usec = static_cast<uint64_t>(std::max<int64_t>(0, it->elements[2].as_int()));
      e.in_script = it->elements[4].str.starts_with("?");
      if (argv.size() > 1 && (e.command == "fcall" || e.command == "fcall_ro")) {
        auto s = script_of_.find(argv[1].str);
        e.function = s == script_of_.end() ? argv[1].str : s->second;
      }
      log.push_back(std::move(e));
    }
    std::lock_guard lock(mu_);
    add_slow_entries(log, by_script_, pending_[i]);
  }
}

void ServerMeter::stop_drain() {
  if (!drainer_.joinable()) return;
  stop_ = true;
  drainer_.join();
}

ServerTime ServerMeter::finish(uint64_t delivered) {
  stop_drain();
  std::vector<CommandStats> stats;
  uint64_t cpu = 0;
  for (size_t i = 0; i < servers_.size(); ++i) {
    auto c = connect(servers_[i]);
    stats.push_back(parse_commandstats(must(c->call({"INFO", "commandstats"})).str));
    const uint64_t now = parse_cpu_usec(must(c->call({"INFO", "cpu"})).str);
    if (i < cpu_at_start_.size() && now > cpu_at_start_[i]) cpu += now - cpu_at_start_[i];
    if (profile_ && slowlog_saved_.size() >= 2 * (i + 1)) {
      (void)c->call({"CONFIG", "SET", "slowlog-log-slower-than", slowlog_saved_[2 * i]});
      (void)c->call({"CONFIG", "SET", "slowlog-max-len", slowlog_saved_[2 * i + 1]});
      (void)c->call({"SLOWLOG", "RESET"});
    }
  }
  started_ = false;
  ServerTime t = sum_server_time(stats, script_commands(), delivered);
  t.cpu_usec = cpu;
  if (profile_) {
    std::lock_guard lock(mu_);
    t.profiled = true;
    t.by_script = by_script_;
  }
  return t;
}

}  // namespace delayq::bench
