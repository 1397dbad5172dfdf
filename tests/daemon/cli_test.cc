// The delayq command-line tool: its parsers and formatters as units, then the real `delayq`
// binary end to end against the three targets (a store directory, a running delayqd, a private
// redis-server), in human and --json output, with the exit codes and messages of bad input.
// The CLI cannot reserve jobs, so the tests make dead letters through the library (or the
// daemon's /pop and /nack) and inspect them with the CLI. Timeouts are generous and nothing
// asserts on durations: the machine may be slow and shared.
//
// Kept whole over ~400 lines: one file for the one program, units first, then end to end, so that
// everything that tests the CLI's behaviour is in one place.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/target.h"
#include "cli/human_text.h"
#include "cli/parse.h"
#include "cli_harness.h"
#include "delayq/redis.h"
#include "delayq/store.h"
#include "http_client.h"
#include "redis_server.h"
#include "wire/http_client.h"
#include "wire/json.h"

namespace {

using namespace std::chrono_literals;
namespace json = delayq::wire::json;
namespace fs = std::filesystem;
using delayq::Duration;
using delayq::Errc;
using delayq::RetryPolicy;
using delayq::TimePoint;
using namespace delayq::cli;
using namespace delayq::testing;

// ---- units -----------------------------------------------------------------------------------

TEST(CliParse, Durations) {
  EXPECT_EQ(*parse_duration("30m"), 30min);
  EXPECT_EQ(*parse_duration("90s"), 90s);
  EXPECT_EQ(*parse_duration("1500ms"), 1500ms);
  EXPECT_EQ(*parse_duration("2h"), 2h);
  EXPECT_EQ(*parse_duration("3d"), 72h);
  EXPECT_EQ(*parse_duration("1h30m"), 90min);
  EXPECT_EQ(*parse_duration("0"), 0s);
  EXPECT_EQ(*parse_duration("0s"), 0s);
  // The spellings people type (docs/cli.md, "Values").
  EXPECT_EQ(*parse_duration("5min"), 5min);
  EXPECT_EQ(*parse_duration("2h30m"), 150min);
  EXPECT_EQ(*parse_duration("500ms"), 500ms);
  EXPECT_EQ(*parse_duration("90sec"), 90s);
  EXPECT_EQ(*parse_duration("1hr30min"), 90min);
  EXPECT_EQ(*parse_duration("2hrs"), 2h);
  EXPECT_EQ(*parse_duration("1day12hours"), 36h);
  EXPECT_EQ(*parse_duration("3days"), 72h);
  EXPECT_EQ(*parse_duration("10seconds"), 10s);
  EXPECT_EQ(*parse_duration("1minute"), 1min);
  EXPECT_EQ(*parse_duration("250msec"), 250ms);
  // Fractions of a unit (issue 21): exact to the nanosecond, range-checked before conversion.
  EXPECT_EQ(*parse_duration("1.5h"), 90min);
  EXPECT_EQ(*parse_duration("0.5s"), 500ms);
  EXPECT_EQ(*parse_duration("1.25min"), 75s);
  EXPECT_EQ(*parse_duration("0.001s"), 1ms);
  EXPECT_EQ(*parse_duration("1.5ms"), std::chrono::microseconds(1500));
  EXPECT_EQ(*parse_duration("0.1d"), std::chrono::minutes(144));
  EXPECT_EQ(*parse_duration("1h0.5m"), 3630s);
  EXPECT_EQ(*parse_duration("0.000000001s"), std::chrono::nanoseconds(1));
  EXPECT_EQ(*parse_duration("36499.999999999d"),
            std::chrono::hours(24 * 36500) - std::chrono::nanoseconds(86400));
  for (const char* bad : {"", "90", "5x", "1.5", "1.s", ".5s", "1..5s", "1.5.5s",
                          "0.0000000001s", "36500.5d", "99999999999999.5d", "-5s", "s", "10 s",
                          "99999999999999d", "5MIN", "5mon", "2w", "-0s", "1h-5m"}) {
    auto d = parse_duration(bad);
    EXPECT_TRUE(d.is(Errc::invalid_argument)) << bad;
  }
  EXPECT_NE(parse_duration("5x").status().message().find("unknown unit 'x'"), std::string::npos);
  EXPECT_NE(parse_duration("5x").status().message().find("5min"), std::string::npos);
  EXPECT_NE(parse_duration("90").status().message().find("no unit"), std::string::npos);
  // A bare number, or one that is cut short, names the units there are.
  for (const char* bad : {"5", "90", "1.5", "1h5"}) {
    const std::string m = parse_duration(bad).status().message();
    EXPECT_NE(m.find("has no unit (units: ms, s (sec), m (min), h (hr), d (day)"), std::string::npos)
        << bad << ": " << m;
  }
  EXPECT_NE(parse_duration("36500.5d").status().message().find("longer than 36500 days"),
            std::string::npos);
  EXPECT_NE(parse_duration("-5s").status().message().find("negative"), std::string::npos)
      << parse_duration("-5s").status().message();
}

// --json: a failed call and bad usage print one JSON document on stdout too (scripts piping to
// jq get something to test), with the same exit codes and stderr line as without it.
TEST(CliJson, FailuresAreJsonOnStdoutToo) {
  TempDir dir;
  const std::string store = dir.sub("store");
  ASSERT_EQ(cli({"--store", store, "push", "t", "--id", "a"}).exit, 0);

  CliRun missing = cli({"--store", store, "get", "nope", "--json"});
  EXPECT_EQ(missing.exit, 1) << describe(missing);
  EXPECT_TRUE(contains(missing.err, "delayq: get nope: not found: no job with id 'nope'"))
      << missing.err;
  EXPECT_EQ(at(missing.json(), "error").as_string(), "not_found");
  EXPECT_TRUE(contains(at(missing.json(), "message").as_string(), "no job with id 'nope'"));

  CliRun dup = cli({"--json", "--store", store, "push", "t", "--id", "a"});
  EXPECT_EQ(dup.exit, 1) << describe(dup);
  EXPECT_EQ(at(dup.json(), "error").as_string(), "duplicate_id");

  CliRun negative = cli({"--store", store, "push", "t", "--delay", "-5s", "--json"});
  EXPECT_EQ(negative.exit, 2) << describe(negative);
  EXPECT_TRUE(contains(negative.err, "--delay: bad duration '-5s': it is negative"))
      << negative.err;
  EXPECT_TRUE(contains(negative.err, "usage: delayq TARGET push")) << negative.err;
  EXPECT_EQ(at(negative.json(), "error").as_string(), "usage");
  EXPECT_TRUE(contains(at(negative.json(), "message").as_string(), "it is negative"));

  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--json"}, {"--json", "--store", store, "dead"}, {"--json", "stats"}}) {
    CliRun r = cli(args);
    EXPECT_EQ(r.exit, 2) << describe(r);
    EXPECT_EQ(at(r.json(), "error").as_string(), "usage") << describe(r);
  }
  // Without --json stdout stays empty on failure.
  CliRun plain = cli({"--store", store, "get", "nope"});
  EXPECT_EQ(plain.exit, 1);
  EXPECT_TRUE(plain.out.empty()) << plain.out;

