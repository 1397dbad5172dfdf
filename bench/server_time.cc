// The arithmetic and the text reading of server_time.h (no connection: a unit test compiles this
// file on its own).
#include "server_time.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace delayq::bench {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The value of "<key>=<digits>" in a comma-separated list, or false.
bool field(std::string_view list, std::string_view key, uint64_t& out) {
  size_t at = 0;
  while (at < list.size()) {
    size_t end = list.find(',', at);
    if (end == std::string_view::npos) end = list.size();
    const std::string_view kv = list.substr(at, end - at);
    if (kv.size() > key.size() && kv.substr(0, key.size()) == key && kv[key.size()] == '=') {
      const std::string_view v = kv.substr(key.size() + 1);
      return std::from_chars(v.data(), v.data() + v.size(), out).ptr == v.data() + v.size();
    }
    at = end + 1;
  }
  return false;
}

// The commands the benchmark itself sends to measure (they are no part of the run).
bool own_command(std::string_view name) {
  for (std::string_view p : {"info", "config", "slowlog", "cluster", "multi", "exec"})
    if (name == p || (name.size() > p.size() && name.substr(0, p.size()) == p && name[p.size()] == '|'))
      return true;
  return false;
}

std::string us(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

CommandStats parse_commandstats(std::string_view info) {
  CommandStats out;
  constexpr std::string_view kPrefix = "cmdstat_";
  size_t at = 0;
  while (at < info.size()) {
    size_t end = info.find('\n', at);
    if (end == std::string_view::npos) end = info.size();
    std::string_view line = info.substr(at, end - at);
    at = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.substr(0, kPrefix.size()) != kPrefix) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    CommandStat s;
    const std::string_view rest = line.substr(colon + 1);
    if (!field(rest, "calls", s.calls) || !field(rest, "usec", s.usec)) continue;
    out[std::string(line.substr(kPrefix.size(), colon - kPrefix.size()))] = s;
  }
  return out;
}

uint64_t parse_cpu_usec(std::string_view info) {
  double sum = 0;
  for (std::string_view key : {"\nused_cpu_user:", "\nused_cpu_sys:"}) {
    const size_t at = info.find(key);
    if (at == std::string_view::npos) continue;
    const std::string value(info.substr(at + key.size(), info.find_first_of("\r\n", at + 1) - at - key.size()));
    sum += std::strtod(value.c_str(), nullptr);
  }
  return static_cast<uint64_t>(sum * 1e6 + 0.5);
}

std::set<std::string> commands_in_lua(std::string_view lua) {
  std::set<std::string> out;
  constexpr std::string_view kCall = "redis.call(";
  for (size_t at = lua.find(kCall); at != std::string_view::npos; at = lua.find(kCall, at + 1)) {
    size_t p = at + kCall.size();
    if (p >= lua.size() || (lua[p] != '\'' && lua[p] != '"')) continue;  // a name in a variable
    const char quote = lua[p++];
    const size_t end = lua.find(quote, p);
    if (end == std::string_view::npos) break;
    out.insert(lower(lua.substr(p, end - p)));
  }
  return out;
}

void add_slow_entries(const std::vector<SlowEntry>& log, std::map<std::string, ScriptCost>& out,
                      CommandStats& pending) {
  for (const SlowEntry& e : log) {
    if (e.in_script) {
      CommandStat& s = pending[e.command];
      ++s.calls;
      s.usec += e.usec;
      continue;
    }
    if (e.command != "fcall" && e.command != "fcall_ro") continue;
    ScriptCost& c = out[e.function];
    ++c.total.calls;
    c.total.usec += e.usec;
    for (const auto& [name, s] : pending) {
      CommandStat& into = c.inner[name];
      into.calls += s.calls;
      into.usec += s.usec;
    }
    pending.clear();
  }
}

ServerTime sum_server_time(const std::vector<CommandStats>& servers,
                           const std::set<std::string>& script_commands, uint64_t delivered) {
  ServerTime t;
  t.servers = servers.size();
  t.delivered = delivered;
  for (const CommandStats& stats : servers) {
    for (const auto& [name, s] : stats) {
      CommandStat* into = nullptr;
      if (name == "fcall" || name == "fcall_ro") {
        into = &t.scripts;
      } else if (!script_commands.count(name) && !own_command(name)) {
        into = &t.other;
        CommandStat& by = t.other_by_command[name];
        by.calls += s.calls;
        by.usec += s.usec;
      }
      if (!into) continue;
      into->calls += s.calls;
      into->usec += s.usec;
    }
  }
  return t;
}

std::string server_time_json(const ServerTime& t) {
  auto stat = [&](const CommandStat& s) {
    return "{\"calls\":" + std::to_string(s.calls) + ",\"usec\":" + std::to_string(s.usec) +
           ",\"usec_per_call\":" + us(s.calls ? static_cast<double>(s.usec) / s.calls : 0) +
           ",\"usec_per_job\":" + us(t.per_job(s.usec)) + "}";
  };
  std::string out = "{\"servers\":" + std::to_string(t.servers) + ",\"delivered\":" +
                    std::to_string(t.delivered) + ",\"usec\":" + std::to_string(t.usec()) +
                    ",\"usec_per_job\":" + us(t.per_job(t.usec())) + ",\"cpu_usec\":" +
                    std::to_string(t.cpu_usec) + ",\"cpu_usec_per_job\":" +
                    us(t.per_job(t.cpu_usec)) + ",\"scripts\":" +
                    stat(t.scripts) + ",\"other\":" + stat(t.other) + ",\"other_by_command\":{";
  bool first = true;
  for (const auto& [name, s] : t.other_by_command) {
    out += (first ? "\"" : ",\"") + name + "\":" + stat(s);
    first = false;
  }
  out += "}";
  if (t.profiled) {
    out += ",\"by_script\":{";
    first = true;
    for (const auto& [name, c] : t.by_script) {
      std::string s = stat(c.total);
      s.pop_back();
      s += ",\"inner\":{";
      bool f2 = true;
      for (const auto& [cmd, is] : c.inner) {
        s += (f2 ? "\"" : ",\"") + cmd + "\":" + stat(is);
        f2 = false;
      }
      out += (first ? "\"" : ",\"") + name + "\":" + s + "}}";
      first = false;
    }
    out += "}";
  }
  return out + "}";
}

std::string server_time_text(const ServerTime& t) {
  std::string out = "server time: " + us(t.per_job(t.usec())) + " us per delivered job (" +
                    std::to_string(t.usec()) + " us over " + std::to_string(t.delivered) +
                    " jobs, " + std::to_string(t.servers) + " server" +
                    (t.servers == 1 ? "" : "s") + "): scripts " + us(t.per_job(t.scripts.usec)) +
                    " (" + std::to_string(t.scripts.calls) + " FCALLs), other commands " +
                    us(t.per_job(t.other.usec)) + "; the servers' CPU " +
                    us(t.per_job(t.cpu_usec)) + " us per delivered job\n";
  if (t.profiled) {
    uint64_t seen = 0;
    for (const auto& [name, c] : t.by_script) seen += c.total.calls;
    out += "  the slow log saw " + std::to_string(seen) + " of the " +
           std::to_string(t.scripts.calls) + " FCALLs; by script:\n";
  }
  for (const auto& [name, c] : t.by_script) {
    out += "  " + name + ": " + std::to_string(c.total.calls) + " calls, " +
           us(c.total.calls ? static_cast<double>(c.total.usec) / c.total.calls : 0) +
           " us per call, " + us(t.per_job(c.total.usec)) + " us per delivered job\n";
  }
  return out;
}

}  // namespace delayq::bench
