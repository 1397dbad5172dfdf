// `delayq schedule add|get|ls|pause|resume|rm` (src/cli/schedule_commands.cc), the real binary
// against a store directory, a running delayqd and a private redis-server: what each command
// prints (text and --json), that a schedule made by one run is there for the next, and that bad
// input exits 2 naming what is wrong, before the target is opened, leaving what is stored as it
// was; and that the commands that only read leave a store's files as they were. The schedules
// start 30 days ahead, so that no occurrence fires while a test runs; the cron rule's zone,
// Asia/Tokyo, has no DST, so that its next runs are all at the same UTC time.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "cli/command_context.h"
#include "cli/human_text.h"
#include "cli_harness.h"
#include "redis_server.h"
#include "temp_dir.h"

namespace {

using namespace delayq::testing;

std::vector<std::string> with(const std::vector<std::string>& target,
                              std::vector<std::string> args) {
  args.insert(args.begin(), target.begin(), target.end());
  return args;
}

// The ids `schedule ls --all --json` lists.
std::vector<std::string> listed_ids(const std::vector<std::string>& target) {
  CliRun r = cli(with(target, {"schedule", "ls", "--all", "--json"}));
  EXPECT_EQ(r.exit, 0) << describe(r);
  std::vector<std::string> ids;
  const json::Value page = r.json();  // kept: at() answers a reference into it
  for (const json::Value& s : at(page, "schedules").as_array())
    ids.push_back(at(s, "id").as_string());
  return ids;
}

// The cursor in ls's "more: run the same schedule ls with --cursor C (...)" line on stderr.
std::string more_cursor(const std::string& err) {
  const std::string mark = "--cursor ";
  const size_t at_mark = err.find(mark);
  if (at_mark == std::string::npos) return "";
  const size_t from = at_mark + mark.size();
  return err.substr(from, err.find(' ', from) - from);
}

// The whole round on one target: add (replace), get, ls in two pages, pause, resume, rm.
void schedule_flow(const std::vector<std::string>& target) {
  // Every schedule starts 30 days ahead, on the hour, so that none fires during the test.
  const delayq::TimePoint start =
      std::chrono::floor<std::chrono::hours>(delayq::SystemClock::instance().now()) + 720h;
  const auto utc = [](delayq::TimePoint t) { return delayq::cli::format_utc_time(t); };
  CliRun add = cli(with(target, {"schedule", "add", "nightly", "--rule", "0 9 * * *", "--zone",
                                 "Asia/Tokyo", "--topic", "sweep", "--body", "members",
                                 "--priority", "3", "--ttr", "2m", "--retry", "fixed:30s:4",
                                 "--catch-up", "all", "--catch-up-max", "5", "--overlap", "skip",
                                 "--start", utc(start), "--json"}));
  ASSERT_EQ(add.exit, 0) << describe(add);
  // The words of delayqd's /schedules/set and /schedules/get.
  const json::Value a = add.json();
  EXPECT_EQ(at(a, "id").as_string(), "nightly");
  EXPECT_EQ(at(a, "rule").as_string(), "0 9 * * *");
  EXPECT_EQ(at(a, "zone").as_string(), "Asia/Tokyo");
  EXPECT_EQ(at(at(a, "job"), "topic").as_string(), "sweep");
  EXPECT_EQ(at(at(a, "job"), "body").as_string(), "members");
  EXPECT_EQ(at(at(a, "job"), "priority").as_int(), 3);
  EXPECT_EQ(at(at(a, "job"), "ttr_ms").as_int(), 120000) << add.out;
  EXPECT_EQ(at(at(at(a, "job"), "retry"), "max_attempts").as_int(), 4) << add.out;
  EXPECT_EQ(at(a, "catch_up").as_string(), "all");
  EXPECT_EQ(at(a, "catch_up_max").as_int(), 5);
  EXPECT_EQ(at(a, "overlap").as_string(), "skip");
  EXPECT_FALSE(at(a, "paused").as_bool());
  EXPECT_TRUE(at(a, "last_fired").is_null());
  const auto& next = at(a, "next").as_array();
  ASSERT_EQ(next.size(), 5u) << add.out;
  for (const json::Value& n : next)  // 09:00 in Tokyo (UTC+9, no DST) is midnight UTC
    EXPECT_TRUE(contains(at(n, "utc").as_string(), "T00:00:00Z")) << add.out;
  EXPECT_EQ(at(next[1], "ms").as_int() - at(next[0], "ms").as_int(), 86'400'000);

  CliRun text = cli(with(target, {"schedule", "add", "yearly", "--rule", "0 0 1 1 *", "--topic",
                                  "t", "--start", utc(start)}));
  ASSERT_EQ(text.exit, 0) << describe(text);
  EXPECT_EQ(text.out.rfind("scheduled yearly: 0 0 1 1 * in UTC, to topic t, next ", 0), 0u)
      << text.out;
  EXPECT_TRUE(contains(text.out, "-01-01T00:00:00Z (in ")) << text.out;
  // --start and --end bound the occurrences: the start, an hour and two hours after it, not
  // three (the end).
  CliRun bounded = cli(with(target, {"schedule", "add", "every-hour", "--rule", "every 1h",
                                     "--topic", "t", "--start", utc(start), "--end",
                                     utc(start + 3h), "--json"}));
  ASSERT_EQ(bounded.exit, 0) << describe(bounded);
  const json::Value b = bounded.json();
  const auto& bounded_next = at(b, "next").as_array();
  ASSERT_EQ(bounded_next.size(), 3u) << bounded.out;
  EXPECT_EQ(at(bounded_next[0], "utc").as_string(), utc(start));
  EXPECT_EQ(at(bounded_next[2], "utc").as_string(), utc(start + 2h));
  EXPECT_EQ(at(b, "start_ms").as_int(), delayq::cli::unix_ms(start));
  EXPECT_EQ(at(b, "end_ms").as_int(), delayq::cli::unix_ms(start + 3h));

  CliRun get = cli(with(target, {"schedule", "get", "nightly"}));
  ASSERT_EQ(get.exit, 0) << describe(get);
  for (const char* row :
       {"id          nightly\n", "rule        0 9 * * *\n", "zone        Asia/Tokyo\n",
        "state       running\n", "topic       sweep\n", "priority    3\n", "ttr         2m\n",
        "retry       fixed:30s:4\n", "catch-up    all (at most 5)\n", "overlap     skip\n",
        "last fired  never\n", "fired       0\n", "skipped     0 by overlap, 0 by catch-up\n",
        "live jobs   none\n", "body        members\n"})
    EXPECT_TRUE(contains(get.out, row)) << row << "\n" << get.out;
  EXPECT_TRUE(contains(get.out, "\nnext        ")) << get.out;
  CliRun get_json = cli(with(target, {"schedule", "get", "nightly", "--json"}));
  ASSERT_EQ(get_json.exit, 0) << describe(get_json);
  EXPECT_EQ(get_json.out, add.out);  // nothing fired in between: the same schedule

  // Two pages of two, in id order, the second from the cursor the first printed on stderr.
  CliRun first = cli(with(target, {"schedule", "ls", "--limit", "2"}));
  ASSERT_EQ(first.exit, 0) << describe(first);
  EXPECT_EQ(first.out.rfind("ID          RULE", 0), 0u) << first.out;
  EXPECT_TRUE(contains(first.out, "\nevery-hour  every 1h ")) << first.out;
  EXPECT_TRUE(contains(first.out, "\nnightly     0 9 * * * in Asia/Tokyo  sweep ")) << first.out;
  EXPECT_FALSE(contains(first.out, "yearly")) << first.out;
  const std::string cursor = more_cursor(first.err);
  ASSERT_FALSE(cursor.empty()) << first.err;
  CliRun second = cli(with(target, {"schedule", "ls", "--limit", "2", "--cursor", cursor,
                                    "--json"}));
  ASSERT_EQ(second.exit, 0) << describe(second);
  const json::Value page = second.json();
  const auto& rest = at(page, "schedules").as_array();
  ASSERT_EQ(rest.size(), 1u) << second.out;
  EXPECT_EQ(at(rest[0], "id").as_string(), "yearly");
  EXPECT_TRUE(at(page, "cursor").is_null()) << second.out;
  EXPECT_EQ(listed_ids(target), (std::vector<std::string>{"every-hour", "nightly", "yearly"}));

  CliRun pause = cli(with(target, {"schedule", "pause", "nightly"}));
  ASSERT_EQ(pause.exit, 0) << describe(pause);
  EXPECT_EQ(pause.out, "schedule nightly is paused: it pushes nothing until resumed\n");
  CliRun paused = cli(with(target, {"schedule", "get", "nightly", "--json"}));
  EXPECT_TRUE(at(paused.json(), "paused").as_bool()) << paused.out;
  EXPECT_TRUE(contains(cli(with(target, {"schedule", "get", "nightly"})).out,
                       "state       paused\n"));
  CliRun resume = cli(with(target, {"schedule", "resume", "nightly", "--json"}));
  ASSERT_EQ(resume.exit, 0) << describe(resume);
  EXPECT_EQ(resume.out, "{\"id\":\"nightly\",\"paused\":false}\n");
  EXPECT_FALSE(at(cli(with(target, {"schedule", "get", "nightly", "--json"})).json(), "paused")
                   .as_bool());

  CliRun rm = cli(with(target, {"schedule", "rm", "nightly"}));
  ASSERT_EQ(rm.exit, 0) << describe(rm);
  EXPECT_EQ(rm.out, "removed schedule nightly (the jobs it pushed stay)\n");
  for (const char* command : {"get", "rm", "pause", "resume"}) {
    CliRun gone = cli(with(target, {"schedule", command, "nightly", "--json"}));
    EXPECT_EQ(gone.exit, 1) << describe(gone);
    EXPECT_TRUE(contains(gone.err, std::string("delayq: schedule ") + command +
                                       " nightly: not found: no schedule with id \"nightly\""))
        << gone.err;
    EXPECT_EQ(at(gone.json(), "error").as_string(), "not_found");
  }
  EXPECT_EQ(listed_ids(target), (std::vector<std::string>{"every-hour", "yearly"}));
}

TEST(CliSchedule, OnAStoreDirectory) {
  TempDir dir;
  schedule_flow({"--store", dir.sub("store")});
}

class CliScheduleDaemon : public StoreDaemonTest {};

TEST_F(CliScheduleDaemon, ThroughADelayqd) {
  const int port = start();
  ASSERT_GT(port, 0);
  schedule_flow({"--url", "http://127.0.0.1:" + std::to_string(port)});
}

TEST(CliSchedule, OnRedis) {
  RedisServer server;
  ASSERT_TRUE(server.started()) << "redis-server did not start: " << server.log();
  schedule_flow({"--redis", server.url(), "--queue", "cli"});
}

// Each refusal exits 2 with a message naming what is wrong, before the store is opened: a
// missing store is not created, and a schedule that a bad `add` would replace stays as it was.
TEST(CliSchedule, BadInputExitsTwoAndChangesNothing) {
  TempDir dir;
  const std::string store = dir.sub("store");
  const std::vector<std::string> target = {"--store", store};
  const auto add = [&](std::vector<std::string> flags) {
    std::vector<std::string> args = {"schedule", "add", "keep"};
    args.insert(args.end(), flags.begin(), flags.end());
    return args;
  };
  const std::vector<std::string> ok = {"--rule", "0 0 1 1 *", "--topic", "t"};
  const auto ok_and = [&](std::vector<std::string> flags) {
    flags.insert(flags.begin(), ok.begin(), ok.end());
    return add(flags);
  };
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {add({"--rule", "0 0 30 2 *", "--topic", "t"}),
       "rule \"0 0 30 2 *\": no day ever matches its day-of-month"},
      {add({"--rule", "61 * * * *", "--topic", "t"}), "cron minute \"61\": 61 is out of range 0-59"},
      {add({"--rule", "every 0s", "--topic", "t"}), "the interval must be positive"},
      {add({"--rule", "", "--topic", "t"}), "rule is empty"},
      {ok_and({"--zone", "Mars/Base"}), "zone \"Mars/Base\" is not a time zone"},
      {ok_and({"--zone", ""}), "--zone is empty"},
      {{"schedule", "add", "--rule", "0 0 1 1 *", "--topic", "t"}, "schedule add needs an ID"},
      {{"schedule", "add", "a@b", "--rule", "0 0 1 1 *", "--topic", "t"}, "contains '@'"},
      {{"schedule", "add", std::string(201, 'x'), "--rule", "0 0 1 1 *", "--topic", "t"},
       "schedule id is 201 bytes long; the limit is 200"},
      {add({"--topic", "t"}), "schedule add needs --rule"},
      {add({"--rule", "0 0 1 1 *"}), "schedule add needs --topic"},
      {ok_and({"--catch-up", "all", "--catch-up-max", "0"}),
       "--catch-up-max: expected a whole number from 1 to 10000, not '0'"},
      {ok_and({"--catch-up", "all", "--catch-up-max", "10001"}), "from 1 to 10000, not '10001'"},
      {ok_and({"--catch-up", "all", "--catch-up-max", "-1"}), "from 1 to 10000, not '-1'"},
      {ok_and({"--catch-up-max", "5"}), "--catch-up-max applies to --catch-up all"},
      {ok_and({"--catch-up", "some"}), "--catch-up: expected skip, one or all, not 'some'"},
      {ok_and({"--overlap", "never"}), "--overlap: expected allow or skip, not 'never'"},
      {ok_and({"--priority", "4294967296"}), "--priority: expected a whole number from 0 to"},
      {ok_and({"--ttr", "-5s"}), "--ttr: bad duration '-5s': it is negative"},
      {ok_and({"--retry", "fixed:1s:0"}), "--retry: bad retry policy"},
      {ok_and({"--start", "2300-01-01T00:00:00Z"}), "--start: bad time"},
      {ok_and({"--start", "2030-01-01T00:00:00Z", "--end", "2029-01-01T00:00:00Z"}),
       "end must be after start"},
      {ok_and({"--body", "x", "--body-file", "-"}), "give --body or --body-file, not both"},
      {ok_and({"--limit", "3"}), "--limit does not apply to schedule add"},
      {{"schedule", "ls", "--limit", "0"}, "bad --limit: expected a whole number from 1 to 1000"},
      {{"schedule", "ls", "--limit", "1001"}, "bad --limit"},
      {{"schedule", "ls", "--cursor", ""}, "--cursor is empty"},
      {{"schedule", "get"}, "schedule get needs an ID"},
      {{"schedule", "rm", "a", "b"}, "unexpected argument 'b'"},
      {{"schedule", "get", "keep", "--rule", "x"}, "--rule does not apply to schedule get"},
      {{"schedule"}, "schedule needs a subcommand: add, get, ls, pause, resume or rm"},
      {{"schedule", "list"}, "unknown command 'schedule list'"},
      {ok_and({"--catchup", "all"}), "(did you mean '--catch-up'?)"},
  };
  // The help names the flags (docs_cli checks the page's commands against it).
  CliRun help = cli({"help", "schedule", "add"});
  EXPECT_EQ(help.exit, 0) << describe(help);
  EXPECT_EQ(help.out.rfind("usage: delayq TARGET schedule add ID --rule RULE --topic TOPIC", 0), 0u)
      << help.out;
  for (const char* flag : {"--zone", "--start", "--end", "--catch-up skip|one|all",
                           "--catch-up-max N", "--overlap allow|skip", "--retry", "--priority"})
    EXPECT_TRUE(contains(help.out, flag)) << flag << "\n" << help.out;
  // On no store at all, a refusal does not create it (the target is not opened).
  for (size_t i : {0, 4, 11}) {
    CliRun r = cli(with(target, cases[i].first));
    EXPECT_EQ(r.exit, 2) << describe(r);
    EXPECT_FALSE(fs::exists(store)) << describe(r);
  }
  // Beside a schedule "keep" that a good add would replace, each refusal leaves it as it was.
  CliRun made = cli(with(target, add({"--rule", "0 0 1 1 *", "--topic", "t", "--json"})));
  ASSERT_EQ(made.exit, 0) << describe(made);
  for (const auto& [args, says] : cases) {
    CliRun r = cli(with(target, args));
    EXPECT_EQ(r.exit, 2) << describe(r);
    EXPECT_TRUE(contains(r.err, says)) << says << "\n" << describe(r);
    EXPECT_TRUE(contains(r.err, "usage: delayq TARGET ")) << describe(r);
  }
  // What only the target knows, its max_delay (3650 days on this store), is its refusal: exit 1.
  CliRun far = cli(with(target, add({"--rule", "every 3651d", "--topic", "t"})));
  EXPECT_EQ(far.exit, 1) << describe(far);
  EXPECT_TRUE(contains(far.err, "invalid argument: rule's interval of 3651d exceeds max_delay"))
      << far.err;
  CliRun kept = cli(with(target, {"schedule", "get", "keep", "--json"}));
  EXPECT_EQ(kept.out, made.out);
  EXPECT_EQ(listed_ids(target), std::vector<std::string>{"keep"});
}