  // The units people type reach the queue: 5min is 300 s away.
  CliRun five = cli({"--store", store, "push", "t", "--id", "five", "--delay", "5min"});
  ASSERT_EQ(five.exit, 0) << describe(five);
  CliRun got = cli({"--store", store, "get", "five", "--json"});
  const int64_t due_ms = at(got.json(), "due_ms").as_int();
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  EXPECT_GT(due_ms, now_ms + 240'000) << got.out;
  EXPECT_LE(due_ms, now_ms + 300'000) << got.out;
}

TEST(CliParse, Times) {
  const TimePoint t0 = TimePoint(std::chrono::seconds(1795288345));  // 2026-11-21T19:12:25Z
  EXPECT_EQ(*parse_time("2026-11-21T19:12:25Z"), t0);
  EXPECT_EQ(*parse_time("2026-11-21 20:12:25+01:00"), t0);
  EXPECT_EQ(*parse_time("2026-11-21T14:42:25-04:30"), t0);
  EXPECT_EQ(*parse_time("2026-11-21T19:12:25.250Z"), t0 + 250ms);
  EXPECT_EQ(*parse_time("1795288345"), t0);
  EXPECT_EQ(*parse_time("1795288345.5"), t0 + 500ms);
  for (const char* bad :
       {"", "2026-11-21T19:12:25", "2026-02-30T00:00:00Z", "2026-11-21", "2026-11-21T25:00:00Z",
        "tomorrow", "2026-11-21T19:12:25Zjunk", "2026-11-21T19:12:25+1:00"}) {
    EXPECT_TRUE(parse_time(bad).is(Errc::invalid_argument)) << bad;
  }
}

TEST(CliParse, RetryPolicies) {
  EXPECT_EQ(*parse_retry("list:2m,10m,1h"), RetryPolicy::list({2min, 10min, 1h}));
  EXPECT_EQ(*parse_retry("fixed:30s:5"), RetryPolicy::fixed(30s, 5));
  EXPECT_EQ(*parse_retry("fixed:0s:1"), RetryPolicy::fixed(0s, 1));
  EXPECT_EQ(*parse_retry("exp:1s:2:1h:10"), RetryPolicy::exponential(1s, 2, 1h, 0, 10));
  EXPECT_EQ(*parse_retry("exp:1s:2:1h:10:0.2"), RetryPolicy::exponential(1s, 2, 1h, 0.2, 10));
  for (const char* bad :
       {"", "list", "list:", "list:2m,,1h", "fixed:30s", "fixed:30s:0", "fixed:30x:5",
        "exp:1s:two:1h:10", "exp:1s:2:1h", "exp:1s:2:1h:10:7", "linear:1s"}) {
    auto p = parse_retry(bad);
    EXPECT_TRUE(p.is(Errc::invalid_argument)) << bad;
  }
}

TEST(CliParse, CountsAndUrls) {
  EXPECT_EQ(*parse_count("10", 1, 100), 10u);
  EXPECT_FALSE(parse_count("0", 1, 100).ok());
  EXPECT_FALSE(parse_count("101", 1, 100).ok());
  EXPECT_FALSE(parse_count("1x", 1, 100).ok());
  using delayq::wire::parse_http_url;
  auto u = parse_http_url("http://127.0.0.1:9277");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 9277);
  EXPECT_EQ(u->prefix, "");
  u = parse_http_url("http://[::1]:80/q/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->prefix, "/q");
  EXPECT_EQ(parse_http_url("http://example.com")->port, 80);
  for (const char* bad :
       {"127.0.0.1:9277", "https://h:1", "http://:1", "http://h:0", "http://h:x", "http://h:"})
    EXPECT_FALSE(parse_http_url(bad).ok()) << bad;
  EXPECT_EQ(parse_url_flag("127.0.0.1:9277").status().message(),
            "bad --url '127.0.0.1:9277': it does not start with http:// (expected "
            "http://HOST:PORT, e.g. http://127.0.0.1:9277)");
}

TEST(CliFormat, TimesAndSpans) {
  const TimePoint t0 = TimePoint(std::chrono::seconds(1795288345));
  EXPECT_EQ(format_utc_time(t0), "2026-11-21T19:12:25Z");
  EXPECT_EQ(format_utc_time(t0 + 250ms), "2026-11-21T19:12:25.250Z");
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  EXPECT_EQ(format_local_time(t0), "2026-11-21T19:12:25Z");
  ::setenv("TZ", "Asia/Kolkata", 1);  // +05:30, no daylight saving
  ::tzset();
  if (format_local_time(t0) != "2026-11-21T19:12:25Z") {  // the zone database may be missing
    EXPECT_EQ(format_local_time(t0), "2026-11-22T00:42:25+05:30");
  }
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  EXPECT_EQ(format_relative(t0 + 29min + 58s + 300ms, t0), "in 29m58s");
  EXPECT_EQ(format_relative(t0 - 3s, t0), "3s ago");
  EXPECT_EQ(format_relative(t0, t0), "now");
  EXPECT_EQ(format_relative(t0 + 250ms, t0), "in 250ms");
  EXPECT_EQ(format_relative(t0 + 49h + 5s, t0), "in 2d1h");
  EXPECT_EQ(format_relative(t0 - 90min, t0), "1h30m ago");
  EXPECT_EQ(format_span(30s), "30s");
  EXPECT_EQ(format_span(90min), "1h30m");
  EXPECT_EQ(format_span(1500ms), "1500ms");
}

// `get` shows a job's retry policy the way --retry takes it: each form reads back as it was.
TEST(CliFormat, RetryPoliciesInTheFormRetryTakes) {
  const std::pair<RetryPolicy, std::string> cases[] = {
      {RetryPolicy::list({2min, 10min, 10min, 1h, 2h, 6h, 15h}), "list:2m,10m,10m,1h,2h,6h,15h"},
      {RetryPolicy::fixed(30s, 5), "fixed:30s:5"},
      {RetryPolicy::fixed(1500ms, 1), "fixed:1500ms:1"},
      {RetryPolicy::exponential(1s, 2, 1h, 0, 10), "exp:1s:2:1h:10"},
      {RetryPolicy::exponential(250ms, 1.5, 90min, 0.2, 3), "exp:250ms:1.5:1h30m:3:0.2"},
  };
  for (const auto& [policy, text] : cases) {
    EXPECT_EQ(format_retry(policy), text);
    auto back = parse_retry(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().to_string();
    EXPECT_EQ(*back, policy) << text;
  }
  RetryPolicy longer = RetryPolicy::list({1s, 2s});
  longer.max_attempts = 5;  // possible through the library, not through --retry
  EXPECT_EQ(format_retry(longer), "list:1s,2s (5 attempts)");
}

TEST(CliFormat, Printable) {
  EXPECT_EQ(printable("2 x beans"), "2 x beans");
  EXPECT_EQ(printable("größe ✓"), "größe ✓");
  EXPECT_EQ(printable("a\nb\tc\\"), "a\\nb\\tc\\\\");
  EXPECT_EQ(printable(std::string("\x01\xff\x1b[31m", 7)), "\\x01\\xff\\x1b[31m");
  EXPECT_EQ(printable("\xc2\x9b"), "\\xc2\\x9b");           // C1 control (CSI)
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable(std::string(100, 'x'), 10), std::string(10, 'x') + "...");
}

// ---- running the binaries ----------------------------------------------------------------------

// The checks every target must pass: push (human and --json), get, stats, cancel, errors.
// `target` is the target flags; the queue must not hold topic "orders" yet.
void basic_flow(const std::vector<std::string>& target) {
  const auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), target.begin(), target.end());
    return args;
  };
  CliRun push =
      cli(with({"push", "orders", "--id", "o-1", "--delay", "30m", "--body", "2 x beans"}));
  ASSERT_EQ(push.exit, 0) << describe(push);
  EXPECT_TRUE(contains(push.out, "pushed o-1 to topic orders, due 20")) << push.out;
  EXPECT_TRUE(contains(push.out, "(in 3")) << push.out;  // "in 30m", or "in 29m59s" when slow

  // Over --url a body is UTF-8 text (delayqd's JSON carries nothing else): refused, not altered.
  const std::vector<std::string> push_stdin = {"--json", "push",  "orders", "--delay",
                                               "1500ms", "--ttr", "2m",     "--retry",
                                               "list:2m,10m,1h", "--body-file", "-"};
  const bool over_http = std::find(target.begin(), target.end(), "--url") != target.end();
  if (over_http) {
    CliRun binary = cli(with(push_stdin), std::string("bin\x01\xff\n", 6));
    EXPECT_EQ(binary.exit, 1) << describe(binary);
    EXPECT_TRUE(contains(binary.err, "body is not valid UTF-8 (byte 4 is not)")) << binary.err;
  }
  CliRun pj = cli(with(push_stdin),
                  std::string("bin\x01", 4) + (over_http ? "\n" : "\xff\n"));
  ASSERT_EQ(pj.exit, 0) << describe(pj);
  const std::string generated = at(pj.json(), "id").as_string();
  EXPECT_FALSE(generated.empty());
  EXPECT_EQ(at(pj.json(), "topic").as_string(), "orders");

  CliRun get = cli(with({"get", "o-1"}));
  ASSERT_EQ(get.exit, 0) << describe(get);
  EXPECT_TRUE(contains(get.out, "state       delayed\n")) << get.out;
  EXPECT_TRUE(contains(get.out, "attempts    0 of 10\n")) << get.out;
  // Pushed without --ttr and --retry: the queue's defaults, as the queue applies them.
  EXPECT_TRUE(contains(get.out, "ttr         30s\nretry       exp:1s:2:1h:10\n")) << get.out;
  EXPECT_TRUE(contains(get.out, "body        2 x beans\n")) << get.out;
  EXPECT_TRUE(contains(get.out, "Z (in 29m") || contains(get.out, "Z (in 30m")) << get.out;

  CliRun gj = cli(with({"get", generated, "--json"}));
  ASSERT_EQ(gj.exit, 0) << describe(gj);
  const json::Value job = gj.json();
  EXPECT_EQ(at(job, "id").as_string(), generated);
  EXPECT_EQ(at(job, "max_attempts").as_int(), 4);  // three listed retries + the first delivery
  EXPECT_EQ(at(job, "ttr_ms").as_int(), 120000);
  // The policy as delayqd's /get shows it (the form /push takes), on every target.
  EXPECT_EQ(at(job, "retry").find("kind")->as_string(), "list") << gj.out;
  EXPECT_TRUE(contains(gj.out, R"("retry":{"kind":"list","delays_ms":[120000,600000,3600000],)"
                               R"("max_attempts":4})"))
      << gj.out;
  // The 0xff byte (not over HTTP) is written as U+FFFD: JSON carries text.
  EXPECT_EQ(at(job, "body").as_string(), over_http ? "bin\x01\n" : "bin\x01\xEF\xBF\xBD\n");
  // Escaped in the table.
  CliRun gh = cli(with({"get", generated}));
  EXPECT_TRUE(contains(gh.out, "ttr         2m\nretry       list:2m,10m,1h\n")) << gh.out;
  EXPECT_TRUE(contains(gh.out, "body        bin\\x01")) << gh.out;
  EXPECT_TRUE(contains(gh.out, "\\n\nbody bytes")) << gh.out;

  CliRun stats = cli(with({"stats"}));
  ASSERT_EQ(stats.exit, 0) << describe(stats);
  EXPECT_TRUE(contains(stats.out, "TOPIC")) << stats.out;
  EXPECT_TRUE(contains(stats.out, "\norders ")) << stats.out;
  EXPECT_TRUE(contains(stats.out, "(total)")) << stats.out;
  CliRun sj = cli(with({"stats", "--json"}));
  ASSERT_EQ(sj.exit, 0) << describe(sj);
  const json::Value s = sj.json();
  const json::Value& orders = at(at(s, "topics"), "orders");
  EXPECT_EQ(at(orders, "delayed").as_int() + at(orders, "ready").as_int(), 2);
  EXPECT_GE(at(s, "pushed").as_int(), 2);
  EXPECT_GE(at(at(s, "total"), "delayed").as_int(), 1);
  // What fires when, per topic: o-1, due in 30 min, in the next hour (the other job, due in
  // 1.5 s, is in the next minute or ready by now). The lateness buckets' bounds come along.
  const json::Value& timing = at(at(s, "timing"), "orders");
  EXPECT_EQ(at(at(timing, "due"), "next_hour").as_int(), 1) << sj.out;
  EXPECT_EQ(at(at(at(timing, "lateness"), "first"), "count").as_int(), 0) << sj.out;
  EXPECT_EQ(at(s, "lateness_bounds_s").as_array().size(), delayq::Lateness::kBounds.size());
  EXPECT_TRUE(contains(stats.out, "NEXT MINUTE  NEXT HOUR  NEXT DAY  NEXT WEEK  BEYOND"))
      << stats.out;
  EXPECT_TRUE(contains(stats.out, "FIRST ATTEMPTS  P50  P99  RETRIES  P50  P99")) << stats.out;

  CliRun dup = cli(with({"push", "orders", "--id", "o-1"}));
  EXPECT_EQ(dup.exit, 1) << describe(dup);
  EXPECT_TRUE(contains(dup.err, "delayq: push orders: duplicate id: ")) << dup.err;

  CliRun cancel = cli(with({"cancel", "o-1"}));
  ASSERT_EQ(cancel.exit, 0) << describe(cancel);
  EXPECT_EQ(cancel.out, "cancelled o-1\n");
  CliRun gone = cli(with({"get", "o-1"}));
  EXPECT_EQ(gone.exit, 1) << describe(gone);
  EXPECT_TRUE(contains(gone.err, "delayq: get o-1: not found: ")) << gone.err;
  EXPECT_TRUE(gone.out.empty());
  CliRun again = cli(with({"--json", "cancel", "o-1"}));
  EXPECT_EQ(again.exit, 1) << describe(again);
  EXPECT_TRUE(contains(again.err, "delayq: cancel o-1: not found: ")) << again.err;

  CliRun refused = cli(with({"push", "orders", "--delay", "36000d"}));
  EXPECT_EQ(refused.exit, 1) << describe(refused);
  EXPECT_TRUE(contains(refused.err, "invalid argument: ")) << refused.err;
}

