// What a delayq command line asks for (see invocation.h).
//
// Hand-written rather than CLI11 (Debian 12: libcli11-dev 2.1.2), on purpose. CLI11 answers a
// mistyped flag with "The following arguments were not expected: --dealy" and an unknown command
// with "A subcommand is required", never with a guess; "unknown flag '--dealy' (did you mean
// '--delay'?)" would mean catching its errors and matching the names again here anyway. Its
// checks speak its own words ("--delay: Value -5s not in range ..."), where ours name the rule
// and the limit, and a flag's value goes through parse.cc whatever parses the line. And its
// headers are some 9400 lines (including <CLI/CLI.hpp> alone takes about 4 s to compile here),
// in a build near its time budget. What remains here is a table of flags and a loop.
#include "cli/invocation.h"
#include "cli/settings_file.h"

#include <cstdlib>
#include <string_view>

#include "cli/parse.h"
#include "redis/connection.h"
#include "wire/fields.h"

namespace delayq::cli {

namespace {

constexpr const char* kTargetHelp =
    R"(TARGET is one of:
  --store DIR                  the embedded store in DIR (no delayqd may have it open;
                               the commands that only read open it read-only)
  --url http://HOST:PORT       a running delayqd   [--token-file FILE: its bearer token]
                               (DELAYQ_URL and DELAYQ_TOKEN_FILE in the environment stand
                               for them, then url and token-file in the settings file,
                               DELAYQ_CONFIG or ~/.config/delayq/cli.conf; a flag wins over
                               its variable, a variable over the file, and any target flag
                               over both)
  --redis URL                  a Redis queue (redis://host:port or unix:///path)
                               [--queue NAME (default "default")] [--shards N (default:
                               the queue's own count; 1 for a new queue)]
                               [--redis-password-file FILE: its AUTH password, alone in
                               FILE; or DELAYQ_REDIS_PASSWORD, then redis-password-file in
                               the settings file] (an ACL user: redis://USER@host:port;
                               a password in the URL is refused: ps shows it to all)
                               [--redis-replicas-to-ack N (0 to 16, default 0)
                               --redis-replicas-timeout MS (1 to 4999, default 1000):
                               a write answers once N replicas have it (WAIT)]
Add --json to any command for one JSON document on stdout instead of text.
)";

const std::vector<CommandInfo>& commands() {
  static const std::vector<CommandInfo> kCommands = {
      {"push",
       "push TOPIC [--id ID] [--delay DUR | --due-at TIME] [--ttr DUR]\n"
       "            [--body TEXT | --body-file FILE (- for stdin)] [--retry POLICY]\n"
       "            [--priority N]",
       "add a job; prints its id. DUR: 1500ms, 90s, 5min, 2h30m, 3d. TIME: RFC 3339\n"
       "  (2026-11-21T14:03:05Z, ...+01:00) or unix seconds. POLICY: list:2m,10m,1h |\n"
       "  fixed:30s:5 (delay, attempts) | exp:1s:2:1h:10[:0.2] (base, factor, cap,\n"
       "  attempts, jitter). N: 0 to 4294967295, smaller first (default 1024)",
       {"id", "delay", "due-at", "ttr", "body", "body-file", "retry", "priority"},
       Access::create},
      {"get", "get ID", "show one job", {}, Access::read},
      {"cancel", "cancel ID", "remove a job, in any state", {}, Access::write},
      {"stats", "stats", "jobs per topic and state, and the queue's totals", {}, Access::read},
      {"dead list",
       "dead list TOPIC [--limit N]",
       "the dead letters of a topic, oldest first (at most N, default 100)",
       {"limit"},
       Access::read},
      {"dead requeue",
       "dead requeue ID | dead requeue --topic TOPIC",
       "put one dead job, or every dead job of a topic, back as ready now",
       {"topic"},
       Access::write},
      {"dead purge", "dead purge TOPIC", "delete every dead job of a topic", {}, Access::write},
      {"ls",
       "ls TOPIC --state delayed|ready|reserved|dead [--limit N] [--cursor C] [--all]",
       "a page of the topic's jobs in one state (N per page, 1 to 1000, default 100), in\n"
       "  that state's order; the cursor of the next page goes to stderr; --all lists every\n"
       "  page",
       {"state", "limit", "cursor", "all"},
       Access::read},
      {"limits", "limits", "the limited topics: rate, burst, tokens, in flight, refusals", {},
       Access::read},
      {"limits set",
       "limits set TOPIC [--rate COUNT/PERIOD] [--burst N] [--max-in-flight N]",
       "limit a topic's hand-outs for every consumer: at most COUNT per PERIOD (50/1s,\n"
       "  1000/1min), bursts of N (1 to 1000000, default 1), at most N reserved at once;\n"
       "  replaces the topic's limits",
       {"rate", "burst", "max-in-flight"},
       Access::write},
      {"limits clear", "limits clear TOPIC", "remove a topic's limits", {}, Access::write},
      {"pause",
       "pause TOPIC",
       "stop handing out the topic's jobs (they keep falling due; kept across restarts)",
       {},
       Access::write},
      {"resume",
       "resume TOPIC",
       "hand out a paused topic's jobs again, in due order",
       {},
       Access::write},
      {"schedule add",
       "schedule add ID --rule RULE --topic TOPIC [--zone ZONE]\n"
       "            [--body TEXT | --body-file FILE (- for stdin)] [--ttr DUR]\n"
       "            [--retry POLICY] [--priority N] [--start TIME] [--end TIME]\n"
       "            [--catch-up skip|one|all] [--catch-up-max N] [--overlap allow|skip]",
       "create the schedule ID, or replace it: each occurrence of RULE pushes one job to\n"
       "  TOPIC. RULE: \"every 90s\" (ms, s, m, h, d), a cron expression of 5 fields (6\n"
       "  with seconds first) read in ZONE (an IANA zone, default UTC), or @daily, @hourly,\n"
       "  ... Missed occurrences (downtime, a pause): --catch-up one (default) pushes one,\n"
       "  all up to N (1 to 10000, default 100), skip none; --overlap skip pushes nothing\n"
       "  while the previous occurrence's job lives",
       {"rule", "zone", "topic", "body", "body-file", "ttr", "retry", "priority", "start", "end",
        "catch-up", "catch-up-max", "overlap"},
       Access::create},
      {"schedule get", "schedule get ID",
       "show a schedule: its rule, job, next runs, the last one fired, its live jobs", {},
       Access::read},
      {"schedule ls",
       "schedule ls [--limit N] [--cursor C] [--all]",
       "a page of the schedules in id order (N per page, 1 to 1000, default 100); the\n"
       "  cursor of the next page goes to stderr; --all lists every page",
       {"limit", "cursor", "all"},
       Access::read},
      {"schedule pause", "schedule pause ID",
       "the schedule pushes nothing until resumed (what falls meanwhile is missed)", {},
       Access::write},
      {"schedule resume", "schedule resume ID",
       "run a paused schedule again, its missed occurrences by its --catch-up", {},
       Access::write},
      {"schedule rm", "schedule rm ID", "remove a schedule; the jobs it pushed stay", {},
       Access::write},
      {"backup",
       "backup DIR",
       "a consistent copy of the queue, taken while it serves: with --store, into the new\n"
       "  directory DIR (no process may hold the store); with --url, into DIR, a name under\n"
       "  the daemon's --backup-dir. Restore: stop the daemon, put the copy in the store's\n"
       "  place, start it",
       {},
       Access::write},
      {"wait",
       "wait [--timeout DUR]",
       "wait until the delayqd at the URL (--url or DELAYQ_URL) answers /health, at most\n"
       "  DUR (default 10s, at most 1h; 0: ask once); exit 1 if it does not. After\n"
       "  `delayqd ... &`, before the first call",
       {"timeout"},
       Access::read},
      {"help", "help [COMMAND]", "this text, or one command's", {}, Access::read},
  };
  return kCommands;
}

const std::set<std::string> kTargetFlags = {"store",  "url",    "token-file",
                                            "redis",  "queue",  "shards",
                                            "redis-password-file", "redis-replicas-to-ack",
                                            "redis-replicas-timeout"};
const std::set<std::string> kValueFlags = {"store",  "url",       "token-file", "redis",  "queue",
                                           "redis-password-file",
                                           "shards", "id",        "delay",      "due-at", "ttr",
                                           "body",   "body-file", "retry",      "limit",  "topic",
                                           "timeout", "priority", "state", "cursor", "rate",
                                           "burst", "max-in-flight", "redis-replicas-to-ack",
                                           "redis-replicas-timeout", "rule", "zone", "start",
                                           "end", "catch-up", "catch-up-max", "overlap"};

// " (did you mean '--delay'?)" for a mistyped flag, "" when no flag is close.
std::string did_you_mean(std::string_view typed) {
  std::vector<std::string_view> names(kValueFlags.begin(), kValueFlags.end());
  names.insert(names.end(), {"json", "help", "version", "all"});
  const std::string_view best = wire::closest_name(typed, names);
  return best.empty() ? "" : " (did you mean '--" + std::string(best) + "'?)";
}

}  // namespace

const CommandInfo* find_command(const std::string& name) {
  for (const CommandInfo& c : commands())
    if (name == c.name) return &c;
  return nullptr;
}

std::string full_usage() {
  std::string s = "usage: delayq TARGET COMMAND [ARGS] [--json]\n\nCommands:\n";
  for (const CommandInfo& c : commands()) {
    std::string summary = c.summary;
    for (size_t at = 0; (at = summary.find('\n', at)) != std::string::npos; at += 5)
      summary.replace(at, 1, "\n    ");
    s += "  " + std::string(c.usage) + "\n      " + summary + "\n";
  }
  return s + "\n" + kTargetHelp + "--version prints \"delayq VERSION\".\n" +
         "\nExit status: 0 ok, 1 the call failed, 2 bad usage. docs/cli.md has examples.\n";
}

std::string command_usage(const CommandInfo& c) {
  return "usage: delayq TARGET " + std::string(c.usage) + "\n";
}

std::string command_help(const CommandInfo& c) {
  return command_usage(c) + "  " + c.summary + "\n\n" + kTargetHelp;
}

std::optional<UsageError> split_args(const std::vector<std::string>& args, Invocation& inv) {
  std::optional<UsageError> problem;
  const auto note = [&](std::string message) {
    if (!problem) problem = UsageError{std::move(message)};
  };
  bool only_positional = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_positional || a.size() < 2 || a[0] != '-') {
      inv.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positional = true;
      continue;
    }
    if (a == "-h" || a == "--help") {
      inv.help = true;
      continue;
    }
    if (a == "--version") {
      inv.version = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) {
      note("unknown flag '" + a + "'");
      continue;
    }
    std::string name = a.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (name == "json") {
      if (inline_value) note("--json takes no value");
      inv.json = true;
      continue;
    }
    if (name == "all") {  // a switch, kept with the flags so that check_args can place it
      if (inline_value) note("--all takes no value");
      inv.flags[name] = "";
      continue;
    }
    if (!kValueFlags.contains(name)) {
      note("unknown flag '--" + name + "'" + did_you_mean(name));
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) {
        note("--" + name + " needs a value");
        continue;
      }
      value = args[++i];
    }
    if (inv.flags.contains(name)) {
      note("--" + name + " given twice");
      continue;
    }
    inv.flags[name] = value;
  }
  return problem;
}

