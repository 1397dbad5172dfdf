// delayqd's settings (see config.h): flags and the config file, each value checked, a bad one
// named with where it came from. docs/operations.md describes the flags.
//
// The file is read here, not by toml++ (libtomlplusplus-dev 3.3.0 is in Debian 12 main),
// because the file is not TOML: "store = /var/lib/delayq/store" and "listen = 127.0.0.1:9277"
// are bare words, which TOML refuses (a string must be quoted), so every config written so far,
// the packaged delayqd.conf among them, would stop being read. Unknown settings and their "did
// you mean" would still be ours, as would every range check; toml++ would add some 21000 lines
// of headers to parse "name = value" lines.
#include "delayqd/config.h"

#include <sys/stat.h>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "delayqd/log.h"
#include "redis/connection.h"
#include "wire/fields.h"
#include "wire/version.h"

namespace delayq::http {

namespace {

constexpr const char* kUsage = R"(usage: delayqd [flags]

An HTTP/1.1 server for a delayq queue, compatible with the ouqiang/delay-queue API.

  --listen HOST:PORT        where to listen (default 127.0.0.1:9277; [::1]:9277 for IPv6;
                            port 0 picks a free one)
  --store DIR               the embedded durable store's directory (default ./delayq-data)
  --sync MODE               store sync mode: always (default), batch, periodic, none
  --horizon SECONDS         jobs due further ahead live on disk only (the store's disk tier,
                            1 to 3153600000), or "off": every job in memory (default: as the
                            store was last opened; a new store: off)
  --memtable-mb N           the store's RocksDB write buffers over all its families, in MiB,
                            1 to 1024 (default 16): resident memory swings by about this
                            much; more means fewer flushes under heavy writes
  --backup-dir DIR          allow POST /backup: consistent copies of the live store, written
                            only into new directories directly under DIR
  --redis URL               use a Redis server instead: redis://host:port or unix:///path
                            (redis://[user]@host:port, unix:///path?user=NAME: an ACL user).
                            A password in the URL is refused here, where every user sees it
                            in the process list; it may be in the URL of a --config file
  --redis-password-file FILE
                            the Redis password (AUTH), alone in FILE; or set
                            DELAYQ_REDIS_PASSWORD in delayqd's environment
  --queue NAME              Redis queue name (default "default")
  --shards N                Redis shards, 1 to 1024 (default 1)
  --redis-replicas-to-ack N a Redis write answers only once N replicas have it (WAIT), 0 to
                            16 (default 0: no wait)
  --redis-replicas-timeout MS
                            how long a write waits for them, 1 to 4999 ms (default 1000);
                            then it fails: it may or may not have been applied
  --token-file FILE         require "Authorization: Bearer <token>", the token read from FILE
  --threads N               server threads (default 4)
  --max-connections N       open connections (default 1024)
  --max-connections-per-client N
                            open connections from one remote address (default 0: no cap
                            but --max-connections; behind a proxy all share its address)
  --max-body-bytes N        largest request body (default 4194304)
  --max-job-bytes N         largest job body the queue takes (default 1048576)
  --max-delay SECONDS       pushes, reschedules, ttrs and retry waits further out than this
                            are refused, 1 to 3153600000 (100 years; default 315360000,
                            3650 days)
  --default-ttr SECONDS     the lease of a job pushed without a ttr, 1 to --max-delay
                            (default 30)
  --max-waiting-pops N      pops waiting at once (default 1024)
  --pop-timeout SECONDS     how long /pop waits by default, and at most (default 180)
  --idle-timeout SECONDS    close keep-alive connections idle this long (default 60)
  --header-timeout SECONDS  a request's headers must arrive within this (default 10)
  --body-timeout SECONDS    a request's body must arrive within this (default 60)
  --drain-timeout SECONDS   on SIGTERM, wait this long for requests in flight (default 30)
  --metrics-topics N        topics with their own delayq_jobs series on /metrics, 0 to
                            100000 (default 1000); the others are summed as overflow="true"
  --config FILE             read "name = value" lines (the flag names without "--");
                            flags given on the command line win
  --version                 print "delayqd VERSION" and exit
  --help                    this text

Exit status: 0 after a clean shutdown, 1 if the queue or the socket could not be opened,
2 for a bad flag or config line.
)";

const std::vector<std::string_view> kKeys = {
    "listen",          "store",          "sync",          "redis",
    "queue",           "shards",         "token-file",    "threads",
    "max-connections", "max-body-bytes", "max-job-bytes", "max-waiting-pops",
    "pop-timeout",     "idle-timeout",   "drain-timeout", "metrics-topics",
    "backup-dir",      "config",         "max-connections-per-client",
    "header-timeout",  "body-timeout",   "horizon",       "memtable-mb",
    "max-delay",       "default-ttr",    "redis-password-file",
    "redis-replicas-to-ack", "redis-replicas-timeout"};

// A setting's value and where it came from, for messages: "--threads" for a flag,
// "delayqd.conf:3: threads" for a config line.
struct Setting {
  std::string value;
  std::string where;
};
using Settings = std::map<std::string, Setting>;

bool known(const std::string& key) {
  for (const auto& k : kKeys)
    if (k == key) return true;
  return false;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// " (did you mean --threads?)" for a mistyped name, "" when no known one is close: the closest
// known name between `before` and `after` ("--" before a flag, quotes around a config setting).
// A flag may also be --help or --version.
std::string did_you_mean(std::string_view typed, const std::string& before,
                         const std::string& after, bool flag) {
  std::vector<std::string_view> names = kKeys;
  if (flag) names.insert(names.end(), {"help", "version"});
  const std::string_view best = wire::closest_name(typed, names);
  return best.empty() ? "" : " (did you mean " + before + std::string(best) + after + "?)";
}

[[noreturn]] void usage_error(const std::string& message) {
  log(LogLevel::error, "{}", message);
  log(LogLevel::info, "delayqd --help lists the flags");
  std::exit(2);
}

// Command line: "--name value" or "--name=value".
Settings parse_flags(int argc, char** argv) {
  Settings flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (arg == "--version") {
      std::cout << "delayqd " << wire::version() << "\n";
      std::exit(0);
    }
    if (arg.rfind("--", 0) != 0) usage_error("unexpected argument '" + arg + "'");
    std::string key = arg.substr(2), value;
    const size_t eq = key.find('=');
    if (eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    }
    // An unknown flag is named before its value is looked for: "--verison" is a typo, not a
    // flag without a value.
    if (!known(key)) usage_error("unknown flag --" + key + did_you_mean(key, "--", "", true));
    if (eq == std::string::npos) {
      if (i + 1 >= argc) usage_error("flag --" + key + " needs a value");
      value = argv[++i];
    }
    if (flags.contains(key)) usage_error("flag --" + key + " given twice");
    flags[key] = {value, "--" + key};
  }
  return flags;
}

// Config file: "name = value" lines; '#' starts a comment line; blank lines are skipped.
Settings parse_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) usage_error("cannot read config file " + path + ": " + std::strerror(errno));
  Settings values;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string where = path + ":" + std::to_string(n) + ": ";
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const size_t eq = t.find('=');
    if (eq == std::string::npos)  // masked: the line may be a redis url with a password
      usage_error(where + "expected 'name = value', got '" + redis::mask_url(t) + "'");
    const std::string key = trim(t.substr(0, eq));
    const std::string value = trim(t.substr(eq + 1));
    if (!known(key) || key == "config")
      usage_error(where + "unknown setting '" + key + "'" +
                  (key == "config" ? "" : did_you_mean(key, "'", "'", false)));
    if (value.empty()) usage_error(where + "setting '" + key + "' has no value");
    if (values.contains(key)) usage_error(where + "setting '" + key + "' given twice");
    values[key] = {value, where + key};
  }
  return values;
}

