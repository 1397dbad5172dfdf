// ServerMeter: what the Redis servers of a run spent on its measured part (server_time.h has the
// figures and their arithmetic). start() resets the servers' commandstats (CONFIG RESETSTAT);
// finish() reads them, and the servers' CPU time since start() (INFO cpu). The servers are the one of --redis, or every master of the cluster it
// belongs to. With `profile` (--server-profile 1) every command also goes to the slow log
// (slowlog-log-slower-than 0), which a thread empties every 20 ms (SLOWLOG GET and RESET in one
// MULTI) and counts by script; the slow log's settings are put back by finish(). Logging every
// command costs the server a little per command, so a profiled run's times are a little higher.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "redis/connection.h"
#include "server_time.h"

namespace delayq::bench {

class ServerMeter {
 public:
  // Finds the servers (exits with a message when one cannot be reached, as the Redis workloads do).
  ServerMeter(const std::string& url, bool profile);
  ~ServerMeter();
  ServerMeter(const ServerMeter&) = delete;
  ServerMeter& operator=(const ServerMeter&) = delete;

  // The start of the measured part.
  void start();
  // The end of it: the figures, per job of `delivered`.
  ServerTime finish(uint64_t delivered);

 private:
  std::unique_ptr<redis::Connection> connect(const redis::Endpoint& ep) const;
  // Empties the slow log of each server into by_script_ (the drain thread, and finish()).
  void drain(std::vector<std::unique_ptr<redis::Connection>>& conns);
  void stop_drain();

  bool profile_;
  std::vector<redis::Endpoint> servers_;
  std::map<std::string, std::string> script_of_;  // FCALL function name -> script name
  std::vector<std::string> slowlog_saved_;        // per server: log-slower-than, max-len
  std::vector<uint64_t> cpu_at_start_;            // per server: parse_cpu_usec() at start()
  std::thread drainer_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;  // by_script_, pending_
  std::map<std::string, ScriptCost> by_script_;
  std::vector<CommandStats> pending_;  // per server
  bool started_ = false;
};

}  // namespace delayq::bench
