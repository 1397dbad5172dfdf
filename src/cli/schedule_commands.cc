// The CLI's schedule commands (see schedule_commands.h, docs/cli.md).
#include "cli/schedule_commands.h"

#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flow_commands.h"
#include "cli/human_text.h"
#include "cli/parse.h"
#include "common/flow_rules.h"
#include "common/rules.h"
#include "schedule/spec_rules.h"
#include "wire/schedule.h"

namespace delayq::cli {

namespace {

namespace json = delayq::wire::json;

UsageError refuse(const Context& c, std::string why) {
  return UsageError{std::move(why), &c.command};
}

// --catch-up and --overlap take the words of /schedules/set's "catch_up" and "overlap".
Result<ScheduleSpec::CatchUp> parse_catch_up(std::string_view text) {
  if (text == "skip") return ScheduleSpec::CatchUp::skip;
  if (text == "one") return ScheduleSpec::CatchUp::one;
  if (text == "all") return ScheduleSpec::CatchUp::all;
  return Status(Errc::invalid_argument,
                "expected skip, one or all, not '" + std::string(text) +
                    "' (what to push for the occurrences missed while the queue was down or "
                    "the schedule paused)");
}

Result<ScheduleSpec::Overlap> parse_overlap(std::string_view text) {
  if (text == "allow") return ScheduleSpec::Overlap::allow;
  if (text == "skip") return ScheduleSpec::Overlap::skip;
  return Status(Errc::invalid_argument,
                "expected allow or skip, not '" + std::string(text) +
                    "' (skip: no job while the previous occurrence's job still lives)");
}

Result<uint32_t> parse_catch_up_max(std::string_view text) {
  auto n = parse_count(text, 1, schedule::kMaxCatchUp);
  if (!n)
    return Status(Errc::invalid_argument,
                  n.status().message() + " (the most jobs --catch-up all pushes at once)");
  return static_cast<uint32_t>(*n);
}

// `schedule add`'s spec from the flags, then the library's rule on the whole of it. The limits
// are the widest a queue may have: what depends on the target's own (an interval or ttr over
// its max_delay, a body over its max) is the target's to refuse.
std::optional<UsageError> add_args(Context& c, ScheduleSpec& s) {
  const auto& f = c.inv.flags;
  s.id = c.inv.rest[0];
  if (!f.contains("rule"))
    return refuse(c, "schedule add needs --rule: \"every 90s\", a cron expression such as "
                     "\"0 9 * * *\", or @daily");
  if (!f.contains("topic")) return refuse(c, "schedule add needs --topic: where its jobs go");
  s.rule = f.at("rule");
  s.job.topic = f.at("topic");
  if (s.job.topic.empty()) return refuse(c, "--topic is empty");
  if (f.contains("zone")) {
    s.zone = f.at("zone");
    if (s.zone.empty()) return refuse(c, "--zone is empty (leave it out for UTC)");
  }
  if (auto u = read_flag(c, "ttr", parse_duration, s.job.ttr)) return u;
  if (auto u = read_flag(c, "retry", parse_retry, s.job.retry)) return u;
  if (auto u = read_flag(c, "priority", parse_priority_flag, s.job.priority)) return u;
  if (auto u = read_flag(c, "start", parse_time, s.start)) return u;
  if (auto u = read_flag(c, "end", parse_time, s.end)) return u;
  if (auto u = read_flag(c, "catch-up", parse_catch_up, s.catch_up)) return u;
  if (auto u = read_flag(c, "catch-up-max", parse_catch_up_max, s.catch_up_max)) return u;
  if (f.contains("catch-up-max") && s.catch_up != ScheduleSpec::CatchUp::all)
    return refuse(c, "--catch-up-max applies to --catch-up all: give both");
  if (auto u = read_flag(c, "overlap", parse_overlap, s.overlap)) return u;
  Limits widest;
  widest.max_delay = rules::kLongestDelay;
  widest.max_body_bytes = std::numeric_limits<size_t>::max();
  if (auto rule = schedule::check_schedule(s, widest, SystemClock::instance().now()); !rule)
    return refuse(c, rule.status().message());
  // Last: --body-file - reads stdin, which a refusal above leaves unread.
  return read_body(c, s.job.body);
}

std::optional<UsageError> ls_args(Context& c, ScheduleArgs& a) {
  const auto& f = c.inv.flags;
  if (f.contains("limit")) {
    auto n = parse_count(f.at("limit"), 1, rules::kMaxListLimit);
    if (!n) return refuse(c, "bad --limit: " + n.status().message() + " (schedules per page)");
    a.limit = static_cast<size_t>(*n);
  }
  if (f.contains("cursor")) {
    a.cursor = f.at("cursor");
    if (a.cursor.empty()) return refuse(c, "--cursor is empty (leave it out for the first page)");
  }
  a.all = f.contains("all");
  return std::nullopt;
}

std::string zone_of(const ScheduleSpec& s) { return s.zone.empty() ? "UTC" : s.zone; }

// "0 9 * * * in Europe/Berlin"; an "every" rule has no zone to show.
std::string rule_text(const ScheduleSpec& s) {
  const bool every = s.rule.rfind("every", 0) == 0;
  return printable(s.rule) + (every ? "" : " in " + printable(zone_of(s)));
}

std::string catch_up_text(const ScheduleSpec& s) {
  switch (s.catch_up) {
    case ScheduleSpec::CatchUp::skip: return "skip";
    case ScheduleSpec::CatchUp::all: return "all (at most " + std::to_string(s.catch_up_max) + ")";
    case ScheduleSpec::CatchUp::one: break;
  }
  return "one";
}

std::string next_text(const ScheduleInfo& info, TimePoint now) {
  if (info.paused) return "(paused)";
  return info.next.empty() ? "(none: the schedule has ended)" : when(info.next[0], now);
}

void print_info(Context& c, const ScheduleInfo& info) {
  const TimePoint now = SystemClock::instance().now();
  const ScheduleSpec& s = info.spec;
  const JobSpec& j = s.job;
  std::vector<std::vector<std::string>> rows = {
      {"id", printable(s.id)},
      {"rule", printable(s.rule)},
      {"zone", printable(zone_of(s))},
      {"state", info.paused ? "paused" : "running"},
      {"topic", printable(j.topic)},
      {"priority", std::to_string(j.priority)},
      {"ttr", j.ttr == Duration(0) ? "the queue's default" : format_span(j.ttr)},
      {"retry", j.retry ? format_retry(*j.retry) : "the queue's default"},
  };
  if (s.start) rows.push_back({"start", when(*s.start, now)});
  if (s.end) rows.push_back({"end", when(*s.end, now)});
  rows.push_back({"catch-up", catch_up_text(s)});
  rows.push_back({"overlap", s.overlap == ScheduleSpec::Overlap::skip ? "skip" : "allow"});
  rows.push_back({"last fired", info.last_fired ? when(*info.last_fired, now) : "never"});
  for (size_t i = 0; i < info.next.size(); ++i)
    rows.push_back({i == 0 ? "next" : "", when(info.next[i], now)});
  if (info.next.empty()) rows.push_back({"next", "none: the schedule has ended"});
  rows.push_back({"fired", std::to_string(info.fired)});
  rows.push_back({"skipped", std::to_string(info.skipped_overlap) + " by overlap, " +
                                 std::to_string(info.skipped_catch_up) + " by catch-up"});
  std::string live;
  for (const std::string& id : info.live_jobs) live += (live.empty() ? "" : ", ") + printable(id);
  rows.push_back({"live jobs", live.empty() ? "none" : live});
  rows.push_back({"body", j.body.empty() ? "(empty)" : printable(j.body)});
  c.out << table(rows, {});
}

int write_info_json(Context& c, const ScheduleInfo& info) {
  json::Writer w;
  wire::write_schedule_info(w, info);
  c.out << w.str() << "\n";
  return kExitOk;
}

int do_add(Context& c, Queue& q, const ScheduleSpec& spec) {
  if (Status s = q.schedule(spec); !s.ok()) return failed(c, s);
  // The schedule as the queue holds it now, as delayqd's /schedules/set answers it; when it
  // cannot be read back (another client removed it meanwhile), what was set.
  auto info = q.get_schedule(spec.id);
  if (c.inv.json) {
    if (info) return write_info_json(c, *info);
    json::Writer w;
    wire::write_schedule_spec(w, spec);
    c.out << w.str() << "\n";
    return kExitOk;
  }
  c.out << "scheduled " << printable(spec.id) << ": " << rule_text(spec) << ", to topic "
        << printable(spec.job.topic);
  if (info) c.out << ", next " << next_text(*info, SystemClock::instance().now());
  c.out << "\n";
  return kExitOk;
}

int do_get_schedule(Context& c, Queue& q, const std::string& id) {
  auto info = q.get_schedule(id);
  if (!info) return failed(c, info.status());
  if (c.inv.json) return write_info_json(c, *info);
  print_info(c, *info);
  return kExitOk;
}

// Pages, printed as they come, as `ls` prints jobs (follow_pages): with --json one document
// whose "schedules" grow page by page; else a table per page, the way to the next page on stderr.
int do_ls(Context& c, Queue& q, const ScheduleArgs& a) {
  const TimePoint now = SystemClock::instance().now();
  std::string cursor = a.cursor;
  size_t listed = 0;
  if (c.inv.json) c.out << "{\"schedules\":[";
  const auto page = [&](const std::string& at, size_t before) -> Result<ShownPage> {
    auto got = q.list_schedules(a.limit, at);
    if (!got) return got.status();
    std::vector<std::vector<std::string>> rows;
    if (before == 0) rows.push_back({"ID", "RULE", "TOPIC", "NEXT", "LAST FIRED", "FIRED"});
    for (const ScheduleInfo& info : got->schedules) {
      if (c.inv.json) {
        json::Writer w;
        wire::write_schedule_info(w, info);
        c.out << (before++ > 0 ? "," : "") << w.str();
      } else {
        rows.push_back({printable(info.spec.id), rule_text(info.spec),
                        printable(info.spec.job.topic), next_text(info, now),
                        info.last_fired ? when(*info.last_fired, now) : "never",
                        std::to_string(info.fired)});
      }
    }
    if (!c.inv.json && !got->schedules.empty())
      c.out << table(rows, {false, false, false, false, false, true});
    return ShownPage{got->schedules.size(), got->cursor};
  };
  if (int exit = follow_pages(c, cursor, a.all, listed, page); exit != kExitOk) return exit;
  if (!c.inv.json && listed == 0)
    c.out << "no schedules" << (a.cursor.empty() ? "" : " after this cursor") << "\n";
  if (!c.inv.json && !cursor.empty())
    c.err << "more: run the same schedule ls with --cursor " << cursor
          << " (or --all for every page)\n";
  return kExitOk;
}

int do_pause_schedule(Context& c, Queue& q, const std::string& id, bool paused) {
  if (Status s = paused ? q.pause_schedule(id) : q.resume_schedule(id); !s.ok())
    return failed(c, s);
  if (c.inv.json) {
    json::Writer w;
    w.begin_object().key("id").value(id).key("paused").value(paused).end_object();
    c.out << w.str() << "\n";
  } else {
    c.out << "schedule " << printable(id)
          << (paused ? " is paused: it pushes nothing until resumed\n" : " is running\n");
  }
  return kExitOk;
}

int do_rm(Context& c, Queue& q, const std::string& id) {
  if (Status s = q.unschedule(id); !s.ok()) return failed(c, s);
  if (c.inv.json) {
    json::Writer w;
    w.begin_object().key("id").value(id).key("removed").value(true).end_object();
    c.out << w.str() << "\n";
  } else {
    c.out << "removed schedule " << printable(id) << " (the jobs it pushed stay)\n";
  }
  return kExitOk;
}

}  // namespace

std::vector<const char*> schedule_command_names() {
  return {"schedule add", "schedule get", "schedule ls", "schedule pause", "schedule resume",
          "schedule rm"};
}

bool is_schedule_command(const Context& c) {
  return c.inv.name.rfind("schedule ", 0) == 0;
}

std::optional<UsageError> check_schedule_values(Context& c, ScheduleArgs& args) {
  if (c.inv.name == "schedule add") return add_args(c, args.spec);
  if (c.inv.name == "schedule ls") return ls_args(c, args);
  return std::nullopt;
}

int run_schedule_command(Context& c, Queue& q, const ScheduleArgs& args) {
  const std::string& n = c.inv.name;
  if (n == "schedule add") return do_add(c, q, args.spec);
  if (n == "schedule ls") return do_ls(c, q, args);
  const std::string& id = c.inv.rest[0];
  if (n == "schedule get") return do_get_schedule(c, q, id);
  if (n == "schedule rm") return do_rm(c, q, id);
  return do_pause_schedule(c, q, id, n == "schedule pause");
}

}  // namespace delayq::cli