// A whole number in [min, max], range-checked before anything is computed from it; `unit` names
// what it counts ("seconds") in the message.
uint64_t number(const Settings& s, const std::string& key, uint64_t fallback, uint64_t min,
                uint64_t max, const std::string& unit = "") {
  auto it = s.find(key);
  if (it == s.end()) return fallback;
  uint64_t v = 0;
  const std::string& text = it->second.value;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v < min || v > max)
    usage_error(fmt::format("{} must be a whole number {}from {} to {}, not '{}'",
                            it->second.where, unit.empty() ? "" : "of " + unit + " ", min, max,
                            text));
  return v;
}

// A duration setting in whole seconds: checked against [min, max] before it becomes a Duration.
std::chrono::seconds seconds(const Settings& s, const std::string& key, uint64_t fallback,
                             uint64_t min, uint64_t max) {
  return std::chrono::seconds(number(s, key, fallback, min, max, "seconds"));
}

const std::string& value(const Settings& s, const std::string& key) { return s.at(key).value; }

std::string read_token(const std::string& path) {
  std::ifstream in(path);
  if (!in) usage_error("cannot read --token-file " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string token = trim(ss.str());
  if (token.empty()) usage_error("--token-file " + path + " is empty");
  if (token.find_first_of(" \t\r\n") != std::string::npos)
    usage_error("--token-file " + path + " must hold one token (no spaces or line breaks)");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & S_IROTH))
    log(LogLevel::warn, "{} is readable by every user", path);
  return token;
}

