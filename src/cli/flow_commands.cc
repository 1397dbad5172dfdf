// The CLI's flow-control and browsing commands (see flow_commands.h, docs/cli.md).
#include "cli/flow_commands.h"

#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/human_text.h"
#include "cli/parse.h"
#include "cli/target.h"
#include "common/bad_input.h"
#include "common/flow_rules.h"
#include "wire/flow.h"

namespace delayq::cli {

namespace {

namespace json = delayq::wire::json;

constexpr size_t kDefaultPage = 100;
constexpr uint64_t kMaxU32 = std::numeric_limits<uint32_t>::max();

struct LsArgs {
  JobState state = JobState::ready;
  size_t limit = kDefaultPage;
  std::string cursor;
  bool all = false;
};

Result<LsArgs> ls_args(const Invocation& inv) {
  const auto& f = inv.flags;
  LsArgs a;
  if (!f.contains("state")) return bad("ls needs --state delayed, ready, reserved or dead");
  const auto state = rules::parse_state(f.at("state"));
  if (!state)
    return bad("--state must be delayed, ready, reserved or dead, not '" + f.at("state") + "'");
  a.state = *state;
  if (f.contains("limit")) {
    auto n = parse_count(f.at("limit"), 1, rules::kMaxListLimit);
    if (!n) return bad("bad --limit: " + n.status().message() + " (jobs per page)");
    a.limit = static_cast<size_t>(*n);
  }
  if (f.contains("cursor")) {
    a.cursor = f.at("cursor");
    if (a.cursor.empty()) return bad("--cursor is empty (leave it out for the first page)");
  }
  a.all = f.contains("all");
  return a;
}

// The limits `limits set` asks for, checked by the library's rule. The period's bound is the
// queue's max_delay, which the target checks; here only what every queue refuses.
Result<TopicLimits> limits_args(const Invocation& inv, const std::string& topic) {
  const auto& f = inv.flags;
  TopicLimits l;
  if (f.contains("rate")) {
    auto rate = parse_rate(f.at("rate"));
    if (!rate) return bad("--rate: " + rate.status().message());
    l.rate = *rate;
  }
  if (f.contains("burst")) {
    if (!l.rate) return bad("--burst applies to --rate: give both");
    auto n = parse_count(f.at("burst"), 0, kMaxU32);
    if (!n) return bad("bad --burst: " + n.status().message());
    l.rate->burst = static_cast<uint32_t>(*n);
  }
  if (f.contains("max-in-flight")) {
    auto n = parse_count(f.at("max-in-flight"), 0, kMaxU32);
    if (!n) return bad("bad --max-in-flight: " + n.status().message());
    l.max_in_flight = static_cast<uint32_t>(*n);
  }
  if (!l.rate && !l.max_in_flight)
    return bad("give --rate COUNT/PERIOD, --max-in-flight N, or both (to remove a topic's "
               "limits: limits clear TOPIC)");
  if (Status s = rules::check_topic_limits(topic, l, Duration::max()); !s.ok()) return s;
  return l;
}

std::string rate_text(const TopicLimits::Rate& r) {
  return std::to_string(r.count) + "/" + format_span(r.per);
}

// "at most 50/1s (bursts of 10), at most 4 in flight".
std::string limits_text(const TopicLimits& l) {
  std::string s;
  if (l.rate)
    s = "at most " + rate_text(*l.rate) + " (bursts of " + std::to_string(l.rate->burst) + ")";
  if (l.max_in_flight)
    s += (s.empty() ? "" : ", ") + std::string("at most ") + std::to_string(*l.max_in_flight) +
         " in flight";
  return s;
}

std::string json_string(std::string_view s) {
  json::Writer w;
  w.value(s);
  return w.take();
}

// The column of a job's time that matters in `state`.
const char* time_header(JobState s) {
  switch (s) {
    case JobState::reserved: return "LEASE UNTIL";
    case JobState::dead: return "DEAD SINCE";
    default: return "DUE";
  }
}

TimePoint shown_time(const JobInfo& j, JobState s) {
  return s == JobState::reserved ? j.lease_deadline : s == JobState::dead ? j.dead_since : j.due;
}

// Pages, printed as they come (follow_pages): with --json one document whose "jobs" grow page by
// page; else a table per page, the hint for the next page on stderr.
int do_ls(Context& c, Queue& q, const LsArgs& a) {
  const std::string& topic = c.inv.rest[0];
  const TimePoint now = SystemClock::instance().now();
  std::string cursor = a.cursor;
  size_t listed = 0;
  if (c.inv.json)
    c.out << "{\"topic\":" << json_string(topic) << ",\"state\":\"" << to_string(a.state)
          << "\",\"jobs\":[";
  const auto page = [&](const std::string& at, size_t before) -> Result<ShownPage> {
    auto got = q.list_jobs(topic, a.state, a.limit, at);
    if (!got) return got.status();
    std::vector<std::vector<std::string>> rows;
    if (before == 0) rows.push_back({"ID", "PRIORITY", time_header(a.state), "ATTEMPTS", "BODY"});
    for (const JobInfo& j : got->jobs) {
      if (c.inv.json) {
        json::Writer w;
        write_job(w, j);
        c.out << (before++ > 0 ? "," : "") << w.str();
      } else {
        rows.push_back({printable(j.id), std::to_string(j.priority),
                        when(shown_time(j, a.state), now),
                        std::to_string(j.attempts) + "/" + std::to_string(j.max_attempts),
                        printable(j.body, 40)});
      }
    }
    if (!c.inv.json && !got->jobs.empty()) c.out << table(rows, {false, true, false, true, false});
    return ShownPage{got->jobs.size(), got->cursor};
  };
  if (int exit = follow_pages(c, cursor, a.all, listed, page); exit != kExitOk) return exit;
  if (!c.inv.json && listed == 0)
    c.out << "no " << to_string(a.state) << " jobs in topic " << printable(topic)
          << (a.cursor.empty() ? "" : " after this cursor") << "\n";
  if (!c.inv.json && !cursor.empty())
    c.err << "more: run the same ls with --cursor " << cursor << " (or --all for every page)\n";
  return kExitOk;
}

int do_limits_set(Context& c, Queue& q, const TopicLimits& l) {
  const std::string& topic = c.inv.rest[0];
  if (Status s = q.set_topic_limits(topic, l); !s.ok()) return failed(c, s);
  if (c.inv.json) {
    json::Writer w;
    w.begin_object().key("topic").value(topic);
    wire::write_limits(w.key("limits"), l);
    c.out << w.end_object().str() << "\n";
  } else {
    c.out << "topic " << printable(topic) << ": " << limits_text(l) << "\n";
  }
  return kExitOk;
}

int do_limits_clear(Context& c, Queue& q) {
  const std::string& topic = c.inv.rest[0];
  if (Status s = q.clear_topic_limits(topic); !s.ok()) return failed(c, s);
  if (c.inv.json)
    c.out << "{\"topic\":" << json_string(topic) << ",\"limits\":null}\n";
  else
    c.out << "topic " << printable(topic) << " has no limits now\n";
  return kExitOk;
}

int do_limits(Context& c, Queue& q) {
  auto st = stats_of(q);
  if (!st) return failed(c, st.status());
  if (c.inv.json) {
    json::Writer w;
    w.begin_object();
    wire::write_flow(w.key("flow"), st->flow);
    c.out << w.end_object().str() << "\n";
    return kExitOk;
  }
  if (st->flow.empty()) {
    c.out << "no topic has limits (delayq limits set TOPIC --rate 50/1s sets some)\n";
    return kExitOk;
  }
  const auto or_dash = [](bool set, const std::string& s) { return set ? s : std::string("-"); };
  std::vector<std::vector<std::string>> rows = {
      {"TOPIC", "RATE", "BURST", "TOKENS", "MAX IN FLIGHT", "IN FLIGHT", "THROTTLED RATE/CONC"}};
  for (const auto& [topic, f] : st->flow) {
    const auto& r = f.limits.rate;
    rows.push_back({printable(topic), or_dash(r.has_value(), r ? rate_text(*r) : ""),
                    or_dash(r.has_value(), r ? std::to_string(r->burst) : ""),
                    or_dash(r.has_value(), std::to_string(f.tokens)),
                    or_dash(f.limits.max_in_flight.has_value(),
                            std::to_string(f.limits.max_in_flight.value_or(0))),
                    std::to_string(f.in_flight),
                    std::to_string(f.throttled_rate) + "/" +
                        std::to_string(f.throttled_concurrency)});
  }
  c.out << table(rows, {false, true, true, true, true, true, true});
  return kExitOk;
}

}  // namespace

std::string flow_note(const TopicFlow& f) {
  std::string s = " (limited:";
  if (f.limits.rate) s += " " + rate_text(*f.limits.rate);
  if (f.limits.max_in_flight)
    s += std::string(f.limits.rate ? "," : "") + " " + std::to_string(*f.limits.max_in_flight) +
         " at once";
  return s + ", " + std::to_string(f.in_flight) + " in flight)";
}

bool is_flow_command(const Context& c) {
  const std::string& n = c.inv.name;
  return n == "ls" || n == "limits" || n == "limits set" || n == "limits clear";
}

Result<uint32_t> parse_priority_flag(std::string_view text) {
  auto n = parse_count(text, 0, kMaxU32);
  if (!n)
    return bad(n.status().message() + " (smaller is more urgent; the default is " +
               std::to_string(kDefaultPriority) + ")");
  return static_cast<uint32_t>(*n);
}

std::optional<UsageError> check_flow_values(Context& c) {
  const auto refuse = [&](const Status& s) { return UsageError{s.message(), &c.command}; };
  if (c.inv.name == "ls")
    if (auto a = ls_args(c.inv); !a) return refuse(a.status());
  if (c.inv.name == "limits set")
    if (auto l = limits_args(c.inv, c.inv.rest[0]); !l) return refuse(l.status());
  return std::nullopt;
}

int run_flow_command(Context& c, Queue& q) {
  const std::string& n = c.inv.name;
  if (n == "ls") return do_ls(c, q, *ls_args(c.inv));
  if (n == "limits set") return do_limits_set(c, q, *limits_args(c.inv, c.inv.rest[0]));
  if (n == "limits clear") return do_limits_clear(c, q);
  return do_limits(c, q);
}

}  // namespace delayq::cli