// The dead-letter commands on topic "jobs", which holds exactly the dead job `id`; `kill` makes
// `id` dead again (the CLI cannot reserve).
void dead_flow(const std::vector<std::string>& target, const std::string& id,
               const std::function<void()>& kill) {
  const auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), target.begin(), target.end());
    return args;
  };
  CliRun list = cli(with({"dead", "list", "jobs"}));
  ASSERT_EQ(list.exit, 0) << describe(list);
  EXPECT_TRUE(contains(list.out, "ID")) << list.out;
  EXPECT_TRUE(contains(list.out, "\n" + id + " ")) << list.out;
  EXPECT_TRUE(contains(list.out, "1/1")) << list.out;
  EXPECT_TRUE(contains(list.out, "1 dead letter in topic jobs")) << list.out;
  CliRun lj = cli(with({"dead", "list", "jobs", "--limit", "5", "--json"}));
  ASSERT_EQ(lj.exit, 0) << describe(lj);
  const json::Value listed = lj.json();
  const auto& jobs = at(listed, "jobs").as_array();
  ASSERT_EQ(jobs.size(), 1u) << lj.out;
  EXPECT_EQ(at(jobs[0], "id").as_string(), id);
  EXPECT_EQ(at(jobs[0], "state").as_string(), "dead");
  EXPECT_EQ(at(jobs[0], "body").as_string(), "payload");

  CliRun one = cli(with({"dead", "requeue", id}));
  ASSERT_EQ(one.exit, 0) << describe(one);
  EXPECT_EQ(one.out, "requeued " + id + "\n");
  CliRun state = cli(with({"get", id, "--json"}));
  EXPECT_EQ(at(state.json(), "state").as_string(), "ready") << state.out;
  EXPECT_EQ(at(state.json(), "attempts").as_int(), 0) << state.out;
  CliRun twice = cli(with({"dead", "requeue", id}));
  EXPECT_EQ(twice.exit, 1) << describe(twice);
  EXPECT_TRUE(contains(twice.err, "delayq: dead requeue " + id + ": invalid state: ")) << twice.err;

  kill();
  CliRun all = cli(with({"dead", "requeue", "--topic", "jobs", "--json"}));
  ASSERT_EQ(all.exit, 0) << describe(all);
  EXPECT_EQ(at(all.json(), "requeued").as_int(), 1);

  kill();
  CliRun purge = cli(with({"dead", "purge", "jobs"}));
  ASSERT_EQ(purge.exit, 0) << describe(purge);
  EXPECT_EQ(purge.out, "purged 1 dead letter of topic jobs\n");
  CliRun empty = cli(with({"dead", "list", "jobs"}));
  EXPECT_EQ(empty.exit, 0);
  EXPECT_EQ(empty.out, "no dead letters in topic jobs\n");
  CliRun missing = cli(with({"get", id}));
  EXPECT_EQ(missing.exit, 1) << describe(missing);
}

