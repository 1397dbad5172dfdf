// What the CLI shows people, to the byte: the timing tables of `delayq stats` (three significant
// digits, as printf's %.3g gave them), UTC and local times, and bodies with their unprintable
// bytes escaped. src/cli/human_text.cc and stats_timing.cc format with fmt; these pin the text.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "cli/human_text.h"
#include "cli/stats_timing.h"

namespace {

using namespace std::chrono_literals;
using delayq::Duration;
using delayq::Stats;
using delayq::TimePoint;

TEST(CliFormat, TimingTables) {
  Stats st;
  delayq::TopicTiming& a = st.timing["orders"];
  a.due = {1, 22, 333, 4444, 55555};
  a.oldest_ready = 12345ms;  // 12.345 s: three digits
  a.first.buckets[4] = 1;    // late by at most 2.5 ms
  a.first.buckets[22] = 1;   // late by more than 4 h
  a.first.count = 2;
  delayq::TopicTiming& b = st.timing["mails"];
  b.oldest_ready = 123456us;  // 123.456 ms
  b.retry.buckets[0] = 3;     // at most 100 µs
  b.retry.count = 3;
  delayq::TopicTiming& c = st.timing["z"];
  c.oldest_ready = 1500us;  // 1.5 ms
  c.first.buckets[17] = 1;  // at most 1 min, shown "1m"
  c.first.count = 1;
  EXPECT_EQ(delayq::cli::timing_tables(st),
            "\n"
            "TOPIC   NEXT MINUTE  NEXT HOUR  NEXT DAY  NEXT WEEK  BEYOND  OLDEST READY\n"
            "mails             0          0         0          0       0         123ms\n"
            "orders            1         22       333       4444   55555         12.3s\n"
            "z                 0          0         0          0       0         1.5ms\n"
            "\n"
            "TOPIC   FIRST ATTEMPTS     P50  P99  RETRIES     P50     P99\n"
            "mails                0       -    -        3  ≤100µs  ≤100µs\n"
            "orders               2  ≤2.5ms  >4h        0       -       -\n"
            "z                    1     ≤1m  ≤1m        0       -       -\n");
}

TEST(CliFormat, UtcTime) {
  using delayq::cli::format_utc_time;
  EXPECT_EQ(format_utc_time(TimePoint{1795801801123ms}), "2026-11-27T17:50:01.123Z");
  EXPECT_EQ(format_utc_time(TimePoint{1795801801000ms}), "2026-11-27T17:50:01Z");
  EXPECT_EQ(format_utc_time(TimePoint{7ms}), "1970-01-01T00:00:00.007Z");
}

TEST(CliFormat, LocalTimeWithOffset) {
  using delayq::cli::format_local_time;
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  EXPECT_EQ(format_local_time(TimePoint{1795801801123ms}), "2026-11-27T17:50:01.123Z");
  ::setenv("TZ", "XYZ+05:30", 1);  // 5 h 30 min west of Greenwich
  ::tzset();
  EXPECT_EQ(format_local_time(TimePoint{1795801801123ms}), "2026-11-27T12:20:01.123-05:30");
  ::setenv("TZ", "XYZ-09", 1);
  ::tzset();
  EXPECT_EQ(format_local_time(TimePoint{1795801801000ms}), "2026-11-28T02:50:01+09:00");
  ::unsetenv("TZ");
  ::tzset();
}

TEST(CliFormat, PrintableEscapes) {
  EXPECT_EQ(delayq::cli::printable(std::string("a\x01\xff\x7f", 4)), "a\\x01\\xff\\x7f");
}

}  // namespace
