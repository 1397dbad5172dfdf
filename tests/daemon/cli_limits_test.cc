// Times and durations a user types into the delayq CLI or delayqd's flags and config file are
// range-checked before anything is computed from them: a far-future value is refused with what
// the limit is, never wrapped into a job due now.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli/parse.h"
#include "cli_harness.h"
#include "delayq/store.h"
#include "redis_server.h"

namespace {

using namespace delayq::testing;
using delayq::Errc;
using delayq::TimePoint;

TEST(CliTimes, TimesPastTheYear2262AreRefusedNotWrapped) {
  for (const char* text :
       {"2300-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "9000000001", "99999999999999999999"}) {
    auto t = delayq::cli::parse_time(text);
    EXPECT_TRUE(t.is(Errc::invalid_argument)) << text;
    EXPECT_TRUE(contains(t.status().message(), "after 2255-03-14T16:00:00Z"))
        << t.status().message();
  }
  EXPECT_EQ(*delayq::cli::parse_time("2255-03-14T16:00:00Z"),
            TimePoint(std::chrono::seconds(9'000'000'000)));
  // Before 1970 is the past, which means now: it becomes 1970 instead of wrapping.
  EXPECT_EQ(*delayq::cli::parse_time("1000-01-01T00:00:00Z"), TimePoint(std::chrono::seconds(0)));
}

// The reported bug: --due-at 2300-01-01T00:00:00Z wrapped to about 1715 and the job was due at
// once.
TEST(CliTimes, AFarDueAtIsRefusedAndNothingIsPushed) {
  TempDir dir;
  const std::string store = dir.sub("store");
  CliRun far =
      cli({"--store", store, "push", "t", "--id", "j", "--due-at", "2300-01-01T00:00:00Z"});
  EXPECT_EQ(far.exit, 2) << describe(far);
  EXPECT_TRUE(contains(far.err, "--due-at: bad time '2300-01-01T00:00:00Z': after 2255"))
      << far.err;
  // Representable but beyond the queue's max_delay: the queue's own refusal.
  CliRun beyond =
      cli({"--store", store, "push", "t", "--id", "j", "--due-at", "2200-01-01T00:00:00Z"});
  EXPECT_EQ(beyond.exit, 1) << describe(beyond);
  EXPECT_TRUE(contains(beyond.err, "invalid argument: due_at is ")) << beyond.err;
  EXPECT_TRUE(contains(beyond.err, "beyond max_delay (3650d)")) << beyond.err;
  CliRun get = cli({"--store", store, "get", "j"});
  EXPECT_EQ(get.exit, 1) << describe(get);  // never pushed
  EXPECT_TRUE(contains(get.err, "not found")) << get.err;
}

// Through delayqd the same refusal: the client (delayq/http.h) checks the library's limits before
// it sends the job, in the store's words, and the daemon's own check says the same of due_at_ms
// (http_limits_test.cc).
TEST(CliTimes, ThroughTheDaemonTheSameRefusal) {
  TempDir dir;
  DaemonProcess daemon(DELAYQD_PATH, dir.sub("delayqd.log"));
  const int port =
      daemon.start({"--listen", "127.0.0.1:0", "--store", dir.sub("s"), "--sync", "none"});
  ASSERT_GT(port, 0) << "delayqd did not start";
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  CliRun beyond = cli({"--url", url, "push", "t", "--due-at", "2200-01-01T00:00:00Z"});
  EXPECT_EQ(beyond.exit, 1) << describe(beyond);
  EXPECT_TRUE(contains(beyond.err, "invalid argument: due_at is ")) << beyond.err;
  EXPECT_TRUE(contains(beyond.err, "beyond max_delay (3650d)")) << beyond.err;
  CliRun far = cli({"--url", url, "push", "t", "--delay", "36000d"});
  EXPECT_EQ(far.exit, 1) << describe(far);
  EXPECT_TRUE(contains(far.err, "of 36000d exceeds max_delay (3650d)")) << far.err;
  CliRun stats = cli({"--url", url, "stats", "--json"});
  EXPECT_EQ(at(stats.json(), "pushed").as_int(), 0) << stats.out;
}

// --max-job-bytes reaches the queue and the daemon's checks, and its refusal names the flag.
TEST(DelayqdSettings, MaxJobBytesIsTheQueuesLimitAndIsNamed) {
  TempDir dir;
  DaemonProcess daemon(DELAYQD_PATH, dir.sub("delayqd.log"));
  const int port = daemon.start({"--listen", "127.0.0.1:0", "--store", dir.sub("s"), "--sync",
                                 "none", "--max-job-bytes", "100"});
  ASSERT_GT(port, 0) << "delayqd did not start";
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  CliRun big = cli({"--url", url, "push", "t", "--body", std::string(101, 'x')});
  EXPECT_EQ(big.exit, 1) << describe(big);
  EXPECT_TRUE(contains(big.err, "body is 101 bytes; the limit is 100 (delayqd --max-job-bytes)"))
      << big.err;
  CliRun fits = cli({"--url", url, "push", "t", "--body", std::string(100, 'x')});
  EXPECT_EQ(fits.exit, 0) << describe(fits);
}

// --max-delay and --default-ttr reach the queue: a push one second past the limit is refused,
// one at it is kept, and a job pushed without a ttr gets the default.
TEST(DelayqdSettings, MaxDelayAndDefaultTtrAreTheQueues) {
  TempDir dir;
  DaemonProcess daemon(DELAYQD_PATH, dir.sub("delayqd.log"));
  const int port = daemon.start({"--listen", "127.0.0.1:0", "--store", dir.sub("s"), "--sync",
                                 "none", "--max-delay", "3600", "--default-ttr", "45"});
  ASSERT_GT(port, 0) << "delayqd did not start";
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  CliRun beyond = cli({"--url", url, "push", "t", "--delay", "3601s"});
  EXPECT_EQ(beyond.exit, 1) << describe(beyond);
  EXPECT_TRUE(contains(beyond.err, "max_delay")) << beyond.err;
  CliRun at_limit = cli({"--url", url, "push", "t", "--id", "j", "--delay", "3600s"});
  EXPECT_EQ(at_limit.exit, 0) << describe(at_limit);
  CliRun get = cli({"--url", url, "get", "j", "--json"});
  ASSERT_EQ(get.exit, 0) << describe(get);
  EXPECT_TRUE(contains(get.out, "\"ttr_ms\":45000")) << get.out;
}

CliRun delayqd(const std::vector<std::string>& args) {
  return run_program(DELAYQD_PATH, args);
}

// delayqd's duration flags and config values: range-checked, and a config value names file:line.
TEST(DelayqdSettings, BadValuesNameTheFlagOrTheFileAndLine) {
  TempDir dir;
  const std::string conf = dir.sub("delayqd.conf");
  std::ofstream(conf) << "# settings\nthreads = 2\n\npop-timeout = 99999999999999999999\n";
  CliRun r = delayqd({"--config", conf});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, conf + ":4: pop-timeout must be a whole number of seconds from 0 to "
                                     "3600, not '99999999999999999999'"))
      << r.err;
  std::ofstream(conf) << "sync = batchh\n";
  r = delayqd({"--config", conf});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, conf + ":1: sync: ")) << r.err;
  for (const char* flag : {"--pop-timeout", "--idle-timeout", "--drain-timeout"}) {
    r = delayqd({flag, "-1"});
    EXPECT_EQ(r.exit, 2) << describe(r);
    EXPECT_TRUE(contains(r.err, std::string(flag) + " must be a whole number of seconds")) << r.err;
  }
  r = delayqd({"--max-job-bytes", "0"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "--max-job-bytes must be a whole number of bytes")) << r.err;
  r = delayqd({"--max-delay", "3153600001"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "--max-delay must be a whole number of seconds from 1 to 3153600000"))
      << r.err;
  r = delayqd({"--max-delay", "60", "--default-ttr", "61"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "--default-ttr must be a whole number of seconds from 1 to 60"))
      << r.err;
  r = delayqd({"--metrics-topics", "100001"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "--metrics-topics must be a whole number of topics from 0 to 100000"))
      << r.err;
}

// A second delayqd on a store the first one holds exits 1 naming the holder (its pid and
// program), as the CLI does, and says what to do.
TEST(DelayqdSettings, ASecondDaemonOnALockedStoreNamesTheHolder) {
  TempDir dir;
  const std::string store = dir.sub("s");
  DaemonProcess first(DELAYQD_PATH, dir.sub("first.log"));
  ASSERT_GT(first.start({"--listen", "127.0.0.1:0", "--store", store, "--sync", "none"}), 0);
  CliRun second = delayqd({"--listen", "127.0.0.1:0", "--store", store});
  EXPECT_EQ(second.exit, 1) << describe(second);
  EXPECT_TRUE(contains(second.err, "store directory " + store + " is locked by process " +
                                       std::to_string(first.pid()) + " (delayqd)"))
      << second.err;
  EXPECT_TRUE(contains(second.err, "or start this one with another --store")) << second.err;
}

// --redis-replicas-to-ack and --redis-replicas-timeout: range-checked and named, in delayqd and in
// the CLI; a good value reaches the queue: with one redis-server and no replica, a push waits
// for a replica that never comes and answers that it may or may not have been applied.
TEST(DelayqdSettings, RedisReplicasToAckIsCheckedAndReachesTheQueue) {
  RedisServer redis;
  ASSERT_TRUE(redis.started()) << redis.log();
  TempDir dir;
  CliRun r = delayqd({"--redis", redis.url(), "--redis-replicas-to-ack", "17"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "--redis-replicas-to-ack must be a whole number of replicas from 0 "
                              "to 16, not '17'"))
      << r.err;
  const std::string conf = dir.sub("delayqd.conf");
  std::ofstream(conf) << "redis = " << redis.url() << "\nredis-replicas-timeout = 5000\n";
  r = delayqd({"--config", conf});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, conf + ":2: redis-replicas-timeout must be a whole number of "
                                     "milliseconds from 1 to 4999, not '5000'"))
      << r.err;
  r = delayqd({"--store", dir.sub("s"), "--redis-replicas-to-ack", "1"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "--redis-replicas-* apply to --redis only")) << r.err;

  DaemonProcess daemon(DELAYQD_PATH, dir.sub("delayqd.log"));
  const int port = daemon.start({"--listen", "127.0.0.1:0", "--redis", redis.url(), "--queue",
                                 "d", "--redis-replicas-to-ack", "1", "--redis-replicas-timeout",
                                 "50"});
  ASSERT_GT(port, 0) << "delayqd did not start";
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  CliRun push = cli({"--url", url, "push", "t", "--id", "a"});
  EXPECT_EQ(push.exit, 1) << describe(push);
  EXPECT_TRUE(contains(push.err, "only 0 of the 1 replicas asked for (replicas_to_ack)"))
      << push.err;
  EXPECT_TRUE(contains(push.err, "within 50 ms")) << push.err;
  EXPECT_TRUE(contains(push.err, "the call may or may not have taken effect")) << push.err;

  // The CLI's flags of the same names.
  CliRun bad = cli({"--redis", redis.url(), "--redis-replicas-timeout", "0", "stats"});
  EXPECT_EQ(bad.exit, 2) << describe(bad);
  EXPECT_TRUE(contains(bad.err, "bad --redis-replicas-timeout: expected a whole number from 1 to "
                                "4999, not '0'"))
      << bad.err;
  bad = cli({"--store", dir.sub("c"), "--redis-replicas-to-ack", "1", "stats"});
  EXPECT_EQ(bad.exit, 2) << describe(bad);
  EXPECT_TRUE(contains(bad.err, "--redis-replicas-* apply to --redis only")) << bad.err;
  push = cli({"--redis", redis.url(), "--queue", "c", "--redis-replicas-to-ack", "1",
              "--redis-replicas-timeout", "60", "push", "t", "--id", "b"});
  EXPECT_EQ(push.exit, 1) << describe(push);
  EXPECT_TRUE(contains(push.err, "only 0 of the 1 replicas asked for (replicas_to_ack)"))
      << push.err;
  EXPECT_TRUE(contains(push.err, "within 60 ms")) << push.err;
  // Without the flag the same push is answered: the refusal above is the flag's.
  push = cli({"--redis", redis.url(), "--queue", "c", "push", "t", "--id", "b2"});
  EXPECT_EQ(push.exit, 0) << describe(push);
}

}  // namespace
