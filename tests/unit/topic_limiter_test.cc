// The engine's per-topic limiter on its own (src/engine/limiter.h): the token bucket's integer
// arithmetic at rates whose interval is no whole number of nanoseconds, a clock that steps back,
// a token given back, limits changed, and the places of max_in_flight; and a core keeping a
// limited topic's slot (core_limits.cc).
#include "engine/limiter.h"

#include <gtest/gtest.h>

#include "engine/core.h"

namespace delayq::engine {
namespace {

using namespace std::chrono_literals;

const TimePoint t0 = TimePoint(1767225600s);

TopicLimits rate(uint32_t count, Duration per, uint32_t burst) {
  return TopicLimits{.rate = TopicLimits::Rate{.count = count, .per = per, .burst = burst}};
}

// A consumer that takes every token the moment it is due, over `periods` periods: the n-th
// hand-out after the burst comes at exactly t0 + ceil(n * per / count), never 1 ns earlier, so
// the count per period stays `count` however long it runs. (A whole nanosecond is the earliest
// a token whose instant has a fraction can be taken; the bucket keeps that fraction, also with a
// burst of 1, where it is full at each take.)
void check_exact(uint32_t count, Duration per, uint32_t burst, int periods) {
  TopicLimiter l(rate(count, per, burst));
  for (uint32_t i = 0; i < burst; ++i) ASSERT_FALSE(l.take(t0)) << "the burst, hand-out " << i;
  TimePoint now = t0;
  const int64_t last = int64_t{count} * periods;
  for (int64_t n = 1; n <= last; ++n) {
    const std::optional<TopicLimiter::Refusal> no = l.refusal(now);
    ASSERT_TRUE(no) << "hand-out " << n << " before its token";
    const __int128 exact = (static_cast<__int128>(n) * per.count() + count - 1) / count;
    ASSERT_EQ(no->next_token, t0 + Duration(static_cast<int64_t>(exact))) << "hand-out " << n;
    ASSERT_FALSE(no->concurrency);
    ASSERT_TRUE(l.take(no->next_token - 1ns)) << "hand-out " << n << " 1 ns early";
    now = no->next_token;
    ASSERT_FALSE(l.take(now)) << "hand-out " << n << " refused at its token";
  }
  EXPECT_EQ(now, t0 + per * periods);
  EXPECT_EQ(l.snapshot(now).throttled_rate, static_cast<uint64_t>(last));  // the 1 ns early tries
}

TEST(TopicLimiter, ThreePerSecondIsExactOverAnHour) {
  check_exact(3, 1s, 2, 3600);
}
TEST(TopicLimiter, AThousandPerSecondIsExactOverAMinute) {
  check_exact(1000, 1s, 5, 60);
}
TEST(TopicLimiter, SevenPerMinuteIsExactOverADay) {
  check_exact(7, 1min, 3, 24 * 60);
}
TEST(TopicLimiter, ABurstOfOneIsExactToo) {
  check_exact(3, 1s, 1, 3600);
  check_exact(7, 1min, 1, 24 * 60);
}

// A full bucket holds no more: with a burst of 1, a token taken late (here half a second) puts
// the next one a whole interval after the take; a burst of 2 absorbs the same lateness.
TEST(TopicLimiter, ABurstOfOneCountsTheNextTokenFromALateTake) {
  TopicLimiter one(rate(1, 1s, 1));
  ASSERT_FALSE(one.take(t0));
  ASSERT_FALSE(one.take(t0 + 1500ms));
  EXPECT_EQ(one.refusal(t0 + 1500ms)->next_token, t0 + 2500ms);
  TopicLimiter two(rate(1, 1s, 2));
  ASSERT_FALSE(two.take(t0));
  ASSERT_FALSE(two.take(t0));
  ASSERT_FALSE(two.take(t0 + 1500ms));
  EXPECT_EQ(two.refusal(t0 + 1500ms)->next_token, t0 + 2s);
}

TEST(TopicLimiter, TokensRefillAtTheRateUpToTheBurst) {
  TopicLimiter l(rate(7, 1min, 3));
  EXPECT_EQ(l.snapshot(t0).tokens, 3u);
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(l.take(t0));
  EXPECT_EQ(l.snapshot(t0).tokens, 0u);
  // One token per 60/7 s = 8 571 428 571.43 ns.
  EXPECT_EQ(l.snapshot(t0 + 8'571'428'571ns).tokens, 0u);
  EXPECT_EQ(l.snapshot(t0 + 8'571'428'572ns).tokens, 1u);
  EXPECT_EQ(l.snapshot(t0 + 25'714'285'714ns).tokens, 2u);
  EXPECT_EQ(l.snapshot(t0 + 25'714'285'715ns).tokens, 3u);
  EXPECT_EQ(l.snapshot(t0 + 24h).tokens, 3u);
}

// A clock that steps back an hour after the bucket emptied: the topic waits one interval from
// the new `now`, not the hour of the step.
TEST(TopicLimiter, AClockStepBackDoesNotStallTheTopic) {
  TopicLimiter l(rate(2, 1s, 2));
  ASSERT_FALSE(l.take(t0));
  ASSERT_FALSE(l.take(t0));
  const TimePoint back = t0 - 1h;
  const std::optional<TopicLimiter::Refusal> no = l.refusal(back);
  ASSERT_TRUE(no);
  EXPECT_EQ(no->next_token, back + 500ms);
  EXPECT_EQ(l.snapshot(back).tokens, 0u);
  EXPECT_TRUE(l.take(back + 499ms));
  EXPECT_FALSE(l.take(back + 500ms));
  EXPECT_EQ(l.snapshot(back + 2s).tokens, 2u);
}

TEST(TopicLimiter, AGivenBackTokenCanBeSpentAgainAndAFullBucketStaysFull) {
  TopicLimiter l(rate(1, 1h, 2));
  ASSERT_FALSE(l.take(t0));
  EXPECT_EQ(l.snapshot(t0).tokens, 1u);
  l.give_back(t0);
  EXPECT_EQ(l.snapshot(t0).tokens, 2u);
  l.give_back(t0);
  EXPECT_EQ(l.snapshot(t0).tokens, 2u);
  ASSERT_FALSE(l.take(t0));
  ASSERT_FALSE(l.take(t0));
  EXPECT_TRUE(l.take(t0));
}

// A change keeps the whole tokens held (up to the new burst); a new rate's next token is one new
// interval away; what is in flight and the throttled counts stay.
TEST(TopicLimiter, AChangeKeepsTheTokensHeldAndTheCounts) {
  TopicLimiter l(rate(10, 1s, 10));
  for (int i = 0; i < 4; ++i) ASSERT_FALSE(l.take(t0));
  EXPECT_EQ(l.snapshot(t0).tokens, 6u);
  l.change(rate(20, 1s, 8), t0);
  EXPECT_EQ(l.snapshot(t0).tokens, 4u);
  l.change(rate(20, 1s, 2), t0);
  EXPECT_EQ(l.snapshot(t0).tokens, 0u);
  EXPECT_EQ(l.refusal(t0)->next_token, t0 + 50ms);
  l.change(rate(1, 1h, 1), t0);  // one missing token: the next is an hour away
  EXPECT_EQ(l.refusal(t0)->next_token, t0 + 1h);
  l.change(TopicLimits{.max_in_flight = 5}, t0);  // no rate: nothing but the cap holds
  EXPECT_EQ(
      l.snapshot(t0),
      (TopicFlow{.limits = TopicLimits{.max_in_flight = 5}, .in_flight = 4, .throttled_rate = 0}));
  l.change(rate(1, 1h, 3), t0);  // a rate where there was none: a full bucket
  EXPECT_EQ(l.snapshot(t0).tokens, 3u);
}

TEST(TopicLimiter, TheCapRefusesUntilAPlaceIsFreedAndSaysWhenItWasFull) {
  TopicLimiter l(TopicLimits{.rate = TopicLimits::Rate{.count = 1, .per = 1h, .burst = 5},
                             .max_in_flight = 2});
  ASSERT_FALSE(l.take(t0));
  EXPECT_FALSE(l.free_place()) << "1 of 2 in flight: nobody waited for a place";
  ASSERT_FALSE(l.take(t0));
  ASSERT_FALSE(l.take(t0));
  const std::optional<TopicLimiter::Refusal> no = l.take(t0);
  ASSERT_TRUE(no);
  EXPECT_TRUE(no->concurrency);
  EXPECT_EQ(no->next_token, TimePoint::max()) << "only a freed place helps";
  EXPECT_TRUE(l.free_place());
  EXPECT_EQ(l.in_flight(), 1u);
  ASSERT_FALSE(l.take(t0));
  EXPECT_EQ(
      l.snapshot(t0),
      (TopicFlow{.limits = l.limits(), .tokens = 1, .in_flight = 2, .throttled_concurrency = 1}));
  EXPECT_TRUE(l.free_place());
  ASSERT_FALSE(l.take(t0));  // the last token: now the rate holds too
  ASSERT_TRUE(l.take(t0)->concurrency) << "both hold: counted as the cap's";
  EXPECT_EQ(l.snapshot(t0).throttled_concurrency, 2u);
  EXPECT_EQ(l.snapshot(t0).throttled_rate, 0u);
  l.add_in_flight(3);
  EXPECT_FALSE(l.free_place()) << "5 of 2 in flight (seeded): still full after one";
  EXPECT_FALSE(l.free_place());
  EXPECT_FALSE(l.free_place());
  EXPECT_TRUE(l.free_place()) << "2 of 2 in flight until now";
}

// A limited topic that holds no job is not idle: it keeps its slot (and its limiter) however
// many topics come and go, as a paused one does. Cleared, it is idle again and can be freed.
TEST(TopicLimiter, ALimitedTopicKeepsItsSlotInTheCoreLikeAPausedOne) {
  CoreOptions o;
  o.idle_topics = 1;
  Core core(o, t0);
  TopicLimiter cap(TopicLimits{.max_in_flight = 1});
  core.set_limiter("limited", &cap);
  auto churn = [&] {
    for (int i = 0; i < 5; ++i) {
      const std::string topic = "other" + std::to_string(i);
      ASSERT_TRUE(core.push({.topic = topic, .id = topic}, t0).ok());
      ASSERT_TRUE(core.cancel(topic, t0).ok());
    }
  };
  churn();
  EXPECT_EQ(core.topic_slots(), 3u) << "the limited topic, the idle one kept, one freed for reuse";
  const std::vector<std::string> limited{"limited"};
  ASSERT_TRUE(core.push({.topic = "limited", .id = "a"}, t0).ok());
  ASSERT_TRUE(core.push({.topic = "limited", .id = "b"}, t0).ok());
  ASSERT_TRUE(core.reserve(limited, t0).ok());
  EXPECT_TRUE(core.reserve(limited, t0).is(Errc::timeout)) << "the limiter was lost with its slot";
  EXPECT_EQ(cap.in_flight(), 1u);
  core.set_limiter("limited", nullptr);
  EXPECT_TRUE(core.reserve(limited, t0).ok());
}

}  // namespace
}  // namespace delayq::engine
