// A Redis replication group watched by Sentinel, for failover tests: a primary and replicas
// (redis-server) and sentinels (redis-sentinel), each a process on a free loopback TCP port,
// in a temporary directory, killed and removed afterwards. Sentinels are set to notice a dead
// primary within a second and promote a replica a few seconds later. Never a system Redis.
// With a password, the servers require it (requirepass, and masterauth for their replication),
// the sentinels are given it (sentinel auth-pass) and the group's own calls to the servers send
// AUTH first; the sentinels themselves take no password.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "redis/connection.h"

namespace delayq::testing {

class SentinelGroup {
 public:
  static constexpr const char* kMaster = "dqmaster";

  SentinelGroup(int replicas, int sentinels, std::string password = "")
      : password_(std::move(password)) {
    char tmpl[] = "/tmp/delayq-sentinel-XXXXXX";
    if (const char* d = mkdtemp(tmpl)) dir_ = d;
    ok_ = !dir_.empty() && start(replicas, sentinels);
  }
  ~SentinelGroup() {
    for (Proc& p : procs_) stop(p);
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  SentinelGroup(const SentinelGroup&) = delete;
  SentinelGroup& operator=(const SentinelGroup&) = delete;

  bool ok() const { return ok_; }
  // One command to the server at `port`, with the group's password (cmd()).
  redis::Reply server_cmd(int port, std::vector<std::string> argv) const {
    return cmd(port, std::move(argv), password_);
  }
  // "127.0.0.1:port" of each sentinel, for RedisOptions::sentinels.
  std::vector<std::string> sentinels() const {
    std::vector<std::string> out;
    for (const Proc& p : procs_)
      if (p.sentinel) out.push_back("127.0.0.1:" + std::to_string(p.port));
    return out;
  }
  // The first sentinel's port, for SENTINEL commands.
  int sentinel_port() const {
    for (const Proc& p : procs_)
      if (p.sentinel) return p.port;
    return 0;
  }
  // The port the sentinels name as the primary now (0 if none answers).
  int primary_port() const {
    for (const Proc& p : procs_) {
      if (!p.sentinel) continue;
      const redis::Reply r = cmd(p.port, {"SENTINEL", "get-master-addr-by-name", kMaster});
      if (r.elements.size() == 2) return static_cast<int>(r.elements[1].as_int(0));
    }
    return 0;
  }
  // SIGKILL to the primary: it dies at once, with whatever it had not yet sent its replicas.
  // Returns its port.
  int kill_primary() {
    const int port = primary_port();
    kill_server(port);
    return port;
  }
  // SIGKILL to the server at `port`, whatever its role now.
  void kill_server(int port) {
    for (Proc& p : procs_)
      if (!p.sentinel && p.port == port) stop(p);
  }
  // Polls until the sentinels name a primary other than `old_port` that says it is a master and
  // has `replicas` replicas connected (the others follow it), or `within` passes.
  bool wait_failover(int old_port, int replicas, std::chrono::milliseconds within) const {
    return poll(within, [&] {
      const int port = primary_port();
      if (port == 0 || port == old_port) return false;
      const redis::Reply role = server_cmd(port, {"ROLE"});
      return !role.elements.empty() && role.elements[0].str == "master" &&
             role.elements.size() >= 3 &&
             static_cast<int>(role.elements[2].elements.size()) >= replicas;
    });
  }
  // The logs of every process, for a failure message.
  std::string logs() const {
    std::string out;
    for (const Proc& p : procs_) {
      out += "---- " + p.log + "\n";
      if (FILE* f = std::fopen(p.log.c_str(), "r")) {
        char buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
        std::fclose(f);
      }
    }
    return out;
  }

  // One command on a fresh connection to 127.0.0.1:port, after AUTH when `password` is given; a
  // transport or AUTH failure comes back as an error reply.
  static redis::Reply cmd(int port, std::vector<std::string> argv,
                          const std::string& password = "") {
    redis::Endpoint ep;
    ep.host = "127.0.0.1";
    ep.port = port;
    ep.password = password;
    ep.url = "redis://127.0.0.1:" + std::to_string(port);
    auto c = redis::Connection::open(ep, std::chrono::seconds(2), std::chrono::seconds(5));
    if (!c) return redis::Reply{redis::Reply::Type::error, 0, c.status().to_string(), {}};
    std::vector<std::string_view> v(argv.begin(), argv.end());
    auto r = (*c)->call(v);
    if (!r) return redis::Reply{redis::Reply::Type::error, 0, r.status().to_string(), {}};
    return std::move(*r);
  }

  static bool poll(std::chrono::milliseconds within, const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < until) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return done();
  }