// pause and resume of topic "pz" (which holds one job) and of "pz-empty" (no job): each run is
// a new process, so on a store the pause is read back from disk. stats marks paused topics.
void pause_flow(const std::vector<std::string>& target) {
  const auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), target.begin(), target.end());
    return args;
  };
  ASSERT_EQ(cli(with({"push", "pz", "--id", "pz-1"})).exit, 0);
  CliRun pause = cli(with({"pause", "pz"}));
  ASSERT_EQ(pause.exit, 0) << describe(pause);
  EXPECT_EQ(pause.out, "topic pz is paused: it hands out nothing until resumed\n");
  CliRun pj = cli(with({"--json", "pause", "pz-empty"}));
  ASSERT_EQ(pj.exit, 0) << describe(pj);
  EXPECT_EQ(pj.out, "{\"topic\":\"pz-empty\",\"paused\":true}\n");
  CliRun stats = cli(with({"stats"}));
  EXPECT_TRUE(contains(stats.out, "\npz (paused) ")) << stats.out;
  EXPECT_TRUE(contains(stats.out, "\npz-empty (paused) ")) << stats.out;
  CliRun sj = cli(with({"stats", "--json"}));
  EXPECT_TRUE(at(at(at(sj.json(), "topics"), "pz"), "paused").as_bool()) << sj.out;
  EXPECT_EQ(at(at(at(sj.json(), "topics"), "pz"), "ready").as_int(), 1) << sj.out;
  CliRun resume = cli(with({"resume", "pz"}));
  ASSERT_EQ(resume.exit, 0) << describe(resume);
  EXPECT_EQ(resume.out, "topic pz is running\n");
  ASSERT_EQ(cli(with({"resume", "pz-empty"})).exit, 0);
  sj = cli(with({"stats", "--json"}));
  EXPECT_FALSE(at(at(at(sj.json(), "topics"), "pz"), "paused").as_bool()) << sj.out;
  EXPECT_EQ(at(sj.json(), "topics").find("pz-empty"), nullptr) << sj.out;
  CliRun bad = cli(with({"pause", std::string(300, 't')}));
  EXPECT_EQ(bad.exit, 1) << describe(bad);
  EXPECT_TRUE(contains(bad.err, "invalid argument: topic is 300 bytes long")) << bad.err;
  EXPECT_EQ(cli(with({"resume"})).exit, 2);
  ASSERT_EQ(cli(with({"cancel", "pz-1"})).exit, 0);
}

