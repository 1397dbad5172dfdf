// delayqd's log (src/delayqd/log.h): every line it writes on stderr starts with a UTC time to
// the millisecond and a level, "2026-11-27T17:50:01.123Z info listening on 127.0.0.1:9277". The
// line's form from log_line() at fixed times, then the real daemon's stderr through a start, a
// request and a SIGTERM, and through a refused flag.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "daemon_process.h"
#include "delayqd/log.h"
#include "http_client.h"

namespace {

using namespace delayq::testing;
using delayq::http::log_line;
using delayq::http::LogLevel;
using std::chrono::milliseconds;
using std::chrono::system_clock;

// 2026-11-27T17:50:01.123Z as a system_clock time.
const system_clock::time_point kNoonish{milliseconds(1795801801123)};

TEST(DelayqdLog, LineForm) {
  EXPECT_EQ(log_line(kNoonish, LogLevel::info, "listening on 127.0.0.1:9277"),
            "2026-11-27T17:50:01.123Z info listening on 127.0.0.1:9277\n");
  EXPECT_EQ(log_line(kNoonish, LogLevel::warn, "w"), "2026-11-27T17:50:01.123Z warn w\n");
  EXPECT_EQ(log_line(kNoonish, LogLevel::error, "e"), "2026-11-27T17:50:01.123Z error e\n");
  // Whole seconds keep their three digits; a time before 1970 its milliseconds from 0 to 999.
  EXPECT_EQ(log_line(system_clock::time_point{}, LogLevel::info, "x"),
            "1970-01-01T00:00:00.000Z info x\n");
  EXPECT_EQ(log_line(system_clock::time_point{milliseconds(-1)}, LogLevel::info, "x"),
            "1969-12-31T23:59:59.999Z info x\n");
  // One event, one line: a line break inside the message becomes a space.
  EXPECT_EQ(log_line(kNoonish, LogLevel::error, "a\nb\r\n"),
            "2026-11-27T17:50:01.123Z error a b  \n");
}

const std::regex kLine(
    R"((\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})Z (info|warn|error) .+)");

// The lines of `text`, each checked for the form; the times read back, as milliseconds since
// 1970 (timegm), into `times`.
std::vector<std::string> checked_lines(const std::string& text, std::vector<int64_t>& times) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    EXPECT_TRUE(std::regex_match(line, m, kLine)) << "not a log line: '" << line << "'";
    if (m.size() == 9) {
      std::tm tm{};
      tm.tm_year = std::stoi(m[1]) - 1900;
      tm.tm_mon = std::stoi(m[2]) - 1;
      tm.tm_mday = std::stoi(m[3]);
      tm.tm_hour = std::stoi(m[4]);
      tm.tm_min = std::stoi(m[5]);
      tm.tm_sec = std::stoi(m[6]);
      times.push_back(int64_t{::timegm(&tm)} * 1000 + std::stoi(m[7]));
    }
    lines.push_back(line);
  }
  EXPECT_TRUE(text.empty() || text.back() == '\n') << text;
  return lines;
}

int64_t now_ms() {
  return std::chrono::duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// The daemon's stderr from start to a clean stop: every line a log line, at the time it was
// written (between the test's clock before the start and after the stop), in order; the
// address on stdout is in the log as an info line.
TEST_F(StoreDaemonTest, EveryStderrLineHasTimeAndLevel) {
  const int64_t before = now_ms();
  const int port = start();
  ASSERT_GT(port, 0);
  HttpClient http(port);
  EXPECT_EQ(http.get("/health").status, 200);
  daemon_.signal(SIGTERM);
  ASSERT_TRUE(daemon_.wait(std::chrono::seconds(60))) << daemon_.log();
  EXPECT_EQ(daemon_.exit_code(), 0);
  const int64_t after = now_ms();

  std::vector<int64_t> times;
  const std::vector<std::string> lines = checked_lines(daemon_.log(), times);
  ASSERT_GE(lines.size(), 3u) << daemon_.log();
  const std::string listening = " info listening on 127.0.0.1:" + std::to_string(port);
  int found = 0;
  for (const auto& line : lines) found += line.ends_with(listening) ? 1 : 0;
  EXPECT_EQ(found, 1) << daemon_.log();
  EXPECT_TRUE(lines.back().ends_with(" info stopped")) << daemon_.log();
  for (size_t i = 0; i < times.size(); ++i) {
    // The log's times are milliseconds floored; the test's clock reads before and after them.
    EXPECT_GE(times[i], before - 1) << lines[i];
    EXPECT_LE(times[i], after) << lines[i];
    if (i > 0) {
      EXPECT_GE(times[i], times[i - 1]) << lines[i];
    }
  }
}

// A refused flag: the error and the hint are log lines too (exit status 2).
TEST_F(StoreDaemonTest, RefusedFlagIsLogged) {
  EXPECT_EQ(daemon_.start({"--tokn-file", "x"}), 0);
  EXPECT_EQ(daemon_.exit_code(), 2);
  const std::string err = daemon_.log();
  std::vector<int64_t> times;
  const std::vector<std::string> lines = checked_lines(err, times);
  ASSERT_EQ(lines.size(), 2u) << err;
  EXPECT_TRUE(lines[0].ends_with(" error unknown flag --tokn-file (did you mean --token-file?)"))
      << err;
  EXPECT_TRUE(lines[1].ends_with(" info delayqd --help lists the flags")) << err;
}

}  // namespace
