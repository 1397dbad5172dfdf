// The delayq command-line tool (see commands.h and docs/cli.md): push, get, cancel, stats, the
// dead-letter commands and backup (flow_commands.cc and schedule_commands.cc have the others)
// against a store directory, a running delayqd, or Redis; each command's text and JSON output,
// written against the Queue interface (target.h opens it).
// What the command line asks for is read in invocation.cc.
// Over 400 lines: each command's call and its two outputs (a table for people, --json for
// scripts) stay side by side, so that the two cannot drift apart.
#include "cli/commands.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "cli/command_context.h"
#include "cli/flow_commands.h"
#include "cli/target.h"
#include "cli/human_text.h"
#include "cli/invocation.h"
#include "cli/parse.h"
#include "cli/schedule_commands.h"
#include "cli/stats_timing.h"
#include "cli/wait.h"
#include "wire/flow.h"
#include "wire/json.h"
#include "wire/spec.h"
#include "wire/version.h"

namespace delayq::cli {

namespace {

namespace json = delayq::wire::json;

// ---- output helpers --------------------------------------------------------------------------

// Builds the push's JobSpec from the flags; a UsageError names the flag that is wrong.
std::optional<UsageError> push_spec(Context& c, JobSpec& spec) {
  auto& f = c.inv.flags;
  spec.topic = c.inv.positional[1];
  if (spec.topic.empty()) return UsageError{"the TOPIC is empty", &c.command};
  if (f.contains("id")) {
    spec.id = f["id"];
    if (spec.id.empty()) return UsageError{"--id is empty", &c.command};
  }
  if (f.contains("delay") && f.contains("due-at"))
    return UsageError{"give --delay or --due-at, not both", &c.command};
  if (auto u = read_flag(c, "delay", parse_duration, spec.delay)) return u;
  if (auto u = read_flag(c, "due-at", parse_time, spec.due_at)) return u;
  if (auto u = read_flag(c, "ttr", parse_duration, spec.ttr)) return u;
  if (auto u = read_flag(c, "retry", parse_retry, spec.retry)) return u;
  if (auto u = read_flag(c, "priority", parse_priority_flag, spec.priority)) return u;
  return read_body(c, spec.body);
}

// A command's outcome: with --json one object {"<key>": value}, else `text`, each on a line.
template <typename Value>
int report(Context& c, std::string_view key, const Value& value, const std::string& text) {
  if (c.inv.json) {
    json::Writer w;
    w.begin_object().key(key).value(value).end_object();
    c.out << w.str() << "\n";
  } else {
    c.out << text << "\n";
  }
  return kExitOk;
}

int do_push(Context& c, Queue& b, JobSpec spec) {
  const TimePoint now = SystemClock::instance().now();
  const TimePoint due =
      spec.due_at ? std::max(*spec.due_at, now) : now + spec.delay.value_or(Duration(0));
  const std::string topic = spec.topic;
  const uint32_t priority = spec.priority;
  auto id = b.push(std::move(spec));
  if (!id) return failed(c, id.status());
  if (c.inv.json) {
    json::Writer w;
    w.begin_object().key("id").value(*id).key("topic").value(topic);
    w.key("due").value(format_utc_time(due)).key("due_ms").value(unix_ms(due));
    c.out << w.key("priority").value(priority).end_object().str() << "\n";
  } else {
    c.out << "pushed " << printable(*id) << " to topic " << printable(topic) << ", due "
          << when(due, now)
          << (priority != kDefaultPriority ? ", priority " + std::to_string(priority) : "")
          << "\n";
  }
  return kExitOk;
}

int do_get(Context& c, Queue& b, const std::string& id) {
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
  if (j.retry.max_attempts > 0) rows.push_back({"retry", format_retry(j.retry)});
  rows.push_back({"priority", std::to_string(j.priority)});
  if (j.state == JobState::reserved) rows.push_back({"lease until", when(j.lease_deadline, now)});
  if (j.state == JobState::dead) rows.push_back({"dead since", when(j.dead_since, now)});
  rows.push_back({"body", j.body.empty() ? "(empty)" : printable(j.body)});
  rows.push_back({"body bytes", std::to_string(j.body.size())});
  c.out << table(rows, {});
  return kExitOk;
}

int do_cancel(Context& c, Queue& b, const std::string& id) {
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

int do_stats(Context& c, Queue& b) {
  auto st = stats_of(b);
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
    const auto counts = [](json::Writer& w, const TopicStats& t) {
      w.begin_object().key("delayed").value(t.delayed).key("ready").value(t.ready);
      w.key("reserved").value(t.reserved).key("dead").value(t.dead);
    };
    json::Writer w;
    w.begin_object().key("topics").begin_object();
    for (const auto& [name, t] : st->topics) {
      counts(w.key(name), t);
      w.key("paused").value(t.paused).end_object();
    }
    w.end_object();
    counts(w.key("total"), total);
    w.end_object();
    wire::write_flow(w.key("flow"), st->flow);
    for (const auto& [name, n] : counters) w.key(name).value(n);
    write_timing_json(w, *st);
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
    for (const auto& [name, t] : st->topics) {
      const auto flow = st->flow.find(name);
      rows.push_back(row(printable(name) + (t.paused ? " (paused)" : "") +
                             (flow != st->flow.end() ? flow_note(flow->second) : ""),
                         t));
    }
    rows.push_back(row("(total)", total));
    c.out << table(rows, {false, true, true, true, true});
  }
  c.out << timing_tables(*st);
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

int do_dead_list(Context& c, Queue& b, const std::string& topic) {
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

int do_requeue(Context& c, Queue& b) {
  uint64_t n = 1;
  const bool by_topic = c.inv.flags.contains("topic");
  if (by_topic) {
    auto r = b.requeue_dead_topic(c.inv.flags["topic"]);
    if (!r) return failed(c, r.status());
    n = *r;
  } else if (Status s = b.requeue_dead(c.inv.positional[2]); !s.ok()) {
    return failed(c, s);
  }
  const std::string text = by_topic ? "requeued " + std::to_string(n) + " dead letter" +
                                          (n == 1 ? "" : "s") + " of topic " +
                                          printable(c.inv.flags["topic"])
                                    : "requeued " + printable(c.inv.positional[2]);
  return report(c, "requeued", n, text);
}

int do_purge(Context& c, Queue& b, const std::string& topic) {
  auto n = b.purge_dead(topic);
  if (!n) return failed(c, n.status());
  return report(c, "purged", *n,
                "purged " + std::to_string(*n) + " dead letter" + (*n == 1 ? "" : "s") +
                    " of topic " + printable(topic));
}

int do_pause(Context& c, Queue& b, const std::string& topic, bool paused) {
  if (Status s = paused ? b.pause(topic) : b.resume(topic); !s.ok()) return failed(c, s);
  if (c.inv.json) {
    json::Writer w;
    w.begin_object().key("topic").value(topic).key("paused").value(paused).end_object();
    c.out << w.str() << "\n";
    return kExitOk;
  }
  c.out << "topic " << printable(topic)
        << (paused ? " is paused: it hands out nothing until resumed\n" : " is running\n");
  return kExitOk;
}

int do_backup(Context& c, Queue& b, const std::string& dir) {
  auto written = backup_of(b, dir);
  if (!written) return failed(c, written.status());
  return report(c, "dir", *written,
                "backed up to " + printable(*written) +
                    " (a consistent copy; to restore it, stop the daemon, put the copy in the "
                    "store's place, start it)");
}

// `wait` (wait.h), once the target and --timeout are checked.
int do_wait(Context& c, const Target& t, Duration timeout) {
  auto at = parse_url_flag(t.url, t.url_source);
  if (!at) return failed(c, at.status());
  auto health = wait_for_health(*at, t.url, timeout);
  if (!health) return failed(c, health.status());
  c.out << ready_line(*health, t.url, c.inv.json) << "\n";
  return kExitOk;
}

// Help, and the command lines that name no command, an unknown one, or "dead" alone: the exit
// status once answered, or nothing when the command (inv.name) is to run.
std::optional<int> answer_without_command(Invocation& inv, std::optional<UsageError>& problem,
                                          const Streams& io) {
  if (!take_command_name(inv)) {
    if (problem) return usage(io, *problem);
    const bool dead = inv.name == "dead";
    const std::string message =
        dead ? "dead needs a subcommand: list, requeue or purge"
             : "schedule needs a subcommand: add, get, ls, pause, resume or rm";
    io.err << "delayq: " << message << "\n";
    for (const char* sub : dead ? std::vector<const char*>{"dead list", "dead requeue", "dead purge"}
                                : schedule_command_names())
      io.err << command_usage(*find_command(sub));
    json_error(io, "usage", message);
    return kExitUsage;
  }
  const auto print = [&](const std::string& text) {
    io.out << text;
    return kExitOk;
  };
  const CommandInfo* command = inv.name.empty() ? nullptr : find_command(inv.name);
  if (problem) {
    problem->command = command;
    return usage(io, *problem);
  }
  if (inv.version) return print("delayq " + std::string(wire::version()) + "\n");
  if (inv.name.empty() && inv.help) return print(full_usage());
  if (inv.name.empty()) {
    io.err << "delayq: no command given\n" << full_usage();
    json_error(io, "usage", "no command given");
    return kExitUsage;
  }
  if (command == nullptr)
    return usage(io, {"unknown command '" + inv.name + "' (delayq help lists the commands)"});
  if (inv.name == "help" && inv.positional.size() > 1) {
    std::string topic = inv.positional[1];
    if ((topic == "dead" || topic == "limits" || topic == "schedule") &&
        inv.positional.size() > 2)
      topic += " " + inv.positional[2];
    const CommandInfo* about = find_command(topic);
    if (about == nullptr) return usage(io, {"no command '" + topic + "'", command});
    return print(command_help(*about));
  }
  if (inv.name == "help") return print(full_usage());
  if (inv.help) return print(command_help(*command));
  return std::nullopt;
}

// What the command needs beyond its flags, checked before the target is opened (a typo must not
// cost a Redis connection or a store open): the job to push, the --limit, a target that can
// take a backup.
std::optional<UsageError> check_values(Context& c, JobSpec& spec, ScheduleArgs& schedule) {
  const auto& f = c.inv.flags;
  if (c.inv.name == "push") return push_spec(c, spec);
  if (is_flow_command(c)) return check_flow_values(c);
  if (is_schedule_command(c)) return check_schedule_values(c, schedule);
  if (c.inv.name == "dead list" && f.contains("limit"))
    if (auto n = parse_count(f.at("limit"), 1, 10'000); !n)
      return UsageError{"bad --limit: " + n.status().message(), &c.command};
  if (c.inv.name == "wait" && (f.contains("store") || f.contains("redis")))
    return UsageError{"wait takes --url (or DELAYQ_URL): it waits for a delayqd to answer; "
                      "--store and --redis are opened by each command itself",
                      &c.command};
  if (c.inv.name == "backup" && f.contains("redis"))
    return UsageError{
        "backup takes --store or --url: a Redis queue is backed up by Redis itself "
        "(BGSAVE, or redis-cli --rdb FILE)",
        &c.command};
  return std::nullopt;
}

int perform(Context& c, Queue& b, JobSpec spec, const ScheduleArgs& schedule) {
  const std::string& name = c.inv.name;
  const std::vector<std::string>& rest = c.inv.rest;
  if (name == "push") return do_push(c, b, std::move(spec));
  if (is_flow_command(c)) return run_flow_command(c, b);
  if (is_schedule_command(c)) return run_schedule_command(c, b, schedule);
  if (name == "get") return do_get(c, b, rest[0]);
  if (name == "cancel") return do_cancel(c, b, rest[0]);
  if (name == "stats") return do_stats(c, b);
  if (name == "dead list") return do_dead_list(c, b, rest[0]);
  if (name == "dead requeue") return do_requeue(c, b);
  if (name == "dead purge") return do_purge(c, b, rest[0]);
  if (name == "pause" || name == "resume") return do_pause(c, b, rest[0], name == "pause");
  return do_backup(c, b, rest[0]);
}

}  // namespace

int run(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
        std::ostream& err) {
  Invocation inv;
  std::optional<UsageError> problem = split_args(args, inv);
  const Streams io{out, err, inv.json};
  if (std::optional<int> exit = answer_without_command(inv, problem, io)) return *exit;
  const CommandInfo& command = *find_command(inv.name);
  if (auto u = check_args(inv, command)) return usage(io, *u);
  Target target;
  if (auto u = read_target(inv, command, target)) return usage(io, *u);

  Context c{inv, command, in, out, err, inv.name};
  if (inv.name == "dead requeue" && inv.flags.contains("topic"))
    c.what += " --topic " + inv.flags["topic"];
  else if (!inv.rest.empty())
    c.what += " " + inv.rest[0];
  JobSpec spec;
  ScheduleArgs schedule;
  if (auto u = check_values(c, spec, schedule)) return usage(io, *u);
  if (inv.name == "wait") {
    Duration timeout = std::chrono::seconds(10);
    if (auto u = read_flag(c, "timeout", parse_wait_timeout, timeout)) return usage(io, *u);
    return do_wait(c, target, timeout);
  }

  auto queue = open_target(target, command.access);
  if (!queue) return failed(c, queue.status());
  return perform(c, **queue, std::move(spec), schedule);
}

}  // namespace delayq::cli