// Where to listen: HOST:PORT, the brackets of an IPv6 host dropped.
void read_listen(Settings& s, ServerOptions& server) {
  const std::string listen = s.contains("listen") ? value(s, "listen") : "127.0.0.1:9277";
  const std::string where = s.contains("listen") ? s["listen"].where : "--listen";
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    usage_error(where + " must be HOST:PORT, not '" + listen + "'");
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  server.host = host;
  Settings port{{"listen", {listen.substr(colon + 1), where + " (the port)"}}};
  server.port = static_cast<uint16_t>(number(port, "listen", 0, 0, 65535));
}

void read_server(Settings& s, ServerOptions& server) {
  read_listen(s, server);
  server.threads = number(s, "threads", 4, 1, 256);
  server.max_connections = number(s, "max-connections", 1024, 1, 1'000'000);
  server.max_body_bytes = number(s, "max-body-bytes", size_t{4} << 20, 1024, size_t{1} << 30);
  server.max_connections_per_client = number(s, "max-connections-per-client", 0, 0, 1'000'000);
  server.idle_timeout = seconds(s, "idle-timeout", 60, 1, 86400);
  server.header_timeout = seconds(s, "header-timeout", 10, 1, 3600);
  server.body_timeout = seconds(s, "body-timeout", 60, 1, 86400);
  server.drain_timeout = seconds(s, "drain-timeout", 30, 0, 86400);
}