bool take_command_name(Invocation& inv) {
  const std::vector<std::string>& p = inv.positional;
  size_t consumed = p.empty() ? 0 : 1;
  inv.name = p.empty() ? "" : p[0];
  if (inv.name == "dead" || inv.name == "schedule") {
    if (p.size() < 2) return false;
    inv.name += " " + p[1];
    consumed = 2;
  }
  // "limits" alone lists the limits; "limits set" and "limits clear" change them.
  if (inv.name == "limits" && p.size() > 1 && (p[1] == "set" || p[1] == "clear")) {
    inv.name += " " + p[1];
    consumed = 2;
  }
  inv.rest.assign(p.begin() + static_cast<long>(consumed), p.end());
  return true;
}

std::optional<UsageError> check_args(const Invocation& inv, const CommandInfo& command) {
  const std::string& name = inv.name;
  const auto bad = [&](std::string why) { return UsageError{std::move(why), &command}; };
  for (const auto& [flag, value] : inv.flags)
    if (!kTargetFlags.contains(flag) && !command.flags.contains(flag))
      return bad("--" + flag + " does not apply to " + name);
  const std::vector<std::string>& rest = inv.rest;
  const bool by_topic = name == "dead requeue" && inv.flags.contains("topic");
  if (by_topic && !rest.empty()) return bad("give an ID or --topic TOPIC, not both");
  const size_t want =
      name == "stats" || name == "wait" || name == "limits" || name == "schedule ls" || by_topic
          ? 0
          : 1;
  if (rest.size() < want) {
    const bool by_id = name == "get" || name == "cancel" || name == "dead requeue" ||
                       name.rfind("schedule ", 0) == 0;
    const std::string what = by_id ? "ID" : name == "backup" ? "DIR" : "TOPIC";
    return bad(name + " needs " + (what == "ID" ? "an " : "a ") + what);
  }
  if (rest.size() > want) return bad("unexpected argument '" + rest[want] + "'");
  if (want == 1 && rest[0].empty()) return bad("an empty argument");
  return std::nullopt;
}