// Reserves `id` from topic "jobs" and fails its delivery; with max_attempts 1 it is dead then.
void kill_through(delayq::Queue& q, const std::string& id) {
  auto d = q.reserve("jobs", 60s);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  ASSERT_EQ(d->id, id);
  ASSERT_TRUE(q.nack(d->token).ok());
  auto info = q.get(id);
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->state, delayq::JobState::dead);
}

// ---- (a) a store directory --------------------------------------------------------------------

// A store directory that the commands name with --store (the first that writes makes it).
class CliStore : public ::testing::Test {
 protected:
  TempDir dir_;
  const std::string store_ = dir_.sub("store");
};

TEST_F(CliStore, PushGetCancelStats) {
  basic_flow({"--store", store_});
}

TEST_F(CliStore, DeadLetters) {
  CliRun push = cli({"--store", store_, "push", "jobs", "--id", "d1", "--retry", "fixed:0s:1",
                     "--body", "payload"});
  ASSERT_EQ(push.exit, 0) << describe(push);
  // The library, between CLI runs: the store is one process's at a time.
  const auto kill = [&] {
    auto q = delayq::open_store({.dir = store_});
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    kill_through(**q, "d1");
  };
  kill();
  dead_flow({"--store", store_}, "d1", kill);
}

TEST_F(CliStore, PauseAndResume) {
  pause_flow({"--store", store_});
}