void read_api(const Settings& s, ApiOptions& api) {
  api.max_waiting_pops = number(s, "max-waiting-pops", 1024, 0, 1'000'000);
  api.default_pop_timeout = api.max_pop_timeout = seconds(s, "pop-timeout", 180, 0, 3600);
  // The queue's limits, the same for either backend; the Api checks requests against them.
  api.max_job_bytes = number(s, "max-job-bytes", size_t{1} << 20, 1, size_t{64} << 20, "bytes");
  if (s.contains("token-file")) api.bearer_token = read_token(value(s, "token-file"));
  api.max_metric_topics = number(s, "metrics-topics", 1000, 0, 100'000, "topics");
}

// The queue's limits, the same for either backend; the Api checks requests against them too.
void read_limits(const Settings& s, Limits& limits, ApiOptions& api) {
  limits.max_body_bytes = api.max_job_bytes;
  constexpr uint64_t kHundredYears = 3153600000;  // rules::kLongestDelay, in seconds
  const uint64_t max_delay = number(s, "max-delay", 315360000, 1, kHundredYears, "seconds");
  limits.max_delay = std::chrono::seconds(max_delay);
  limits.default_ttr = seconds(s, "default-ttr", 30, 1, max_delay);
  api.max_delay = limits.max_delay;
}

// The Redis password: in the url of a config file, in --redis-password-file (flag or config), or
// in DELAYQ_REDIS_PASSWORD; never on the command line, where every user can read it (ps).
void read_redis_password(const Settings& s, RedisOptions& options) {
  const Setting& url = s.at("redis");
  // Any url the masking changes holds a password, also one that will not parse.
  const bool in_url = redis::mask_url(url.value) != url.value;
  if (in_url && url.where == "--redis")
    usage_error("--redis holds a password, which every user of this machine can read in the "
                "process list: put it alone in a file named by --redis-password-file FILE, in "
                "DELAYQ_REDIS_PASSWORD, or in the redis url of a --config file");
  const char* env = std::getenv("DELAYQ_REDIS_PASSWORD");
  const bool in_env = env != nullptr && *env != '\0';
  const auto file = s.find("redis-password-file");
  std::string where;
  for (const auto& [given, name] : {std::pair{in_url, url.where + " (the url)"},
                                    {file != s.end(), file != s.end() ? file->second.where : ""},
                                    {in_env, std::string("DELAYQ_REDIS_PASSWORD")}})
    if (given) where += (where.empty() ? "" : " and ") + name;
  if (in_url + in_env + (file != s.end()) > 1)
    usage_error("the Redis password is given more than once (" + where + "): give it in one place");
  if (in_env) options.password = env;
  if (file == s.end()) return;
  auto pw = redis::read_password_file(file->second.value);
  if (!pw) usage_error(file->second.where + ": " + pw.status().message());
  options.password = std::move(*pw);
  struct stat st {};
  if (::stat(file->second.value.c_str(), &st) == 0 && (st.st_mode & S_IROTH))
    log(LogLevel::warn, "{} is readable by every user", file->second.value);
}

// The queue: Redis (--redis) or the store; the flags of the other one are refused.
void read_queue(Settings& s, Config& c) {
  c.redis = s.contains("redis");
  if (c.redis && s.contains("store")) usage_error("give --store or --redis, not both");
  if (c.redis && s.contains("sync")) usage_error("--sync applies to --store, not to --redis");
  if (c.redis && s.contains("horizon"))
    usage_error("--horizon applies to --store, not to --redis");
  if (c.redis && s.contains("memtable-mb"))
    usage_error("--memtable-mb applies to --store, not to --redis");
  if (c.redis && s.contains("backup-dir"))
    usage_error("--backup-dir applies to --store; a Redis queue is backed up by Redis itself");
  if (!c.redis && (s.contains("queue") || s.contains("shards") ||
                   s.contains("redis-password-file") || s.contains("redis-replicas-to-ack") ||
                   s.contains("redis-replicas-timeout")))
    usage_error("--queue, --shards, --redis-password-file and --redis-replicas-* apply to --redis "
                "only");
  if (c.redis) {
    c.redis_options.url = value(s, "redis");
    read_redis_password(s, c.redis_options);
    if (s.contains("queue")) c.redis_options.queue = value(s, "queue");
    read_limits(s, c.redis_options.limits, c.api);
    c.redis_options.shards = static_cast<uint32_t>(number(s, "shards", 1, 1, 1024));
    // WAIT's bounds: open_redis's own check (at most 16 replicas, a timeout under call_timeout).
    c.redis_options.replicas_to_ack =
        static_cast<uint32_t>(number(s, "redis-replicas-to-ack", 0, 0, 16, "replicas"));
    c.redis_options.replicas_timeout = std::chrono::milliseconds(
        number(s, "redis-replicas-timeout", 1000, 1, 4999, "milliseconds"));
    c.api.backend = "redis";
    return;
  }
  c.store.dir = s.contains("store") ? value(s, "store") : "delayq-data";
  if (s.contains("sync")) {
    auto mode = parse_sync(value(s, "sync"));
    if (!mode) usage_error(s["sync"].where + ": " + mode.status().message());
    c.store.sync = *mode;
  }
  if (s.contains("horizon"))
    c.store.horizon = value(s, "horizon") == "off"
                          ? Duration::max()
                          : Duration(seconds(s, "horizon", 0, 1, 3153600000));
  if (s.contains("memtable-mb"))
    c.store.memtable_bytes = number(s, "memtable-mb", 16, 1, 1024, "MiB") << 20;
  read_limits(s, c.store.engine.limits, c.api);
  if (s.contains("backup-dir")) c.backup_dir = value(s, "backup-dir");
}

}  // namespace

Config read_config(int argc, char** argv) {
  Settings s = parse_flags(argc, argv);
  if (auto it = s.find("config"); it != s.end()) {
    for (auto& [k, v] : parse_config(it->second.value)) s.try_emplace(k, v);  // flags win
  }
  Config c;
  read_server(s, c.server);
  read_api(s, c.api);
  read_queue(s, c);
  return c;
}

}  // namespace delayq::http
