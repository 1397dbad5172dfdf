// TimingMetrics (src/delayqd/timing_metrics.h) on its own: what it remembers per topic between
// scrapes follows the topics the engine keeps, so that topics that come and go do not make the
// daemon grow, and a topic the engine forgot starts afresh when it comes back (issue 19).
#include "delayqd/timing_metrics.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using delayq::Stats;
using delayq::http::TimingMetrics;

// A stats() snapshot whose topics have had `first` first deliveries each, all in bucket 0.
Stats with_topics(size_t from, size_t to, uint64_t first) {
  Stats st;
  for (size_t i = from; i < to; ++i) {
    auto& t = st.timing["t" + std::to_string(i)];
    t.first.buckets[0] = first;
    t.first.count = first;
  }
  return st;
}

std::string scrape(TimingMetrics& m, const Stats& st) {
  std::string out;
  m.render(out, st, {});
  return out;
}

bool has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

const char* kOverflowFirst = "delayq_lateness_seconds_count{overflow=\"true\",attempt=\"first\"} ";

TEST(TimingMetrics, ForgetsTopicsTheEngineForgot) {
  TimingMetrics m;
  for (size_t round = 0; round < 5; ++round) {
    // 1000 topics never seen before, then a scrape with them gone.
    scrape(m, with_topics(round * 1000, (round + 1) * 1000, 1));
    EXPECT_EQ(m.topics_remembered(), 1000u);
    const std::string out = scrape(m, Stats{});
    EXPECT_EQ(m.topics_remembered(), 0u) << "round " << round;
    // Nothing is lost from the overflow's counters.
    EXPECT_TRUE(has(out, kOverflowFirst + std::to_string((round + 1) * 1000))) << out;
  }
}

TEST(TimingMetrics, ATopicThatComesBackAfterBeingForgottenCountsAfresh) {
  TimingMetrics m;
  EXPECT_TRUE(has(scrape(m, with_topics(0, 1, 5)), std::string(kOverflowFirst) + "5"));
  scrape(m, Stats{});  // the engine forgot t0
  // t0 again, its lateness started anew with 2 deliveries: the overflow grows by 2, never down.
  EXPECT_TRUE(has(scrape(m, with_topics(0, 1, 2)), std::string(kOverflowFirst) + "7"));
  EXPECT_EQ(m.active(with_topics(0, 1, 3)).size(), 1u);
}

TEST(TimingMetrics, KeepsWhatItSawOfTopicsStillKept) {
  TimingMetrics m;
  scrape(m, with_topics(0, 3, 4));
  EXPECT_EQ(m.topics_remembered(), 3u);
  // No new deliveries: none active, the overflow stays.
  EXPECT_TRUE(m.active(with_topics(0, 3, 4)).empty());
  EXPECT_TRUE(has(scrape(m, with_topics(0, 3, 4)), std::string(kOverflowFirst) + "12"));
  EXPECT_EQ(m.topics_remembered(), 3u);
}

}  // namespace
