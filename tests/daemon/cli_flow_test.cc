// The delayq CLI's flow-control and browsing commands (src/cli/flow_commands.cc): `push
// --priority`, `ls`, `limits set`, `limits clear`, `limits`. Each runs in this process
// (cli::run) against a delayqd in this process over a recording queue
// (tests/support/recording_queue.h), so that what reaches the queue and what is printed are both
// checked whatever the engine implements yet. Bad flags exit 2 naming the flag, before the
// target is opened.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "api_harness.h"
#include "cli/commands.h"
#include "cli/parse.h"
#include "inprocess_daemon.h"
#include "recording_queue.h"

namespace delayq::testing {
namespace {

using namespace std::chrono_literals;

struct CliOutcome {
  int exit = -1;
  std::string out, err;
};

std::string describe(const CliOutcome& r) {
  return "exit " + std::to_string(r.exit) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

class CliFlow : public ::testing::Test {
 protected:
  void SetUp() override {
    // Small bodies: the daemon asks the queue for a whole page at once (routes_list.cc).
    http::ApiOptions options;
    options.max_job_bytes = 1000;
    daemon_ = std::make_unique<InProcessDaemon>(recorder_, options);
    ASSERT_FALSE(daemon_->url().empty());
  }
  CliOutcome cli(std::vector<std::string> args) {
    args.insert(args.begin(), {"--url", daemon_->url()});
    std::istringstream in;
    std::ostringstream out, err;
    CliOutcome r;
    r.exit = cli::run(args, in, out, err);
    r.out = out.str();
    r.err = err.str();
    return r;
  }
  // Exit 2 with `says` on stderr, and nothing asked of the queue.
  void expect_usage(const std::vector<std::string>& args, const std::string& says) {
    recorder_.topic = "(untouched)";
    const size_t lists = recorder_.lists.size();
    const CliOutcome r = cli(args);
    EXPECT_EQ(r.exit, 2) << describe(r);
    EXPECT_TRUE(has(r.err, says)) << describe(r);
    EXPECT_EQ(recorder_.topic, "(untouched)") << describe(r);
    EXPECT_EQ(recorder_.lists.size(), lists) << describe(r);
  }

  RecordingQueue recorder_;
  std::unique_ptr<InProcessDaemon> daemon_;
};

TEST_F(CliFlow, PushTakesAPriority) {
  CliOutcome r = cli({"push", "t", "--id", "a", "--priority", "0", "--json"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_EQ(recorder_.pushed.priority, 0u);
  EXPECT_TRUE(has(r.out, R"("priority":0)")) << r.out;
  r = cli({"push", "t", "--id", "b", "--priority", "4294967295"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_EQ(recorder_.pushed.priority, 4294967295u);
  EXPECT_TRUE(has(r.out, ", priority 4294967295")) << r.out;
  r = cli({"push", "t", "--id", "c"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_EQ(recorder_.pushed.priority, kDefaultPriority);
  for (const char* bad : {"-1", "4294967296", "99999999999999999999999", "1.5", "high", ""})
    expect_usage({"push", "t", "--priority", bad},
                 "--priority: expected a whole number from 0 to 4294967295");
}

TEST_F(CliFlow, LimitsSetReachesTheQueue) {
  CliOutcome r = cli({"limits", "set", "mail", "--rate", "50/1s", "--burst", "10", "--max-in-flight",
               "4"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_EQ(recorder_.topic, "mail");
  EXPECT_EQ(recorder_.limits,
            (TopicLimits{.rate = TopicLimits::Rate{50, 1s, 10}, .max_in_flight = 4}));
  EXPECT_EQ(r.out, "topic mail: at most 50/1s (bursts of 10), at most 4 in flight\n");
  r = cli({"limits", "set", "mail", "--rate", "1000/1min", "--json"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_EQ(recorder_.limits, (TopicLimits{.rate = TopicLimits::Rate{1000, 1min, 1}}));
  EXPECT_EQ(r.out,
            R"({"topic":"mail","limits":{"rate":{"count":1000,"per_ms":60000,"burst":1}}})" "\n");
  r = cli({"limits", "set", "mail", "--rate", "5/s"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_EQ(recorder_.limits, (TopicLimits{.rate = TopicLimits::Rate{5, 1s, 1}}));
}

TEST_F(CliFlow, BadLimitsExitTwoNamingTheFlag) {
  const std::pair<std::vector<std::string>, const char*> cases[] = {
      {{"limits", "set", "t"}, "give --rate COUNT/PERIOD, --max-in-flight N, or both"},
      {{"limits", "set", "t", "--rate", "-5/1s"}, "a negative rate"},
      {{"limits", "set", "t", "--rate", "50"}, "expected COUNT/PERIOD"},
      {{"limits", "set", "t", "--rate", "0/1s"}, "rate count must be at least 1"},
      {{"limits", "set", "t", "--rate", "5/0s"}, "rate period must be positive"},
      {{"limits", "set", "t", "--rate", "5/-1s"}, "negative"},
      {{"limits", "set", "t", "--rate", "4294967296/1s"}, "count: expected a whole number"},
      {{"limits", "set", "t", "--rate", "5/1s", "--burst", "0"}, "burst must be between 1"},
      {{"limits", "set", "t", "--rate", "5/1s", "--burst", "1000001"}, "burst must be between"},
      {{"limits", "set", "t", "--rate", "5/1s", "--burst", "-1"}, "bad --burst"},
      {{"limits", "set", "t", "--burst", "3"}, "--burst applies to --rate"},
      {{"limits", "set", "t", "--max-in-flight", "0"}, "max_in_flight must be at least 1"},
      {{"limits", "set", "t", "--max-in-flight", "4294967296"}, "bad --max-in-flight"},
      {{"limits", "set", "t", "--max-inflight", "3"}, "(did you mean '--max-in-flight'?)"},
      {{"limits", "set"}, "limits set needs a TOPIC"},
      {{"limits", "clear", "t", "--rate", "5/1s"}, "--rate does not apply to limits clear"},
      {{"limits", "t"}, "unexpected argument 't'"},
  };
  for (const auto& [args, says] : cases) expect_usage(args, says);
  // A period beyond the queue's max_delay (the daemon's 3650 days): the target's refusal, exit 1.
  recorder_.topic = "(untouched)";
  const CliOutcome r = cli({"limits", "set", "t", "--rate", "5/3651d"});
  EXPECT_EQ(r.exit, 1) << describe(r);
  EXPECT_TRUE(has(r.err, "exceeds max_delay")) << describe(r);
  EXPECT_EQ(recorder_.topic, "(untouched)");
}

TEST_F(CliFlow, LimitsClearAndTheTable) {
  CliOutcome r = cli({"limits", "clear", "mail"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_EQ(recorder_.topic, "mail");
  EXPECT_EQ(r.out, "topic mail has no limits now\n");
  EXPECT_EQ(cli({"limits", "clear", "mail", "--json"}).out,
            R"({"topic":"mail","limits":null})" "\n");

  r = cli({"limits"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "no topic has limits")) << r.out;
  recorder_.flow["mail"] = {.limits = {.rate = TopicLimits::Rate{50, 1s, 10}, .max_in_flight = 4},
                            .tokens = 7, .in_flight = 3, .throttled_rate = 11,
                            .throttled_concurrency = 13};
  recorder_.flow["solo"] = {.limits = {.max_in_flight = 1}, .in_flight = 1};
  r = cli({"limits"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_EQ(r.out,
            "TOPIC   RATE  BURST  TOKENS  MAX IN FLIGHT  IN FLIGHT  THROTTLED RATE/CONC\n"
            "mail   50/1s     10       7              4          3                11/13\n"
            "solo       -      -       -              1          1                  0/0\n")
      << r.out;
  r = cli({"limits", "--json"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_TRUE(has(r.out, R"({"flow":{"mail":{"limits":{"rate":{"count":50,"per_ms":1000,)"
                         R"("burst":10},"max_in_flight":4},"tokens":7,"in_flight":3,)"))
      << r.out;
}

TEST_F(CliFlow, StatsMarksLimitedTopics) {
  ASSERT_EQ(cli({"push", "mail", "--id", "m1"}).exit, 0);
  recorder_.flow["mail"] = {.limits = {.rate = TopicLimits::Rate{50, 1s, 10}, .max_in_flight = 4},
                            .in_flight = 3};
  CliOutcome r = cli({"stats"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "mail (limited: 50/1s, 4 at once, 3 in flight)  ")) << r.out;
  r = cli({"stats", "--json"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_TRUE(has(r.out, R"("flow":{"mail":{"limits":{"rate":{"count":50,"per_ms":1000,)"))
      << r.out;
}

JobInfo job(std::string id, JobState s, uint32_t priority) {
  return JobInfo{.id = std::move(id), .topic = "t", .state = s, .attempts = 1, .max_attempts = 3,
                 .body = "hello", .priority = priority};
}

TEST_F(CliFlow, LsPrintsAPageAndTheNextCursorOnStderr) {
  recorder_.pages = {JobPage{{job("a", JobState::ready, 5), job("b", JobState::ready, 1024)},
                             "c1.next"}};
  CliOutcome r = cli({"ls", "t", "--state", "ready", "--limit", "2", "--cursor", "c1.prev"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  ASSERT_EQ(recorder_.lists.size(), 1u);
  EXPECT_EQ(recorder_.lists[0].state, JobState::ready);
  EXPECT_EQ(recorder_.lists[0].limit, 2u);
  EXPECT_EQ(recorder_.lists[0].cursor, "c1.prev");
  EXPECT_TRUE(has(r.out, "ID  PRIORITY  DUE")) << r.out;
  EXPECT_TRUE(has(r.out, "a          5  ")) << r.out;
  EXPECT_TRUE(has(r.out, "1/3  hello\n")) << r.out;
  EXPECT_EQ(r.err, "more: run the same ls with --cursor c1.next (or --all for every page)\n");

  // The default page size; --json: the page and its cursor.
  r = cli({"ls", "t", "--state", "dead", "--json"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_EQ(recorder_.lists.back().limit, 100u);
  EXPECT_EQ(recorder_.lists.back().state, JobState::dead);
  auto v = wire::json::parse(r.out);
  ASSERT_TRUE(v.ok()) << r.out;
  EXPECT_EQ(v->find("jobs")->as_array().size(), 2u);
  EXPECT_EQ(wire::json::member_int(v->find("jobs")->as_array()[0], "priority"), 5);
  EXPECT_EQ(wire::json::member_string(*v, "cursor"), "c1.next");
  EXPECT_EQ(r.err, "");
}

TEST_F(CliFlow, LsAllFollowsTheCursorsToTheEnd) {
  recorder_.pages = {JobPage{{job("a", JobState::delayed, 1)}, "c1.1"},
                     JobPage{{job("b", JobState::delayed, 2)}, "c1.2"},
                     JobPage{{job("c", JobState::delayed, 3)}, ""}};
  CliOutcome r = cli({"ls", "t", "--state", "delayed", "--limit", "1", "--all", "--json"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  ASSERT_EQ(recorder_.lists.size(), 3u);
  EXPECT_EQ(recorder_.lists[1].cursor, "c1.1");
  EXPECT_EQ(recorder_.lists[2].cursor, "c1.2");
  auto v = wire::json::parse(r.out);
  ASSERT_TRUE(v.ok()) << r.out;
  EXPECT_EQ(v->find("jobs")->as_array().size(), 3u);
  EXPECT_TRUE(v->find("cursor")->is_null());
  EXPECT_EQ(r.err, "");
  // As text: each page as it comes, the header once, no hint after the last page.
  recorder_.lists.clear();
  r = cli({"ls", "t", "--state", "delayed", "--limit", "1", "--all"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_EQ(recorder_.lists.size(), 3u);
  EXPECT_EQ(r.out.find("ID  PRIORITY  DUE"), 0u) << r.out;
  EXPECT_EQ(r.out.find("ID", 1), std::string::npos) << r.out;
  for (const char* row : {"\na  ", "\nb  ", "\nc  "}) EXPECT_TRUE(has(r.out, row)) << r.out;
  EXPECT_EQ(r.err, "");
  // Nothing in the state: said so.
  recorder_.pages = {JobPage{}};
  r = cli({"ls", "t", "--state", "reserved"});
  ASSERT_EQ(r.exit, 0) << describe(r);
  EXPECT_EQ(r.out, "no reserved jobs in topic t\n");
}

TEST_F(CliFlow, LsFailuresAndBadFlags) {
  recorder_.refuse = Status(Errc::invalid_argument, "cursor is not a delayq cursor");
  CliOutcome r = cli({"ls", "t", "--state", "ready", "--cursor", "junk", "--json"});
  EXPECT_EQ(r.exit, 1) << describe(r);
  EXPECT_TRUE(has(r.err, "cursor is not a delayq cursor")) << describe(r);
  auto v = wire::json::parse(r.out);
  ASSERT_TRUE(v.ok()) << r.out;
  EXPECT_EQ(wire::json::member_string(*v, "error"), "invalid_argument");
  // A failure after a page of --all --json: one document, the jobs so far, the cursor to resume
  // from, the error.
  recorder_.lists.clear();
  recorder_.refuse_after = 1;
  recorder_.pages = {JobPage{{job("a", JobState::ready, 1)}, "c1.1"}};
  r = cli({"ls", "t", "--state", "ready", "--all", "--json"});
  EXPECT_EQ(r.exit, 1) << describe(r);
  v = wire::json::parse(r.out);
  ASSERT_TRUE(v.ok()) << r.out;
  EXPECT_EQ(v->find("jobs")->as_array().size(), 1u) << r.out;
  EXPECT_EQ(wire::json::member_string(*v, "cursor"), "c1.1") << r.out;
  EXPECT_EQ(wire::json::member_string(*v, "error"), "invalid_argument") << r.out;
  recorder_.refuse = Status();
  recorder_.refuse_after = 0;
  const std::pair<std::vector<std::string>, const char*> cases[] = {
      {{"ls", "t"}, "ls needs --state delayed, ready, reserved or dead"},
      {{"ls", "t", "--state", "waiting"}, "--state must be delayed, ready, reserved or dead"},
      {{"ls", "t", "--state", "ready", "--limit", "0"}, "bad --limit: expected a whole number "
                                                        "from 1 to 1000"},
      {{"ls", "t", "--state", "ready", "--limit", "1001"}, "from 1 to 1000"},
      {{"ls", "t", "--state", "ready", "--limit", "-3"}, "bad --limit"},
      {{"ls", "t", "--state", "ready", "--cursor", ""}, "--cursor is empty"},
      {{"ls", "t", "--state", "ready", "--all=yes"}, "--all takes no value"},
      {{"ls", "--state", "ready"}, "ls needs a TOPIC"},
      {{"ls", "t", "--state", "ready", "--rate", "5/s"}, "--rate does not apply to ls"},
  };
  for (const auto& [args, says] : cases) expect_usage(args, says);
}

TEST(CliFlowParse, Rates) {
  EXPECT_EQ(*cli::parse_rate("50/1s"), (TopicLimits::Rate{50, 1s, 1}));
  EXPECT_EQ(*cli::parse_rate("1000/1min"), (TopicLimits::Rate{1000, 1min, 1}));
  EXPECT_EQ(*cli::parse_rate("3/250ms"), (TopicLimits::Rate{3, 250ms, 1}));
  EXPECT_EQ(*cli::parse_rate("7/h"), (TopicLimits::Rate{7, 1h, 1}));
  EXPECT_EQ(*cli::parse_rate("4294967295/1s"), (TopicLimits::Rate{4294967295u, 1s, 1}));
  for (const char* bad : {"", "/", "50", "50/", "x/1s", "-1/1s", "50/1x", "4294967296/1s"}) {
    auto r = cli::parse_rate(bad);
    EXPECT_EQ(r.status().code(), Errc::invalid_argument) << bad;
  }
}

}  // namespace
}  // namespace delayq::testing