TEST_F(CliStore, ReadsDoNotChangeTheStoreAndALockedStoreIsRefused) {
  // Every command but push: a missing store is not created.
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"stats"}, {"cancel", "x"}, {"backup", "x"}}) {
    std::vector<std::string> args = {"--store", store_};
    args.insert(args.end(), command.begin(), command.end());
    CliRun missing = cli(args);
    EXPECT_EQ(missing.exit, 1) << describe(missing);
    EXPECT_TRUE(contains(missing.err, "does not exist")) << missing.err;
    EXPECT_FALSE(fs::exists(store_)) << command[0] << " created the store";
  }

  ASSERT_EQ(cli({"--store", store_, "push", "t", "--id", "x"}).exit, 0);
  auto q = delayq::open_store({.dir = store_});
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  for (const auto& args : std::vector<std::vector<std::string>>{{"--store", store_, "stats"},
                                                                {"--store", store_, "push", "t"}}) {
    CliRun r = cli(args);
    EXPECT_EQ(r.exit, 1) << describe(r);
    EXPECT_TRUE(contains(r.err, "unavailable: store directory " + store_ +
                                    " is locked by process " + std::to_string(::getpid())))
        << r.err;
    EXPECT_TRUE(contains(r.err, "--url http://HOST:PORT")) << r.err;
  }
  q->reset();
  CliRun get = cli({"--store", store_, "get", "x"});
  EXPECT_EQ(get.exit, 0) << describe(get);
}

// ---- bad usage --------------------------------------------------------------------------------

TEST(CliUsage, BadInputExitsTwoAndSaysWhy) {
  TempDir dir;
  const std::string store = dir.sub("store");
  struct Case {
    std::vector<std::string> args;
    std::string message;
    std::string usage;  // a part of the usage line shown
  };
  const std::vector<Case> cases = {
      {{"--store", store, "frob"}, "delayq: unknown command 'frob'", "usage: delayq TARGET"},
      {{"--store", store, "push", "t", "--delay", "5x"},
       "delayq: push: --delay: bad duration '5x': unknown unit 'x'",
       "usage: delayq TARGET push"},
      {{"--store", store, "push", "t", "--delay", "90"}, "has no unit", "push TOPIC"},
      {{"--store", store, "push", "t", "--due-at", "tomorrow"}, "--due-at: bad time", "push"},
      {{"--store", store, "push", "t", "--retry", "fixed:1s"}, "--retry: bad retry policy", "push"},
      {{"--store", store, "push", "t", "--delay", "1s", "--due-at", "0"}, "not both", "push"},
      {{"--store", store, "push", "t", "--body", "a", "--body-file", "-"}, "not both", "push"},
      {{"--store", store, "push", "t", "--body-file", dir.sub("none")},
       "cannot read --body-file",
       "push"},
      {{"--store", store, "get"}, "delayq: get: get needs an ID", "usage: delayq TARGET get ID"},
      {{"--store", store, "push"}, "push needs a TOPIC", "push TOPIC"},
      {{"--store", store, "get", "a", "b"}, "unexpected argument 'b'", "get ID"},
      {{"--store", store, "get", "a", "--limit", "3"}, "--limit does not apply to get", "get ID"},
      {{"--store", store, "dead", "list", "t", "--limit", "0"}, "bad --limit", "dead list TOPIC"},
      {{"--store", store, "dead", "requeue", "x", "--topic", "t"}, "not both", "dead requeue"},
      {{"--store", store, "dead"}, "dead needs a subcommand", "dead purge TOPIC"},
      {{"--store", store, "dead", "bury", "t"}, "unknown command 'dead bury'", "usage:"},
      {{"stats"}, "no target", "usage: delayq TARGET stats"},
      {{"--store", store, "--url", "http://127.0.0.1:1", "stats"}, "give one target", "stats"},
      {{"--store", store, "--queue", "q", "stats"}, "apply to --redis only", "stats"},
      {{"--store", store, "--token-file", "f", "stats"}, "applies to --url only", "stats"},
      {{"--url", "127.0.0.1:9277", "stats"}, "bad --url '127.0.0.1:9277'", "stats"},
      {{"--redis", "unix:///x", "--shards", "0", "stats"}, "bad --shards", "stats"},
      {{"--store", store, "stats", "--frob"},
       "unknown flag '--frob'",
       "usage: delayq TARGET stats"},
      {{"--store", store, "get", "--store"}, "--store needs a value", "get"},
      {{"--store", store, "--store", store, "stats"}, "--store given twice", "stats"},
      {{}, "no command given", "Commands:"},
  };
  for (const Case& k : cases) {
    CliRun r = cli(k.args);
    std::string joined;
    for (const auto& a : k.args) joined += a + " ";
    EXPECT_EQ(r.exit, 2) << joined << "\n" << describe(r);
    EXPECT_TRUE(contains(r.err, k.message)) << joined << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, k.usage)) << joined << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << joined << "\n" << r.out;
  }
  EXPECT_FALSE(fs::exists(store)) << "bad usage must not open the store";

  CliRun help = cli({"help"});
  EXPECT_EQ(help.exit, 0);
  for (const char* cmd : {"push TOPIC", "get ID", "cancel ID", "stats", "dead list TOPIC",
                          "dead requeue ID", "dead purge TOPIC", "--store DIR", "--url", "--redis"})
    EXPECT_TRUE(contains(help.out, cmd)) << cmd;
  CliRun one = cli({"help", "dead", "list"});
  EXPECT_EQ(one.exit, 0);
  EXPECT_TRUE(contains(one.out, "usage: delayq TARGET dead list TOPIC [--limit N]")) << one.out;
  EXPECT_EQ(cli({"push", "--help"}).exit, 0);
}

