// The delayq command-line tool (see commands.h and docs/cli.md): push, get, cancel, stats, the
// dead-letter commands and backup against a store directory, a running delayqd, or Redis.
// Long: each command's argument checks and its text and JSON output are kept together here.
#include "cli/commands.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "cli/backend.h"
#include "cli/parse.h"
#include "wire/json.h"

namespace delayq::cli {

namespace {

namespace json = delayq::wire::json;

constexpr const char* kTargetHelp =
    R"(TARGET is one of:
  --store DIR                  the embedded store in DIR (no delayqd may have it open;
                               get, stats and dead list open it read-only)
  --url http://HOST:PORT       a running delayqd   [--token-file FILE: its bearer token]
  --redis URL                  a Redis queue (redis://host:port or unix:///path)
                               [--queue NAME (default "default")] [--shards N (default 1)]
Add --json to any command for one JSON document on stdout instead of text.
)";

struct CommandInfo {
  const char* name;
  const char* usage;  // after "delayq TARGET "
  const char* summary;
  std::set<std::string> flags;  // command flags it takes (the target flags are always allowed)
  Access access;
};

const std::vector<CommandInfo>& commands() {
  static const std::vector<CommandInfo> kCommands = {
      {"push",
       "push TOPIC [--id ID] [--delay DUR | --due-at TIME] [--ttr DUR]\n"
       "            [--body TEXT | --body-file FILE (- for stdin)] [--retry POLICY]",
       "add a job; prints its id. DUR: 1500ms, 90s, 5min, 2h30m, 3d. TIME: RFC 3339\n"
       "  (2026-11-21T14:03:05Z, ...+01:00) or unix seconds. POLICY: list:2m,10m,1h |\n"
       "  fixed:30s:5 (delay, attempts) | exp:1s:2:1h:10[:0.2] (base, factor, cap,\n"
       "  attempts, jitter)",
       {"id", "delay", "due-at", "ttr", "body", "body-file", "retry"},
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
      {"backup",
       "backup DIR",
       "a consistent copy of the queue, taken while it serves: with --store, into the new\n"
       "  directory DIR (no process may hold the store); with --url, into DIR, a name under\n"
       "  the daemon's --backup-dir. Restore: stop the daemon, put the copy in the store's\n"
       "  place, start it",
       {},
       Access::write},
      {"help", "help [COMMAND]", "this text, or one command's", {}, Access::read},
  };
  return kCommands;
}

const CommandInfo* find_command(const std::string& name) {
  for (const CommandInfo& c : commands())
    if (name == c.name) return &c;
  return nullptr;
}

const std::set<std::string> kTargetFlags = {"store", "url",   "token-file",
                                            "redis", "queue", "shards"};
const std::set<std::string> kValueFlags = {"store",  "url",       "token-file", "redis",  "queue",
                                           "shards", "id",        "delay",      "due-at", "ttr",
                                           "body",   "body-file", "retry",      "limit",  "topic"};

std::string full_usage() {
  std::string s = "usage: delayq TARGET COMMAND [ARGS] [--json]\n\nCommands:\n";
  for (const CommandInfo& c : commands()) {
    std::string summary = c.summary;
    for (size_t at = 0; (at = summary.find('\n', at)) != std::string::npos; at += 5)
      summary.replace(at, 1, "\n    ");
    s += "  " + std::string(c.usage) + "\n      " + summary + "\n";
  }
  return s + "\n" + kTargetHelp +
         "\nExit status: 0 ok, 1 the call failed, 2 bad usage. docs/cli.md has examples.\n";
}

std::string command_usage(const CommandInfo& c) {
  return "usage: delayq TARGET " + std::string(c.usage) + "\n";
}

// A bad-usage exit: the message, then the usage line of the command when it is known.
struct UsageError {
  std::string message;
  const CommandInfo* command = nullptr;
};

struct Invocation {
  std::map<std::string, std::string> flags;
  std::vector<std::string> positional;
  bool json = false;
  bool help = false;
};

// Splits flags from positional arguments. Keeps going after a problem so that the command (a
// positional argument) is known for the usage line; returns the first problem.
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
    if (!kValueFlags.contains(name)) {
      note("unknown flag '--" + name + "'");
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

// ---- output helpers --------------------------------------------------------------------------

// Columns as wide as their widest cell (in characters, not bytes); numbers right-aligned.
std::string table(const std::vector<std::vector<std::string>>& rows,
                  const std::vector<bool>& right) {
  const auto width = [](const std::string& s) {
    return static_cast<size_t>(std::count_if(
        s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
  };
  std::vector<size_t> w;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (w.size() <= i) w.push_back(0);
      w[i] = std::max(w[i], width(row[i]));
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      const std::string pad(w[i] - width(row[i]), ' ');
      const bool last = i + 1 == row.size();
      if (i > 0) line += "  ";
      if (i < right.size() && right[i])
        line += pad + row[i];
      else
        line += last ? row[i] : row[i] + pad;
    }
    out += line + "\n";
  }
  return out;
}

int64_t unix_ms(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
int64_t ms(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

void write_job(json::Writer& w, const JobInfo& j) {
  w.begin_object().key("id").value(j.id).key("topic").value(j.topic);
  w.key("state").value(to_string(j.state)).key("attempts").value(j.attempts);
  w.key("max_attempts").value(j.max_attempts);
  w.key("due").value(format_utc_time(j.due)).key("due_ms").value(unix_ms(j.due));
  w.key("ttr_ms").value(ms(j.ttr));
  if (j.state == JobState::reserved) {
    w.key("lease_deadline").value(format_utc_time(j.lease_deadline));
    w.key("lease_deadline_ms").value(unix_ms(j.lease_deadline));
  }
  w.key("body").value(j.body).end_object();
}

std::string when(TimePoint t, TimePoint now) {
  return format_local_time(t) + " (" + format_relative(t, now) + ")";
}

// ---- the commands ----------------------------------------------------------------------------

struct Context {
  Invocation& inv;
  const CommandInfo& command;
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
  std::string what;  // "get o-42": names the call in error messages
};

// Where a refusal goes: the line on stderr always, and with --json one JSON document on stdout
// too, so that a script piping stdout to jq gets a document it can test (.error) instead of
// empty input: {"error":"not_found","message":"no job with id ..."}. "error" is the Errc's
// name (as delayqd's answers have it), or "usage" for bad usage (exit 2).
struct Streams {
  std::ostream& out;
  std::ostream& err;
  bool json;
};

void json_error(const Streams& io, std::string_view error, const std::string& message) {
  if (!io.json) return;
  json::Writer w;
  w.begin_object().key("error").value(error).key("message").value(message).end_object();
  io.out << w.str() << "\n";
}

int failed(Context& c, const Status& s) {
  c.err << "delayq: " << c.what << ": " << s.to_string() << "\n";
  json_error({c.out, c.err, c.inv.json}, to_string(static_cast<Errc>(s.code().value())),
             s.message());
  return kExitFailed;
}

int usage(const Streams& io, const UsageError& u) {
  const std::string message =
      (u.command != nullptr ? std::string(u.command->name) + ": " : "") + u.message;
  io.err << "delayq: " << message << "\n";
  if (u.command != nullptr)
    io.err << command_usage(*u.command);
  else
    io.err << "usage: delayq TARGET COMMAND [ARGS] [--json] (delayq help lists the commands)\n";
  json_error(io, "usage", message);
  return kExitUsage;
}

// Builds the push's JobSpec from the flags; a UsageError names the flag that is wrong.
std::optional<UsageError> push_spec(Context& c, JobSpec& spec) {
  auto& f = c.inv.flags;
  const auto bad = [&](const std::string& flag, const Status& s) {
    return UsageError{"--" + flag + ": " + s.message(), &c.command};
  };
  spec.topic = c.inv.positional[1];
  if (spec.topic.empty()) return UsageError{"the TOPIC is empty", &c.command};
  if (f.contains("id")) {
    spec.id = f["id"];
    if (spec.id.empty()) return UsageError{"--id is empty", &c.command};
  }
  if (f.contains("delay") && f.contains("due-at"))
    return UsageError{"give --delay or --due-at, not both", &c.command};
  if (f.contains("delay")) {
    auto d = parse_duration(f["delay"]);
    if (!d) return bad("delay", d.status());
    spec.delay = *d;
  }
  if (f.contains("due-at")) {
    auto t = parse_time(f["due-at"]);
    if (!t) return bad("due-at", t.status());
    spec.due_at = *t;
  }
  if (f.contains("ttr")) {
    auto d = parse_duration(f["ttr"]);
    if (!d) return bad("ttr", d.status());
    spec.ttr = *d;
  }
  if (f.contains("retry")) {
    auto p = parse_retry(f["retry"]);
    if (!p) return bad("retry", p.status());
    spec.retry = std::move(*p);
  }
  if (f.contains("body") && f.contains("body-file"))
    return UsageError{"give --body or --body-file, not both", &c.command};
  if (f.contains("body")) spec.body = f["body"];
  if (f.contains("body-file")) {
    const std::string& path = f["body-file"];
    if (path == "-") {
      spec.body.assign(std::istreambuf_iterator<char>(c.in), {});
    } else {
      std::ifstream file(path, std::ios::binary);
      if (!file)
        return UsageError{"cannot read --body-file " + path + ": " + std::strerror(errno),
                          &c.command};
      spec.body.assign(std::istreambuf_iterator<char>(file), {});
    }
  }
  return std::nullopt;
}

int do_push(Context& c, Backend& b, JobSpec spec) {
  const TimePoint now = SystemClock::instance().now();
  const TimePoint due =
      spec.due_at ? std::max(*spec.due_at, now) : now + spec.delay.value_or(Duration(0));
  const std::string topic = spec.topic;
  auto id = b.push(std::move(spec));
  if (!id) return failed(c, id.status());
  if (c.inv.json) {
    json::Writer w;
    w.begin_object().key("id").value(*id).key("topic").value(topic);
    w.key("due").value(format_utc_time(due)).key("due_ms").value(unix_ms(due)).end_object();
    c.out << w.str() << "\n";
  } else {
    c.out << "pushed " << printable(*id) << " to topic " << printable(topic) << ", due "
          << when(due, now) << "\n";
  }
  return kExitOk;
}

int do_get(Context& c, Backend& b, const std::string& id) {
  auto job = b.get(id);
  if (!job) return failed(c, job.status());
  if (c.inv.json) {
    json::Writer w;
    write_job(w, *job);
    c.out << w.str() << "\n";
    return kExitOk;
  }
  const TimePoint now = SystemClock::instance().now();
  const JobInfo& j = *job;
  std::vector<std::vector<std::string>> rows = {
      {"id", printable(j.id)},
      {"topic", printable(j.topic)},
      {"state", to_string(j.state)},
      {j.state == JobState::delayed ? "due" : "was due", when(j.due, now)},
      {"attempts", std::to_string(j.attempts) + " of " + std::to_string(j.max_attempts)},
      {"ttr", format_span(j.ttr)},
  };
  if (j.state == JobState::reserved) rows.push_back({"lease until", when(j.lease_deadline, now)});
  rows.push_back({"body", j.body.empty() ? "(empty)" : printable(j.body)});
  rows.push_back({"body bytes", std::to_string(j.body.size())});
  c.out << table(rows, {});
  return kExitOk;
}

int do_cancel(Context& c, Backend& b, const std::string& id) {
  if (Status s = b.cancel(id); !s.ok()) return failed(c, s);
  if (c.inv.json) {
    json::Writer w;
    w.begin_object().key("id").value(id).key("cancelled").value(true).end_object();
    c.out << w.str() << "\n";
  } else {
    c.out << "cancelled " << printable(id) << "\n";
  }
  return kExitOk;
}

int do_stats(Context& c, Backend& b) {
  auto st = b.stats();
  if (!st) return failed(c, st.status());
  TopicStats total;
  for (const auto& [name, t] : st->topics) {
    total.delayed += t.delayed;
    total.ready += t.ready;
    total.reserved += t.reserved;
    total.dead += t.dead;
  }
  const std::vector<std::pair<const char*, uint64_t>> counters = {
      {"pushed", st->pushed},
      {"delivered", st->delivered},
      {"acked", st->acked},
      {"retried", st->retried},
      {"dead_lettered", st->dead_lettered},
      {"leases_expired", st->leases_expired},
      {"cancelled", st->cancelled},
      {"requeued", st->requeued},
      {"purged", st->purged}};
  if (c.inv.json) {
    const auto topic = [](json::Writer& w, const TopicStats& t) {
      w.begin_object().key("delayed").value(t.delayed).key("ready").value(t.ready);
      w.key("reserved").value(t.reserved).key("dead").value(t.dead).end_object();
    };
    json::Writer w;
    w.begin_object().key("topics").begin_object();
    for (const auto& [name, t] : st->topics) topic(w.key(name), t);
    w.end_object();
    topic(w.key("total"), total);
    for (const auto& [name, n] : counters) w.key(name).value(n);
    w.end_object();
    c.out << w.str() << "\n";
    return kExitOk;
  }
  if (st->topics.empty()) {
    c.out << "no jobs\n";
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"TOPIC", "DELAYED", "READY", "RESERVED", "DEAD"}};
    const auto row = [](std::string name, const TopicStats& t) {
      return std::vector<std::string>{std::move(name), std::to_string(t.delayed),
                                      std::to_string(t.ready), std::to_string(t.reserved),
                                      std::to_string(t.dead)};
    };
    for (const auto& [name, t] : st->topics) rows.push_back(row(printable(name), t));
    rows.push_back(row("(total)", total));
    c.out << table(rows, {false, true, true, true, true});
  }
  c.out << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& [name, n] : counters) {
    std::string label = name;
    std::replace(label.begin(), label.end(), '_', ' ');
    rows.push_back({label, std::to_string(n)});
  }
  c.out << table(rows, {false, true});
  return kExitOk;
}

int do_dead_list(Context& c, Backend& b, const std::string& topic) {
  size_t limit = 100;
  if (c.inv.flags.contains("limit")) {
    auto n = parse_count(c.inv.flags["limit"], 1, 10'000);
    if (!n)
      return usage({c.out, c.err, c.inv.json},
                   {"bad --limit: " + n.status().message(), &c.command});
    limit = *n;
  }
  auto jobs = b.list_dead(topic, limit);
  if (!jobs) return failed(c, jobs.status());
  if (c.inv.json) {
    json::Writer w;
    w.begin_object().key("topic").value(topic).key("jobs").begin_array();
    for (const JobInfo& j : *jobs) write_job(w, j);
    w.end_array().end_object();
    c.out << w.str() << "\n";
    return kExitOk;
  }
  if (jobs->empty()) {
    c.out << "no dead letters in topic " << printable(topic) << "\n";
    return kExitOk;
  }
  const TimePoint now = SystemClock::instance().now();
  std::vector<std::vector<std::string>> rows = {{"ID", "ATTEMPTS", "LAST DUE", "BODY"}};
  for (const JobInfo& j : *jobs)
    rows.push_back({printable(j.id),
                    std::to_string(j.attempts) + "/" + std::to_string(j.max_attempts),
                    when(j.due, now), printable(j.body, 60)});
  c.out << table(rows, {false, true, false, false});
  c.out << jobs->size() << " dead letter" << (jobs->size() == 1 ? "" : "s") << " in topic "
        << printable(topic) << (jobs->size() == limit ? " (the --limit was reached)" : "") << "\n";
  return kExitOk;
}

int do_requeue(Context& c, Backend& b) {
  uint64_t n = 1;
  const bool by_topic = c.inv.flags.contains("topic");
  if (by_topic) {
    auto r = b.requeue_dead_topic(c.inv.flags["topic"]);
    if (!r) return failed(c, r.status());
    n = *r;
  } else if (Status s = b.requeue_dead(c.inv.positional[2]); !s.ok()) {
    return failed(c, s);
  }
  if (c.inv.json) {
    json::Writer w;
    w.begin_object().key("requeued").value(n).end_object();
    c.out << w.str() << "\n";
  } else if (by_topic) {
    c.out << "requeued " << n << " dead letter" << (n == 1 ? "" : "s") << " of topic "
          << printable(c.inv.flags["topic"]) << "\n";
  } else {
    c.out << "requeued " << printable(c.inv.positional[2]) << "\n";
  }
  return kExitOk;
}

int do_purge(Context& c, Backend& b, const std::string& topic) {
  auto n = b.purge_dead(topic);
  if (!n) return failed(c, n.status());
  if (c.inv.json) {
    json::Writer w;
    w.begin_object().key("purged").value(*n).end_object();
    c.out << w.str() << "\n";
  } else {
    c.out << "purged " << *n << " dead letter" << (*n == 1 ? "" : "s") << " of topic "
          << printable(topic) << "\n";
  }
  return kExitOk;
}

int do_backup(Context& c, Backend& b, const std::string& dir) {
  auto written = b.backup(dir);
  if (!written) return failed(c, written.status());
  if (c.inv.json) {
    json::Writer w;
    w.begin_object().key("dir").value(*written).end_object();
    c.out << w.str() << "\n";
  } else {
    c.out << "backed up to " << printable(*written)
          << " (a consistent copy; to restore it, stop the daemon, put the copy in the store's "
             "place, start it)\n";
  }
  return kExitOk;
}

}  // namespace

int run(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
        std::ostream& err) {
  Invocation inv;
  std::optional<UsageError> problem = split_args(args, inv);
  const Streams io{out, err, inv.json};

  // The command: "dead" takes a subcommand.
  std::string name = inv.positional.empty() ? "" : inv.positional[0];
  size_t consumed = inv.positional.empty() ? 0 : 1;
  if (name == "dead") {
    if (inv.positional.size() < 2) {
      if (problem) return usage(io, *problem);
      err << "delayq: dead needs a subcommand: list, requeue or purge\n";
      for (const char* sub : {"dead list", "dead requeue", "dead purge"})
        err << command_usage(*find_command(sub));
      json_error(io, "usage", "dead needs a subcommand: list, requeue or purge");
      return kExitUsage;
    }
    name += " " + inv.positional[1];
    consumed = 2;
  }
  const CommandInfo* command = name.empty() ? nullptr : find_command(name);
  if (problem) {
    problem->command = command;
    return usage(io, *problem);
  }
  if (name.empty()) {
    if (inv.help) {
      out << full_usage();
      return kExitOk;
    }
    err << "delayq: no command given\n" << full_usage();
    json_error(io, "usage", "no command given");
    return kExitUsage;
  }
  if (command == nullptr)
    return usage(io, {"unknown command '" + name + "' (delayq help lists the commands)"});
  if (inv.help || name == "help") {
    if (name == "help" && inv.positional.size() > 1) {
      std::string topic = inv.positional[1];
      if (topic == "dead" && inv.positional.size() > 2) topic += " " + inv.positional[2];
      const CommandInfo* about = find_command(topic);
      if (about == nullptr) return usage(io, {"no command '" + topic + "'", command});
      out << command_usage(*about) << "  " << about->summary << "\n\n" << kTargetHelp;
      return kExitOk;
    }
    if (name == "help") {
      out << full_usage();
      return kExitOk;
    }
    out << command_usage(*command) << "  " << command->summary << "\n\n" << kTargetHelp;
    return kExitOk;
  }

  // Flags that do not belong to this command.
  for (const auto& [flag, value] : inv.flags)
    if (!kTargetFlags.contains(flag) && !command->flags.contains(flag))
      return usage(io, {"--" + flag + " does not apply to " + name, command});

  // Positional arguments.
  const std::vector<std::string> rest(inv.positional.begin() + static_cast<long>(consumed),
                                      inv.positional.end());
  size_t want = 1;
  if (name == "stats") want = 0;
  if (name == "dead requeue") {
    if (inv.flags.contains("topic") && !rest.empty())
      return usage(io, {"give an ID or --topic TOPIC, not both", command});
    if (inv.flags.contains("topic")) want = 0;
  }
  if (rest.size() < want) {
    const std::string what = name == "get" || name == "cancel" || name == "dead requeue" ? "ID"
                             : name == "backup"                                          ? "DIR"
                                                                                         : "TOPIC";
    return usage(io, {name + " needs " + (what == "ID" ? "an " : "a ") + what, command});
  }
  if (rest.size() > want) return usage(io, {"unexpected argument '" + rest[want] + "'", command});
  if (want == 1 && rest[0].empty()) return usage(io, {"an empty argument", command});

  // The target: exactly one.
  auto& f = inv.flags;
  const int targets = f.contains("store") + f.contains("url") + f.contains("redis");
  if (targets == 0)
    return usage(io,
                 {"no target: give --store DIR, --url http://HOST:PORT or --redis URL", command});
  if (targets > 1)
    return usage(io, {"give one target: --store, --url or --redis, not several", command});
  if (f.contains("token-file") && !f.contains("url"))
    return usage(io, {"--token-file applies to --url only", command});
  if ((f.contains("queue") || f.contains("shards")) && !f.contains("redis"))
    return usage(io, {"--queue and --shards apply to --redis only", command});
  Target target;
  target.store_dir = f.contains("store") ? f["store"] : "";
  target.url = f.contains("url") ? f["url"] : "";
  target.token_file = f.contains("token-file") ? f["token-file"] : "";
  target.redis_url = f.contains("redis") ? f["redis"] : "";
  target.queue = f.contains("queue") ? f["queue"] : "";
  if (f.contains("store") && target.store_dir.empty())
    return usage(io, {"--store needs a directory", command});
  if (f.contains("redis") && target.redis_url.empty())
    return usage(io, {"--redis needs a URL", command});
  if (f.contains("url")) {
    if (auto u = parse_url_flag(target.url); !u) return usage(io, {u.status().message(), command});
  }
  if (f.contains("shards")) {
    auto n = parse_count(f["shards"], 1, 1024);
    if (!n) return usage(io, {"bad --shards: " + n.status().message(), command});
    target.shards = static_cast<uint32_t>(*n);
  }

  Context c{inv, *command, in, out, err, name};
  if (name == "dead requeue" && f.contains("topic"))
    c.what += " --topic " + f["topic"];
  else if (!rest.empty())
    c.what += " " + rest[0];

  // Everything about the arguments is checked before the target is opened: a typo must not
  // cost a Redis connection or a store open.
  JobSpec spec;
  if (name == "push") {
    if (auto u = push_spec(c, spec)) return usage(io, *u);
  }
  if (name == "dead list" && f.contains("limit")) {
    if (auto n = parse_count(f["limit"], 1, 10'000); !n)
      return usage(io, {"bad --limit: " + n.status().message(), command});
  }
  if (name == "backup" && f.contains("redis"))
    return usage(io, {"backup takes --store or --url: a Redis queue is backed up by Redis "
                      "itself (BGSAVE, or redis-cli --rdb FILE)",
                      command});

  auto backend = open_backend(target, command->access);
  if (!backend) return failed(c, backend.status());
  Backend& b = **backend;
  if (name == "push") return do_push(c, b, std::move(spec));
  if (name == "get") return do_get(c, b, rest[0]);
  if (name == "cancel") return do_cancel(c, b, rest[0]);
  if (name == "stats") return do_stats(c, b);
  if (name == "dead list") return do_dead_list(c, b, rest[0]);
  if (name == "dead requeue") return do_requeue(c, b);
  if (name == "dead purge") return do_purge(c, b, rest[0]);
  if (name == "backup") return do_backup(c, b, rest[0]);
  return usage(io, {"unknown command '" + name + "'"});
}

}  // namespace delayq::cli
