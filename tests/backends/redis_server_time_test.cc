// delayq-bench's server time per delivered job (bench/server_time.h, bench/server_meter.h): the
// reading of INFO commandstats and of the slow log, and the arithmetic, on fixed text and on a
// private redis-server. No timing is asserted: only that the figures add up.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "bench/server_meter.h"
#include "bench/server_time.h"
#include "delayq/redis.h"
#include "redis_server.h"

namespace delayq::bench {
namespace {

using namespace std::chrono_literals;

TEST(ServerTime, CommandstatsAreSummedOverServersScriptsApartFromOtherCommands) {
  const std::string one =
      "# Commandstats\r\n"
      "cmdstat_config|resetstat:calls=1,usec=900,usec_per_call=900.00,rejected_calls=0,failed_calls=0\r\n"
      "cmdstat_fcall:calls=3,usec=300,usec_per_call=100.00,rejected_calls=0,failed_calls=0\r\n"
      "cmdstat_hset:calls=7,usec=70,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n"
      "cmdstat_subscribe:calls=2,usec=20,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n"
      "cmdstat_broken:calls=x,usec=5\r\n";
  const std::string two =
      "cmdstat_fcall_ro:calls=1,usec=100,usec_per_call=100.00\n"
      "cmdstat_fcall:calls=1,usec=50,usec_per_call=50.00\n"
      "cmdstat_ping:calls=4,usec=8,usec_per_call=2.00\n"
      "cmdstat_info:calls=1,usec=40,usec_per_call=40.00\n";
  const CommandStats a = parse_commandstats(one);
  ASSERT_EQ(a.size(), 4u);  // the line whose numbers do not read is skipped
  EXPECT_EQ(a.at("fcall").calls, 3u);
  EXPECT_EQ(a.at("fcall").usec, 300u);
  EXPECT_EQ(a.at("config|resetstat").usec, 900u);

  // hset is run by the scripts (inside the FCALLs' usec); config and info are the meter's own.
  const ServerTime t = sum_server_time({a, parse_commandstats(two)}, {"hset"}, 4);
  EXPECT_EQ(t.servers, 2u);
  EXPECT_EQ(t.scripts.calls, 5u);
  EXPECT_EQ(t.scripts.usec, 450u);
  EXPECT_EQ(t.other.calls, 6u);
  EXPECT_EQ(t.other.usec, 28u);
  EXPECT_EQ(t.other_by_command.size(), 2u);
  EXPECT_EQ(t.usec(), 478u);
  EXPECT_DOUBLE_EQ(t.per_job(t.usec()), 119.5);
  EXPECT_NE(server_time_text(t).find("119.50 us per delivered job"), std::string::npos)
      << server_time_text(t);
  EXPECT_NE(server_time_json(t).find("\"usec\":478,\"usec_per_job\":119.50,"), std::string::npos)
      << server_time_json(t);
  EXPECT_EQ(sum_server_time({a}, {}, 0).per_job(450), 0);  // nothing delivered: no division
  EXPECT_EQ(parse_cpu_usec("# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:0.500001\r\n"
                           "used_cpu_sys_children:9.000000\r\n"),
            1750001u);
}

TEST(ServerTime, TheCommandsALuaSourceRunsAreFoundLowercased) {
  EXPECT_EQ(commands_in_lua("local x = redis.call('HGET', K, f)\nredis.call(\"ZAdd\", k)\n"
                            "redis.call(name, k) -- a variable: not a name"),
            (std::set<std::string>{"hget", "zadd"}));
}

TEST(ServerTime, ACommandRunInAScriptCountsToTheFcallLoggedAfterIt) {
  std::map<std::string, ScriptCost> by;
  CommandStats pending;
  add_slow_entries({{"hset", "", 4, true}, {"zadd", "", 6, true}, {"fcall", "push", 20, false},
                    {"ping", "", 1, false}, {"hget", "", 2, true}},
                   by, pending);
  // The claim's FCALL comes in the next drain of the log.
  add_slow_entries({{"hget", "", 3, true}, {"fcall", "claim", 30, false}, {"fcall", "push", 10, false}},
                   by, pending);
  EXPECT_TRUE(pending.empty());
  ASSERT_EQ(by.size(), 2u);
  EXPECT_EQ(by["push"].total.calls, 2u);
  EXPECT_EQ(by["push"].total.usec, 30u);
  EXPECT_EQ(by["push"].inner.size(), 2u);
  EXPECT_EQ(by["push"].inner["zadd"].usec, 6u);
  EXPECT_EQ(by["claim"].inner["hget"].calls, 2u);
  EXPECT_EQ(by["claim"].inner["hget"].usec, 5u);
}

// On a real server: every FCALL of the run is counted to its script, and the slow log's per-script
// times add up to the FCALLs' usec in commandstats (Redis times a command once for both).
TEST(ServerTime, OnARealServerTheScriptsAddUpToTheFcallsAndDivideByTheJobs) {
  testing::RedisServer server;
  ASSERT_TRUE(server.started()) << server.log();
  auto q = open_redis({.url = server.url(), .queue = "st", .connections = 1});
  ASSERT_TRUE(q) << q.status().to_string();
  ServerMeter meter(server.url(), true);
  meter.start();
  for (const char* id : {"a", "b", "c"}) ASSERT_TRUE((*q)->push({.topic = "t", .id = id}));
  for (auto& r : (*q)->push_batch({{.topic = "t", .id = "d"}, {.topic = "t", .id = "e"}}))
    ASSERT_TRUE(r);
  for (int i = 0; i < 5; ++i) {
    auto d = (*q)->reserve("t", 0ms);
    ASSERT_TRUE(d) << d.status().to_string();
    ASSERT_TRUE((*q)->ack(d->token).ok());
  }
  const ServerTime t = meter.finish(5);
  EXPECT_EQ(t.servers, 1u);
  EXPECT_EQ(t.delivered, 5u);
  ASSERT_TRUE(t.profiled);
  EXPECT_EQ(t.by_script.at("push").total.calls, 3u);
  EXPECT_EQ(t.by_script.at("push_many").total.calls, 1u);
  EXPECT_EQ(t.by_script.at("ack").total.calls, 5u);
  EXPECT_GE(t.by_script.at("claim").total.calls, 5u);
  EXPECT_GE(t.by_script.at("push").inner.at("hset").calls, 6u);  // the record and the body
  uint64_t calls = 0, usec = 0;
  for (const auto& [name, c] : t.by_script) calls += c.total.calls, usec += c.total.usec;
  EXPECT_EQ(calls, t.scripts.calls);
  EXPECT_EQ(usec, t.scripts.usec);
  EXPECT_GT(t.scripts.usec, 0u);
  EXPECT_EQ(t.usec(), t.scripts.usec + t.other.usec);
  EXPECT_DOUBLE_EQ(t.per_job(t.usec()), static_cast<double>(t.usec()) / 5);
  EXPECT_GT(t.cpu_usec, 0u);  // the server did work meanwhile
  // The slow log's settings are the server's own again.
  auto c = redis::Connection::open(*redis::parse_url(server.url()), 2s, 2s);
  ASSERT_TRUE(c);
  auto got = (*c)->call({"CONFIG", "GET", "slowlog-log-slower-than"});
  ASSERT_TRUE(got && got->elements.size() == 2);
  EXPECT_EQ(got->elements[1].str, "10000");
}

}  // namespace
}  // namespace delayq::bench