// ---- (b) a running delayqd --------------------------------------------------------------------

class CliDaemonTest : public StoreDaemonTest {
 protected:
  void SetUp() override {
    token_file_ = dir_.sub("token");
    std::ofstream(token_file_) << "s3cret\n";
    ::chmod(token_file_.c_str(), 0600);
    store_ = dir_.sub("store");
    port_ = start({"--token-file", token_file_});
    ASSERT_GT(port_, 0) << "delayqd did not start";
    url_ = "http://127.0.0.1:" + std::to_string(port_);
  }
  std::vector<std::string> target() const { return {"--url", url_, "--token-file", token_file_}; }

  // A daemon route, for what the CLI cannot do (pop, nack).
  json::Value post(const std::string& path, const std::string& body) {
    HttpAnswer a = HttpClient(port_, "s3cret").post(path, body);
    EXPECT_NE(a.status, 0) << "no answer from " << path;
    EXPECT_TRUE(a.json.is_object()) << a.body;
    return a.json;
  }

  std::string token_file_, store_, url_;
  int port_ = 0;
};

TEST_F(CliDaemonTest, PushGetCancelStats) {
  basic_flow(target());
}

TEST_F(CliDaemonTest, DeadLetters) {
  CliRun push = cli({"--url", url_, "--token-file", token_file_, "push", "jobs", "--id", "h1",
                     "--retry", "fixed:0s:1", "--body", "payload"});
  ASSERT_EQ(push.exit, 0) << describe(push);
  const auto kill = [&] {
    const json::Value pop = post("/pop", R"({"topic":"jobs","timeout":60})");
    const json::Value& data = at(pop, "data");
    ASSERT_TRUE(data.is_object()) << "nothing popped";
    ASSERT_EQ(at(data, "id").as_string(), "h1");
    const json::Value nack =
        post("/nack", R"({"token":")" + at(data, "token").as_string() + R"("})");
    ASSERT_EQ(at(nack, "code").as_int(), 0);
  };
  kill();
  dead_flow(target(), "h1", kill);
}

TEST_F(CliDaemonTest, PauseAndResume) {
  pause_flow(target());
}

TEST_F(CliDaemonTest, TokenAndLockedStore) {
  CliRun no_token = cli({"--url", url_, "stats"});
  EXPECT_EQ(no_token.exit, 1) << describe(no_token);
  EXPECT_TRUE(contains(no_token.err, "401 unauthorized")) << no_token.err;
  EXPECT_TRUE(contains(no_token.err, "--token-file")) << no_token.err;

  // The daemon holds the store: the CLI says so and points at --url.
  CliRun locked = cli({"--store", store_, "stats"});
  EXPECT_EQ(locked.exit, 1) << describe(locked);
  EXPECT_TRUE(contains(locked.err, "delayq: stats: unavailable: store directory " + store_ +
                                       " is locked by process " + std::to_string(daemon_.pid()) +
                                       " (delayqd)"))
      << locked.err;
  EXPECT_TRUE(contains(locked.err, "--url")) << locked.err;

  daemon_.kill9();
  CliRun down = cli({"--url", url_, "--token-file", token_file_, "stats"});
  EXPECT_EQ(down.exit, 1) << describe(down);
  EXPECT_TRUE(contains(down.err, "delayq: stats: unavailable: ")) << down.err;
  // The daemon is gone (killed): the store opens now, and holds what was pushed through it.
  CliRun offline = cli({"--store", store_, "stats", "--json"});
  EXPECT_EQ(offline.exit, 0) << describe(offline);
}

// ---- backup --------------------------------------------------------------------------------

// `delayq --store DIR backup COPY`: a copy of a store no process holds, which opens as the same
// queue; refused (and nothing written) while a daemon holds the store, for a store that does
// not exist, and over an existing directory.
TEST(CliBackup, OfAStoreDirectory) {
  TempDir dir;
  const std::string store = dir.sub("store");
  const std::string copy = dir.sub("copies/one");
  CliRun none = cli({"--store", store, "backup", copy});
  EXPECT_EQ(none.exit, 1) << describe(none);
  EXPECT_TRUE(contains(none.err, "no store in " + store)) << none.err;
  EXPECT_FALSE(fs::exists(store)) << "backup created the store";

  ASSERT_EQ(cli({"--store", store, "push", "t", "--id", "a", "--delay", "1h"}).exit, 0);
  ASSERT_EQ(cli({"--store", store, "push", "t", "--id", "b"}).exit, 0);
  CliRun made = cli({"--store", store, "backup", copy});
  ASSERT_EQ(made.exit, 0) << describe(made);
  EXPECT_EQ(made.out, "backed up to " + copy +
                          " (a consistent copy; to restore it, stop the daemon, put the copy in "
                          "the store's place, start it)\n");
  ASSERT_EQ(cli({"--store", store, "cancel", "a"}).exit, 0);  // the copy keeps it
  CliRun got = cli({"--store", copy, "get", "a", "--json"});
  ASSERT_EQ(got.exit, 0) << describe(got);
  EXPECT_EQ(at(got.json(), "state").as_string(), "delayed");
  EXPECT_EQ(cli({"--store", copy, "get", "b"}).exit, 0);

  CliRun again = cli({"--store", store, "backup", copy, "--json"});
  EXPECT_EQ(again.exit, 1) << describe(again);
  EXPECT_EQ(at(again.json(), "error").as_string(), "invalid_argument");
  EXPECT_TRUE(contains(again.err, copy + " already exists")) << again.err;

  DaemonProcess daemon(DELAYQD_PATH, dir.sub("d.log"));
  ASSERT_GT(daemon.start({"--listen", "127.0.0.1:0", "--store", store}), 0);
  const std::string locked_copy = dir.sub("copies/two");
  CliRun locked = cli({"--store", store, "backup", locked_copy});
  EXPECT_EQ(locked.exit, 1) << describe(locked);
  EXPECT_TRUE(contains(locked.err, "is locked by process " + std::to_string(daemon.pid())))
      << locked.err;
  EXPECT_FALSE(fs::exists(locked_copy));

  CliRun redis = cli({"--redis", "redis://127.0.0.1:1", "backup", locked_copy});
  EXPECT_EQ(redis.exit, 2) << describe(redis);
  EXPECT_TRUE(contains(redis.err, "a Redis queue is backed up by Redis itself")) << redis.err;
}