 private:
  struct Proc {
    pid_t pid = -1;
    int port = 0;
    bool sentinel = false;
    std::string log;
  };

  // Nothing listens on 127.0.0.1:port now (another process may still take it before us).
  static bool bindable(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return free;
  }

  bool spawn(std::vector<std::string> args, Proc p) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    p.pid = fork();
    if (p.pid == 0) {
      execvp(argv[0], argv.data());
      _exit(127);
    }
    if (p.pid < 0) return false;
    procs_.push_back(p);
    const std::string pw = p.sentinel ? "" : password_;
    return poll(std::chrono::seconds(30), [&] { return cmd(p.port, {"PING"}, pw).str == "PONG"; });
  }

  // A server (primary when `of` is 0, else a replica of port `of`) on a free port.
  bool server(int of, std::mt19937& rng) {
    for (int tries = 0; tries < 20; ++tries) {
      const int port = std::uniform_int_distribution<int>(20000, 45000)(rng);
      if (!bindable(port)) continue;
      const std::string log = dir_ + "/redis-" + std::to_string(port) + ".log";
      std::vector<std::string> args{"redis-server", "--port", std::to_string(port), "--bind",
                                    "127.0.0.1", "--dir", dir_, "--dbfilename",
                                    "dump-" + std::to_string(port) + ".rdb", "--save", "",
                                    "--appendonly", "no", "--logfile", log, "--daemonize", "no"};
      if (!password_.empty())
        args.insert(args.end(), {"--requirepass", password_, "--masterauth", password_});
      if (of != 0) args.insert(args.end(), {"--replicaof", "127.0.0.1", std::to_string(of)});
      if (spawn(args, {.port = port, .log = log})) return true;
      stop(procs_.back());
      procs_.pop_back();
    }
    return false;
  }

  bool sentinel(int primary, int quorum, std::mt19937& rng) {
    for (int tries = 0; tries < 20; ++tries) {
      const int port = std::uniform_int_distribution<int>(20000, 45000)(rng);
      if (!bindable(port)) continue;
      const std::string conf = dir_ + "/sentinel-" + std::to_string(port) + ".conf";
      const std::string log = dir_ + "/sentinel-" + std::to_string(port) + ".log";
      if (FILE* f = std::fopen(conf.c_str(), "w")) {
        std::fprintf(f,
                     "port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\n"
                     "sentinel monitor %s 127.0.0.1 %d %d\n"
                     "sentinel down-after-milliseconds %s 1000\n"
                     "sentinel failover-timeout %s 4000\n"
                     "sentinel parallel-syncs %s 2\n",
                     port, dir_.c_str(), log.c_str(), kMaster, primary, quorum, kMaster, kMaster,
                     kMaster);
        if (!password_.empty())
          std::fprintf(f, "sentinel auth-pass %s %s\n", kMaster, password_.c_str());
        std::fclose(f);
      } else {
        return false;
      }
      if (spawn({"redis-sentinel", conf}, {.port = port, .sentinel = true, .log = log}))
        return true;
      stop(procs_.back());
      procs_.pop_back();
    }
    return false;
  }

  bool start(int replicas, int sentinels) {
    std::mt19937 rng(std::random_device{}());
    if (!server(0, rng)) return false;
    const int primary = procs_.front().port;
    for (int i = 0; i < replicas; ++i)
      if (!server(primary, rng)) return false;
    // The replicas in sync before anything is written.
    if (!poll(std::chrono::seconds(30), [&] {
          const redis::Reply role = server_cmd(primary, {"ROLE"});
          return role.elements.size() >= 3 &&
                 static_cast<int>(role.elements[2].elements.size()) == replicas;
        }))
      return false;
    for (int i = 0; i < sentinels; ++i)
      if (!sentinel(primary, sentinels / 2 + 1, rng)) return false;
    // Each sentinel knows the replicas and the other sentinels (found through the primary's
    // hello channel): only then can they agree on a failover.
    for (const Proc& p : procs_) {
      if (!p.sentinel) continue;
      if (!poll(std::chrono::seconds(30), [&] {
            return static_cast<int>(cmd(p.port, {"SENTINEL", "replicas", kMaster}).elements.size()) ==
                       replicas &&
                   static_cast<int>(cmd(p.port, {"SENTINEL", "sentinels", kMaster}).elements.size()) ==
                       sentinels - 1;
          }))
        return false;
    }
    return true;
  }

  static void stop(Proc& p) {
    if (p.pid <= 0) return;
    ::kill(p.pid, SIGKILL);
    waitpid(p.pid, nullptr, 0);
    p.pid = -1;
  }

  std::string password_;
  std::string dir_;
  std::vector<Proc> procs_;
  bool ok_ = false;
};

}  // namespace delayq::testing