// Every file of a directory tree, by path, with its bytes.
std::map<std::string, std::string> files_of(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    out[e.path().string()] = std::string(std::istreambuf_iterator<char>(in), {});
  }
  return out;
}

// docs/cli.md, --store: the commands that only read open the store read-only and change nothing
// on disk, byte for byte; a command that writes does change it (so the comparison can fail).
TEST(CliStoreReads, TheCommandsThatOnlyReadLeaveEveryFileAsItWas) {
  TempDir dir;
  const std::string store = dir.sub("s");
  const std::vector<std::string> target = {"--store", store};
  const delayq::TimePoint start =
      std::chrono::floor<std::chrono::hours>(delayq::SystemClock::instance().now()) + 720h;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"push", "t", "--id", "j1", "--delay", "1h"},
        {"push", "t", "--id", "j2"},
        {"limits", "set", "t", "--max-in-flight", "3"},
        {"schedule", "add", "s1", "--rule", "every 1h", "--topic", "t", "--start",
         delayq::cli::format_utc_time(start)}}) {
    CliRun r = cli(with(target, args));
    ASSERT_EQ(r.exit, 0) << describe(r);
  }
  const std::map<std::string, std::string> before = files_of(store);
  ASSERT_FALSE(before.empty());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"get", "j1"},
        {"stats"},
        {"ls", "t", "--state", "delayed"},
        {"dead", "list", "t"},
        {"limits"},
        {"schedule", "get", "s1"},
        {"schedule", "ls"}}) {
    CliRun r = cli(with(target, args));
    EXPECT_EQ(r.exit, 0) << describe(r);
    EXPECT_EQ(files_of(store), before) << "delayq " << args[0] << " changed the store";
  }
  CliRun w = cli(with(target, {"cancel", "j2"}));
  ASSERT_EQ(w.exit, 0) << describe(w);
  EXPECT_NE(files_of(store), before) << "a cancel left every file as it was";
}

}  // namespace