// Through a running delayqd: POST /backup (the CLI's `--url ... backup NAME`) writes a copy of
// the live store into a new directory right under --backup-dir, and nowhere else; without
// --backup-dir it is refused saying how to turn it on.
TEST(CliBackup, ThroughTheDaemonOnlyUnderItsBackupDir) {
  TempDir dir;
  const std::string store = dir.sub("store");
  const std::string root = dir.sub("backups");
  const std::string token = dir.sub("token");
  std::ofstream(token) << "s3cret\n";
  ::chmod(token.c_str(), 0600);
  {
    DaemonProcess off(DELAYQD_PATH, dir.sub("off.log"));
    const int port =
        off.start({"--listen", "127.0.0.1:0", "--store", store, "--token-file", token});
    ASSERT_GT(port, 0);
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    CliRun refused = cli({"--url", url, "--token-file", token, "backup", "n"});
    EXPECT_EQ(refused.exit, 1) << describe(refused);
    EXPECT_TRUE(contains(refused.err, "HTTP 403 forbidden")) << refused.err;
    EXPECT_TRUE(contains(refused.err, "--backup-dir DIR")) << refused.err;
    CliRun no_token = cli({"--url", url, "backup", "n"});
    EXPECT_TRUE(contains(no_token.err, "401 unauthorized")) << no_token.err;
  }
  DaemonProcess daemon(DELAYQD_PATH, dir.sub("d.log"));
  const int port = daemon.start(
      {"--listen", "127.0.0.1:0", "--store", store, "--token-file", token, "--backup-dir", root});
  ASSERT_GT(port, 0);
  const std::vector<std::string> target = {"--url", "http://127.0.0.1:" + std::to_string(port),
                                           "--token-file", token};
  const auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), target.begin(), target.end());
    return args;
  };
  ASSERT_EQ(cli(with({"push", "t", "--id", "live", "--delay", "1h", "--body", "x"})).exit, 0);
  CliRun made = cli(with({"backup", "nightly", "--json"}));
  ASSERT_EQ(made.exit, 0) << describe(made);
  EXPECT_EQ(at(made.json(), "dir").as_string(), root + "/nightly");
  for (const char* bad : {"../escape", "a/b", ".hidden", "/abs"}) {
    CliRun r = cli(with({"backup", bad}));
    EXPECT_EQ(r.exit, 1) << bad << "\n" << describe(r);
    EXPECT_TRUE(contains(r.err, "invalid argument: \"name\" ")) << r.err;
    EXPECT_TRUE(contains(r.err, "only directly under its --backup-dir")) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir.sub("escape")));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(root)) names.push_back(e.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"nightly"});
  // The copy is the live queue as of the backup, and opens while the daemon keeps serving.
  CliRun got = cli({"--store", root + "/nightly", "get", "live", "--json"});
  ASSERT_EQ(got.exit, 0) << describe(got);
  EXPECT_EQ(at(got.json(), "body").as_string(), "x");
  EXPECT_EQ(cli(with({"stats"})).exit, 0);
}

// ---- (c) Redis --------------------------------------------------------------------------------

TEST(CliRedis, PushGetCancelStatsAndDeadLetters) {
  delayq::testing::RedisServer server;
  ASSERT_TRUE(server.started()) << "redis-server did not start: " << server.log();
  const std::vector<std::string> target = {"--redis", server.url(), "--queue", "cli"};
  basic_flow(target);

  // Another queue name on the same server is another queue.
  CliRun other = cli({"--redis", server.url(), "--queue", "other", "stats"});
  EXPECT_EQ(other.exit, 0) << describe(other);
  EXPECT_TRUE(contains(other.out, "no jobs")) << other.out;

  CliRun push = cli({"--redis", server.url(), "--queue", "cli", "push", "jobs", "--id", "r1",
                     "--retry", "fixed:0s:1", "--body", "payload"});
  ASSERT_EQ(push.exit, 0) << describe(push);
  auto q = delayq::open_redis({.url = server.url(), .queue = "cli"});
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  const auto kill = [&] { kill_through(**q, "r1"); };
  kill();
  dead_flow(target, "r1", kill);
  pause_flow(target);

  CliRun bad_shards = cli({"--redis", server.url(), "--queue", "cli", "--shards", "4", "stats"});
  EXPECT_EQ(bad_shards.exit, 1) << describe(bad_shards);
  EXPECT_TRUE(contains(bad_shards.err, "invalid argument: ")) << bad_shards.err;
}

}  // namespace
