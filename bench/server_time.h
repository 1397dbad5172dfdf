// Server time per delivered job on the Redis backend (delayq-bench's "server" field of a Redis
// run, bench/README.md): what the servers a run used spent on it, from INFO commandstats (reset at
// the start of the measured part), and with --server-profile 1 per script from a SLOWLOG that
// records every call. This header is the arithmetic and the reading of the servers' text, apart
// from any connection, so that tests/unit/redis_parts_test.cc checks it; server_time.cc talks to
// the servers.
//
// Redis 7 counts the commands a function runs in commandstats and the slow log as well as the
// FCALL that ran them (a FCALL's usec includes theirs). So the servers' time is the FCALLs' usec
// plus the usec of the commands that no script runs (`other`: SUBSCRIBE, PING, ...); the
// commands the library's Lua names in a redis.call are counted only inside the FCALLs.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace delayq::bench {

struct CommandStat {
  uint64_t calls = 0;
  uint64_t usec = 0;
};
using CommandStats = std::map<std::string, CommandStat>;  // by command name as INFO gives it

// The lines "cmdstat_<name>:calls=<n>,usec=<n>,..." of INFO commandstats; other lines are
// skipped, and so is a line whose numbers do not read.
CommandStats parse_commandstats(std::string_view info);

// The commands a Lua source names in redis.call('<NAME>' (or "<NAME>"), lowercased as INFO
// names them.
std::set<std::string> commands_in_lua(std::string_view lua);

// One entry of a slow log: the command (lowercased), the function it called for an FCALL, its
// usec, and whether a script ran it (the slow log gives such a command the peer "?:0": its client
// is the script engine's, with no connection).
struct SlowEntry {
  std::string command;
  std::string function;
  uint64_t usec = 0;
  bool in_script = false;
};

// What one script cost: its FCALLs, and the commands it ran within them.
struct ScriptCost {
  CommandStat total;
  CommandStats inner;
};

// Adds a slow log's entries, oldest first, to `out` by function: the commands a script ran are
// logged just before its FCALL (a script runs atomically, so nothing else comes between), and
// are counted to it. `pending` carries a script's commands whose FCALL is not in `log` yet.
void add_slow_entries(const std::vector<SlowEntry>& log, std::map<std::string, ScriptCost>& out,
                      CommandStats& pending);

// The run's figures, summed over its servers.
struct ServerTime {
  size_t servers = 0;
  uint64_t delivered = 0;
  CommandStat scripts;  // FCALL and FCALL_RO: the delayq functions, the commands they ran inside
  CommandStat other;    // top-level commands no script runs (the benchmark's own left out)
  CommandStats other_by_command;
  // CPU time the servers' processes used meanwhile (INFO cpu: used_cpu_user + used_cpu_sys), in
  // µs: unlike commandstats' wall-clock usec, not inflated when a busy machine preempts the
  // server in the middle of a command; it includes the event loop and the sockets.
  uint64_t cpu_usec = 0;
  bool profiled = false;                      // --server-profile 1: by_script is filled
  std::map<std::string, ScriptCost> by_script;  // by script name (push, claim, ack_many, ...)

  uint64_t usec() const { return scripts.usec + other.usec; }
  // µs per delivered job (0 when none was delivered).
  double per_job(uint64_t usec) const { return delivered ? static_cast<double>(usec) / delivered : 0; }
};

// Sums the commandstats of the servers a run used. `script_commands`: what the library's Lua runs
// (commands_in_lua()); those are inside the FCALLs' usec, so they are not added again.
ServerTime sum_server_time(const std::vector<CommandStats>& servers,
                           const std::set<std::string>& script_commands, uint64_t delivered);

// used_cpu_user + used_cpu_sys of INFO cpu's text, in µs (0 when absent).
uint64_t parse_cpu_usec(std::string_view info);

// The "server" object of a run's JSON line (starting with '{').
std::string server_time_json(const ServerTime& t);
// The same for people, one line (and one per script when profiled), for stderr.
std::string server_time_text(const ServerTime& t);

}  // namespace delayq::bench
