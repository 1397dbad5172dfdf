// A Redis Cluster with a replica per master, for failover tests: 3 masters and 3 replicas
// (redis-server processes on free loopback TCP ports, in a temporary directory), formed by hand
// as redis-cli --cluster create does, with a short cluster-node-timeout so that a dead master's
// replica is promoted within a few seconds. Killed and removed afterwards. Never a system Redis.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "redis_sentinel_group.h"

namespace delayq::testing {

class ClusterGroup {
 public:
  static constexpr size_t kMasters = 3;

  ClusterGroup() {
    char tmpl[] = "/tmp/delayq-cfail-XXXXXX";
    if (const char* d = mkdtemp(tmpl)) dir_ = d;
    ok_ = !dir_.empty() && start();
  }
  ~ClusterGroup() {
    for (pid_t& p : pids_) stop(p);
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  ClusterGroup(const ClusterGroup&) = delete;
  ClusterGroup& operator=(const ClusterGroup&) = delete;

  bool ok() const { return ok_; }
  // Node i: masters 0..2 as formed, then their replicas (3 + i replicates i).
  int port(size_t i) const { return ports_[i]; }
  std::string url(size_t i) const { return "redis://127.0.0.1:" + std::to_string(ports_[i]); }
  // The port that serves `slot` in node `asked`'s view (0 if it does not answer).
  int owner(size_t asked, int slot) const {
    for (const redis::Reply& e : SentinelGroup::cmd(ports_[asked], {"CLUSTER", "SLOTS"}).elements)
      if (e.elements.size() >= 3 && slot >= e.elements[0].as_int() &&
          slot <= e.elements[1].as_int())
        return static_cast<int>(e.elements[2].elements[1].as_int());
    return 0;
  }
  // The first slot master i was given.
  static int first_slot(size_t i) { return static_cast<int>(16384 * i / kMasters); }
  // SIGKILL to node i: it dies at once, with whatever it had not yet sent its replica.
  void kill(size_t i) { stop(pids_[i]); }
  // Starts node i again on its port and directory: its nodes.conf makes it rejoin the cluster,
  // as a replica of the node promoted in its place. False if it does not answer.
  bool restart(size_t i) {
    const int port = ports_[i];
    ports_.erase(ports_.begin() + static_cast<long>(i));
    pids_.erase(pids_.begin() + static_cast<long>(i));
    const bool up = spawn(port);  // appends it when it answers
    const pid_t pid = up ? pids_.back() : -1;
    if (up) {
      ports_.pop_back();
      pids_.pop_back();
    }
    ports_.insert(ports_.begin() + static_cast<long>(i), port);
    pids_.insert(pids_.begin() + static_cast<long>(i), pid);
    return up;
  }
  // How many replicas node i has connected (ROLE).
  size_t replicas(size_t i) const {
    const redis::Reply role = SentinelGroup::cmd(ports_[i], {"ROLE"});
    return role.elements.size() >= 3 && role.elements[0].str == "master"
               ? role.elements[2].elements.size()
               : 0;
  }
  std::string logs() const {
    std::string out;
    for (int p : ports_) {
      out += "---- node " + std::to_string(p) + "\n";
      if (FILE* f = std::fopen(log(p).c_str(), "r")) {
        char buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
        std::fclose(f);
      }
    }
    return out;
  }

 private:
  std::string log(int port) const { return dir_ + "/" + std::to_string(port) + ".log"; }

  bool spawn(int port) {
    const std::string d = dir_ + "/" + std::to_string(port);
    std::filesystem::create_directories(d);
    std::vector<std::string> args{
        "redis-server", "--port", std::to_string(port), "--bind", "127.0.0.1",
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
        // Short: a dead master is noticed and its replica elected within a few seconds.
        "--cluster-node-timeout", "1000", "--dir", d, "--save", "", "--appendonly", "no",
        "--logfile", log(port), "--daemonize", "no"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      execvp(argv[0], argv.data());
      _exit(127);
    }
    if (pid < 0) return false;
    pids_.push_back(pid);
    ports_.push_back(port);
    if (SentinelGroup::poll(std::chrono::seconds(30),
                            [&] { return SentinelGroup::cmd(port, {"PING"}).str == "PONG"; }))
      return true;
    stop(pids_.back());
    pids_.pop_back();
    ports_.pop_back();
    return false;
  }

  bool start() {
    std::mt19937 rng(std::random_device{}());
    const auto free = [](int port) {
      return SentinelGroup::cmd(port, {"PING"}).is_error();  // nothing answers there now
    };
    for (size_t i = 0; i < 2 * kMasters; ++i) {
      bool up = false;
      for (int tries = 0; tries < 20 && !up; ++tries) {
        const int port = std::uniform_int_distribution<int>(20000, 45000)(rng);
        up = free(port) && free(port + 10000) && spawn(port);
      }
      if (!up) return false;
    }
    using R = redis::Reply;
    const auto cmd = [&](size_t i, std::vector<std::string> argv) {
      return SentinelGroup::cmd(ports_[i], std::move(argv));
    };
    for (size_t i = 0; i < kMasters; ++i) {
      if (cmd(i, {"CLUSTER", "SET-CONFIG-EPOCH", std::to_string(i + 1)}).is_error()) return false;
      if (cmd(i, {"CLUSTER", "ADDSLOTSRANGE", std::to_string(first_slot(i)),
                  std::to_string(first_slot(i + 1) - 1)})
              .is_error())
        return false;
    }
    for (size_t i = 1; i < ports_.size(); ++i)
      if (cmd(0, {"CLUSTER", "MEET", "127.0.0.1", std::to_string(ports_[i])}).is_error())
        return false;
    // A replica can follow its master once it knows it.
    for (size_t i = 0; i < kMasters; ++i) {
      const std::string id = cmd(i, {"CLUSTER", "MYID"}).str;
      if (!SentinelGroup::poll(std::chrono::seconds(30), [&] {
            return cmd(kMasters + i, {"CLUSTER", "REPLICATE", id}).str == "OK";
          }))
        return false;
    }
    // Every node sees the cluster ok with its 6 nodes, and each master has its replica in sync.
    return SentinelGroup::poll(std::chrono::seconds(30), [&] {
      for (size_t i = 0; i < ports_.size(); ++i) {
        const std::string info = cmd(i, {"CLUSTER", "INFO"}).str;
        if (info.find("cluster_state:ok") == std::string::npos ||
            info.find("cluster_known_nodes:6") == std::string::npos)
          return false;
      }
      for (size_t i = 0; i < kMasters; ++i) {
        const R role = cmd(i, {"ROLE"});
        if (role.elements.size() < 3 || role.elements[2].elements.size() != 1 ||
            role.elements[2].elements[0].elements.size() < 3 ||
            role.elements[2].elements[0].elements[2].as_int(-1) != role.elements[1].as_int(-2))
          return false;
      }
      return true;
    });
  }

  static void stop(pid_t& pid) {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }

  std::string dir_;
  std::vector<int> ports_;
  std::vector<pid_t> pids_;
  bool ok_ = false;
};

}  // namespace delayq::testing