std::optional<UsageError> read_target(const Invocation& inv, const CommandInfo& command,
                                      Target& target) {
  const auto bad = [&](std::string why) { return UsageError{std::move(why), &command}; };
  const auto& f = inv.flags;
  const auto flag = [&](const char* name) { return f.contains(name) ? f.at(name) : ""; };
  const int targets = f.contains("store") + f.contains("url") + f.contains("redis");
  if (targets > 1) return bad("give one target: --store, --url or --redis, not several");
  if (f.contains("token-file") && targets == 1 && !f.contains("url"))
    return bad("--token-file applies to --url only");
  if ((f.contains("queue") || f.contains("shards") || f.contains("redis-password-file") ||
       f.contains("redis-replicas-to-ack") || f.contains("redis-replicas-timeout")) &&
      !f.contains("redis"))
    return bad("--queue, --shards, --redis-password-file and --redis-replicas-* apply to --redis "
               "only");
  // Not the url itself: it holds the password.
  if (redis::mask_url(flag("redis")) != flag("redis"))
    return bad("--redis holds a password, which every user of this machine can read in the "
               "process list: put it alone in a file named by --redis-password-file FILE (or by "
               "redis-password-file in the settings file), or in DELAYQ_REDIS_PASSWORD");
  target.store_dir = flag("store");
  target.url = flag("url");
  target.token_file = flag("token-file");
  target.redis_url = flag("redis");
  target.queue = flag("queue");
  // The environment, under the flags: DELAYQ_URL when no flag names a target, and
  // DELAYQ_TOKEN_FILE for a --url (from either) without --token-file.
  const char* env_url = std::getenv("DELAYQ_URL");
  const bool url_from_env = targets == 0 && env_url != nullptr && *env_url != '\0';
  if (url_from_env) {
    target.url = env_url;
    target.url_source = "DELAYQ_URL";
  }
  // Then the settings file (settings_file.h), under the environment.
  Result<Settings> file = read_settings();
  if (!file) return bad(file.status().message());
  const bool url_from_file = targets == 0 && !url_from_env && file->url.has_value();
  if (url_from_file) {
    target.url = *file->url;
    target.url_source = file->url_source;
  }
  if (targets == 0 && !url_from_env && !url_from_file)
    return bad("no target: give --store DIR, --url http://HOST:PORT (or DELAYQ_URL, or url in "
               "~/.config/delayq/cli.conf) or --redis URL");
  const char* env_token = std::getenv("DELAYQ_TOKEN_FILE");
  if (!target.url.empty() && !f.contains("token-file")) {
    if (env_token != nullptr && *env_token != '\0') {
      target.token_file = env_token;
      target.token_source = "DELAYQ_TOKEN_FILE";
    } else if (file->token_file) {
      target.token_file = *file->token_file;
      target.token_source = file->token_source;
    }
  }
  // The Redis password, as the token: the flag, then the environment, then the settings file.
  const char* env_password = std::getenv("DELAYQ_REDIS_PASSWORD");
  if (f.contains("redis-password-file")) {
    target.redis_password_file = flag("redis-password-file");
  } else if (env_password != nullptr && *env_password != '\0') {
    target.redis_password = env_password;
  } else if (file->redis_password_file) {
    target.redis_password_file = *file->redis_password_file;
    target.redis_password_source = file->redis_password_source;
  }
  if (f.contains("store") && target.store_dir.empty()) return bad("--store needs a directory");
  if (f.contains("redis") && target.redis_url.empty()) return bad("--redis needs a URL");
  if (!target.url.empty() || f.contains("url"))
    if (auto u = parse_url_flag(target.url, target.url_source); !u)
      return bad(u.status().message());
  if (f.contains("shards")) {
    auto n = parse_count(flag("shards"), 1, 1024);
    if (!n) return bad("bad --shards: " + n.status().message());
    target.shards = static_cast<uint32_t>(*n);
  }
  // WAIT's bounds, as delayqd's flags of the same names (the timeout under the 5 s call_timeout).
  if (f.contains("redis-replicas-to-ack")) {
    auto n = parse_count(flag("redis-replicas-to-ack"), 0, 16);
    if (!n) return bad("bad --redis-replicas-to-ack: " + n.status().message());
    target.replicas_to_ack = static_cast<uint32_t>(*n);
  }
  if (f.contains("redis-replicas-timeout")) {
    auto n = parse_count(flag("redis-replicas-timeout"), 1, 4999);
    if (!n) return bad("bad --redis-replicas-timeout: " + n.status().message() + " (milliseconds)");
    target.replicas_timeout_ms = static_cast<uint32_t>(*n);
  }
  return std::nullopt;
}

}  // namespace delayq::cli
