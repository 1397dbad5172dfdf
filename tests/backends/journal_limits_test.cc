// The limited topics in the journal (wal/topic_limits.h): the value's bytes as
// docs/journal-format.md shows them, each refusal of a damaged value, sets and clears in call
// order read back at open, and damage refusing the store, naming the topic, unless tolerant
// (then the topic runs unlimited, in the store too).
#include "wal/topic_limits.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "delayq/store.h"
#include "raw_rocksdb.h"
#include "temp_dir.h"
#include "wal/journal.h"

namespace delayq::wal {
namespace {

using namespace std::chrono_literals;
using Limited = std::vector<std::pair<std::string, TopicLimits>>;

const TopicLimits kBoth{.rate = TopicLimits::Rate{.count = 10, .per = 1s, .burst = 20},
                        .max_in_flight = 4};
const TopicLimits kCap{.max_in_flight = 1};

std::string bytes(std::initializer_list<int> b) {
  std::string out;
  for (int x : b) out.push_back(static_cast<char>(x));
  return out;
}

TEST(JournalLimits, TheValueIsAsDocumented) {
  EXPECT_EQ(limits_key("orders"), "limits/orders");
  const std::string both = bytes({0x01, 0x03, 0x0a, 0,    0, 0, 0x00, 0xca, 0x9a, 0x3b, 0,
                                  0,    0,    0,    0x14, 0, 0, 0,    0x04, 0,    0,    0});
  EXPECT_EQ(encode_limits(kBoth), both);
  EXPECT_EQ(*decode_limits(both), kBoth);
  const std::string cap =
      bytes({0x01, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0});
  EXPECT_EQ(encode_limits(kCap), cap);
  EXPECT_EQ(*decode_limits(cap), kCap);
  const TopicLimits rate_only{.rate = TopicLimits::Rate{.count = 7, .per = 1min, .burst = 1}};
  EXPECT_EQ(*decode_limits(encode_limits(rate_only)), rate_only);
}

TEST(JournalLimits, AValueNoCallCouldHaveWrittenIsRefused) {
  const std::string good = encode_limits(kBoth);
  auto with = [&](size_t at, int v) {
    std::string b = good;
    b[at] = static_cast<char>(v);
    return b;
  };
  const std::vector<std::pair<std::string, std::string>> bad = {
      {good.substr(0, 21), "21 bytes"},
      {good + "x", "23 bytes"},
      {with(0, 2), "version 2"},
      {with(1, 0), "flags 0"},
      {with(1, 4), "flags 4"},
      {with(2, 0), "a rate of 0 per"},
      {with(13, 0x80), "per -"},
      {with(14, 0), "burst 0"},
      {with(16, 0x10), "burst 1048596"},
      {with(18, 0), "max_in_flight 0"},
      {encode_limits(kCap).replace(2, 1, "\x01"), "rate fields set without the rate flag"},
      {encode_limits(TopicLimits{.rate = kBoth.rate}).replace(18, 1, "\x01"),
       "max_in_flight set without its flag"},
  };
  for (const auto& [value, why] : bad) {
    Result<TopicLimits> got = decode_limits(value);
    EXPECT_TRUE(got.is(Errc::corrupt)) << why;
    EXPECT_NE(got.status().message().find(why), std::string::npos)
        << got.status().message() << " (wanted: " << why << ")";
  }
}

class JournalLimitsStore : public ::testing::Test {
 protected:
  std::unique_ptr<Journal> open(bool tolerant = false) {
    JournalOptions o;
    o.sync.mode = Sync::none;
    o.tolerant = tolerant;
    o.on_skip = [this](const std::string& m) { skipped_.push_back(m); };
    auto j = Journal::open(dir(), o);
    EXPECT_TRUE(j.ok()) << j.status().to_string();
    return j.ok() ? std::move(j).value() : nullptr;
  }
  std::string dir() const { return dir_.path() + "/store"; }
  testing::TempDir dir_{"delayq-journal-limits"};
  std::vector<std::string> skipped_;
};

TEST_F(JournalLimitsStore, SetsAndClearsAreReadBackAndDamageIsCorruptUnlessTolerant) {
  {
    auto j = open();
    ASSERT_TRUE(j);
    const std::vector<std::pair<std::string, std::optional<TopicLimits>>> calls = {
        {"a", kBoth}, {"b", kCap}, {"a", std::nullopt}, {"c", kCap}, {"c", kBoth}};
    for (const auto& [topic, limits] : calls) {
      Result<uint64_t> t = j->append_limits(topic, limits);
      ASSERT_TRUE(t.ok()) << t.status().to_string();
      ASSERT_TRUE(j->sync_to(*t).ok());
    }
    EXPECT_EQ(*j->topic_limits(), (Limited{{"b", kCap}, {"c", kBoth}}));
  }
  std::string stored;
  testing::raw_access(dir(), "meta", "limits/c", nullptr, &stored);
  EXPECT_EQ(stored, encode_limits(kBoth));
  EXPECT_EQ(*open()->topic_limits(), (Limited{{"b", kCap}, {"c", kBoth}}));
  const std::string damaged = "\x01\x02";
  testing::raw_access(dir(), "meta", "limits/b", &damaged, nullptr);
  Result<Limited> refused = open()->topic_limits();
  EXPECT_TRUE(refused.is(Errc::corrupt)) << refused.status().to_string();
  EXPECT_NE(refused.status().message().find("limits of topic 'b'"), std::string::npos)
      << refused.status().to_string();
  EXPECT_EQ(*open(true)->topic_limits(), (Limited{{"c", kBoth}}));
  ASSERT_EQ(skipped_.size(), 1u);
  EXPECT_NE(skipped_[0].find("runs unlimited"), std::string::npos) << skipped_[0];
}

// Through the store: open_store refuses the damaged limits, or with `tolerant` opens and runs
// the topic unlimited while the others keep theirs.
TEST_F(JournalLimitsStore, AStoreWithDamagedLimitsOpensOnlyTolerantWithTheTopicUnlimited) {
  StoreOptions o;
  o.dir = dir();
  o.sync = Sync::none;
  {
    auto q = open_store(o);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    ASSERT_TRUE((*q)->set_topic_limits("b", kCap).ok());
    ASSERT_TRUE((*q)->set_topic_limits("c", kBoth).ok());
  }
  const std::string damaged = "\x07";
  testing::raw_access(dir(), "meta", "limits/b", &damaged, nullptr);
  auto refused = open_store(o);
  EXPECT_TRUE(refused.is(Errc::corrupt)) << refused.status().to_string();
  o.tolerant = true;
  std::vector<std::string> skipped;
  o.on_skip = [&skipped](const std::string& m) { skipped.push_back(m); };
  auto q = open_store(o);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  const Stats st = (*q)->stats();
  EXPECT_FALSE(st.flow.contains("b"));
  EXPECT_EQ(st.flow.at("c").limits, kBoth);
  EXPECT_EQ(skipped.size(), 1u);
}

}  // namespace
}  // namespace delayq::wal
