// The Redis backend's reading of server replies (src/redis/replies.h), without a server: RESP
// bytes through parse_resp() as a connection reads them, then the readers. The replies here are
// ones a server should never send (numbers at the ends of int64: a damaged key, another program
// writing the backend's keys); what matters is that reading them is defined and gives the
// nearest representable value. Each case was found by tests/fuzz/redis_reply_fuzz.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redis/reply.h"
#include "redis/replies.h"

namespace delayq::redis {
namespace {

std::vector<Reply> elements_of(const std::string& resp) {
  Result<std::vector<Reply>> r = parse_resp(resp);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok() || r->size() != 1) return {};
  return std::move(r->front().elements);
}

constexpr const char* kMax = "9223372036854775807";
constexpr const char* kMin = "-9223372036854775808";

TEST(RedisReplies, AJobInfoTtrOutOfRangeSaturates) {
  // get's fields: id, state, attempts, max_attempts, due, lease, ttr (µs), body.
  const std::string job = "*8\r\n$1\r\nj\r\n:2\r\n:1\r\n:10\r\n:1\r\n:2\r\n:";
  std::vector<Reply> e = elements_of(job + kMax + "\r\n$1\r\nb\r\n");
  ASSERT_EQ(e.size(), 8u);
  EXPECT_EQ(read_job_info(e, 0, "t").ttr, Duration::max());
  e = elements_of(job + kMin + "\r\n$1\r\nb\r\n");
  ASSERT_EQ(e.size(), 8u);
  EXPECT_EQ(read_job_info(e, 0, "t").ttr, Duration::min());
  e = elements_of(job + "30000000\r\n$1\r\nb\r\n");  // 30 s, the usual case, unchanged
  ASSERT_EQ(e.size(), 8u);
  EXPECT_EQ(read_job_info(e, 0, "t").ttr, std::chrono::seconds(30));
}

// A claim that found nothing ready says how long until the next due time or lease deadline.
TEST(RedisReplies, AWaitOutOfRangeSaturates) {
  std::vector<Reply> e = elements_of(std::string("*2\r\n:6\r\n:") + kMax + "\r\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(read_next_wait(e), Duration::max());
  e = elements_of("*2\r\n:6\r\n:29223372036854775\r\n");  // the input the fuzzer found
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(read_next_wait(e), Duration::max());
  e = elements_of("*2\r\n:6\r\n:1500\r\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(read_next_wait(e), std::chrono::microseconds(1500));
  e = elements_of("*2\r\n:6\r\n:-1\r\n");  // nothing scheduled at all
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(read_next_wait(e), std::nullopt);
}

// A reschedule refused as too far away says by how much `when` lies beyond the server's now.
TEST(RedisReplies, TheServersNowFromARefusalSaturates) {
  const int64_t when_us = 1'704'067'200'000'000;  // 2024-01-01, as the client sends it
  std::vector<Reply> e = elements_of(std::string("*2\r\n:1\r\n:") + kMin + "\r\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(read_server_now(when_us, e), TimePoint::max());
  EXPECT_EQ(read_server_now(0, e), TimePoint::max());  // the input the fuzzer found
  e = elements_of(std::string("*2\r\n:1\r\n:") + kMax + "\r\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(read_server_now(-when_us, e), TimePoint::min());
  e = elements_of("*2\r\n:1\r\n:1000000\r\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(read_server_now(when_us, e), from_us(when_us) - std::chrono::seconds(1));
}

}  // namespace
}  // namespace delayq::redis
