// Lateness and what fires when (TopicTiming in include/delayq/job.h, docs/semantics.md "What
// fires when" and "Lateness") in the engine and the durable store, on a ManualClock so that
// every figure is exact: the shared bucket and window rules (src/common/timing.h) against
// brute force, the engine's due bins against a list of due times, the backends on directed
// cases, and the in-memory engine under random calls against a reference that looks at every
// job (get()) and every delivery.
//
// Kept whole over ~400 lines: one subject, TopicTiming, from its shared rules up to the engine
// under random calls, the sections sharing helpers such as bucket_of_bound().
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/timing.h"
#include "delayq/engine.h"
#include "delayq/store.h"
#include "engine/bin_counts.h"
#include "engine/due_bins.h"
#include "engine/test_hooks.h"
#include "temp_dir.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;

// The index of the bucket whose bound is `d`.
size_t bucket_of_bound(Duration d) {
  const auto& b = Lateness::kBounds;
  return static_cast<size_t>(std::find(b.begin(), b.end(), d) - b.begin());
}

// ---- the shared rules ----

TEST(LatenessBuckets, EachBoundIsInclusiveAndOneNanosecondMoreIsTheNextBucket) {
  EXPECT_EQ(timing::lateness_bucket(0), 0u);
  for (size_t i = 0; i < Lateness::kBounds.size(); ++i) {
    const int64_t b = Lateness::kBounds[i].count();
    EXPECT_EQ(timing::lateness_bucket(b), i) << b;
    EXPECT_EQ(timing::lateness_bucket(b + 1), i + 1) << b + 1;
  }
  EXPECT_EQ(timing::lateness_bucket(INT64_MAX), Lateness::kBounds.size());
}

TEST(LatenessBuckets, AgreeWithALinearSearchOverTheBounds) {
  std::mt19937_64 rng(1);
  for (int n = 0; n < 200000; ++n) {
    const int64_t v = static_cast<int64_t>(rng() >> (1 + rng() % 63));  // every order of magnitude
    size_t want = 0;
    while (want < Lateness::kBounds.size() && v > Lateness::kBounds[want].count()) ++want;
    ASSERT_EQ(timing::lateness_bucket(v), want) << v;
  }
}

TEST(LatenessBuckets, ANegativeLatenessCountsAsZeroAndAsClamped) {
  Lateness l;
  timing::record(l, -5);
  timing::record(l, 3'000'000);
  EXPECT_EQ(l.count, 2u);
  EXPECT_EQ(l.clamped, 1u);
  EXPECT_EQ(l.buckets[0], 1u);
  EXPECT_EQ(l.buckets[bucket_of_bound(5ms)], 1u);
  EXPECT_DOUBLE_EQ(l.sum_seconds, 0.003);
}

TEST(DueWindows, EachEndIsAWholeUnitAfterNowRoundedDown) {
  const TimePoint now = TimePoint(1767225600s) + 17min + 42s + 500ms;  // 2026-01-01T00:17:42.5Z
  const timing::DueBounds b = timing::due_bounds(now);
  EXPECT_EQ(b.minute, TimePoint(1767225600s) + 17min + 102s);
  EXPECT_EQ(b.hour, TimePoint(1767225600s) + 77min);
  EXPECT_EQ(b.day, TimePoint(1767225600s) + 24h);
  EXPECT_EQ(b.week, TimePoint(1767225600s) + 168h);
  DueWindows w;
  for (TimePoint due :
       {b.minute - 1ns, b.minute, b.hour - 1ns, b.hour, b.day, b.week - 1ns, b.week})
    timing::count_due(w, due, b);
  EXPECT_EQ(w, (DueWindows{
                   .next_minute = 1, .next_hour = 2, .next_day = 1, .next_week = 2, .beyond = 1}));
}

TEST(BinCounts, AgreeWithAMapUnderRandomInsertsAndErases) {
  std::mt19937_64 rng(4);
  engine::BinCounts t;
  std::map<int64_t, uint64_t> want;
  for (int step = 0; step < 100000; ++step) {
    // Few distinct bins, near each other and far apart: long probe runs, wrap-arounds, growth.
    const int64_t b = static_cast<int64_t>(rng() % 300) * (rng() % 4 == 0 ? 1'000'003 : 1) - 150;
    if (rng() % 3 != 0) {
      ++t.count(t.insert(b));
      ++want[b];
    } else if (const size_t i = t.find(b); i != engine::BinCounts::npos) {
      ASSERT_EQ(t.key(i), b);
      if (--t.count(i) == 0) t.erase(i);
      if (--want[b] == 0) want.erase(b);
    } else {
      ASSERT_EQ(want.count(b), 0u) << b;
    }
    if (step % 997 != 0) continue;
    ASSERT_EQ(t.size(), want.size());
    for (const auto& [k, n] : want) {
      const size_t i = t.find(k);
      ASSERT_NE(i, engine::BinCounts::npos) << k;
      ASSERT_EQ(t.count(i), n) << k;
    }
    size_t seen = 0;
    t.for_each([&](int64_t k, uint64_t n) {
      ++seen;
      EXPECT_EQ(want[k], n) << k;
    });
    ASSERT_EQ(seen, want.size());
  }
}

TEST(DueBins, AnswerAsAListOfEveryDueTimeWould) {
  std::mt19937_64 rng(2);
  TimePoint now = TimePoint(1767225600s);
  engine::DueBins bins;
  std::multiset<TimePoint> dues;
  const Duration spans[] = {2s, 90s, 2h, 3 * 24h, 10 * 24h};
  for (int step = 0; step < 20000; ++step) {
    const int r = static_cast<int>(rng() % 10);
    if (r < 5) {
      const Duration span = spans[rng() % std::size(spans)];
      const TimePoint due = now + 1ns + Duration(static_cast<int64_t>(rng() % span.count()));
      bins.add(due);
      dues.insert(due);
    } else if (r < 8 && !dues.empty()) {
      auto it = std::next(dues.begin(), static_cast<long>(rng() % dues.size()));
      bins.remove(*it);
      dues.erase(it);
    } else {
      now += Duration(static_cast<int64_t>(rng() % (r == 8 ? 2'000'000'000 : 200'000'000'000)));
      // Jobs due by now have fallen due: they leave, as they leave a core's bins.
      while (!dues.empty() && *dues.begin() <= now) {
        bins.remove(*dues.begin());
        dues.erase(dues.begin());
      }
    }
    DueWindows want;
    const timing::DueBounds b = timing::due_bounds(now);
    for (TimePoint due : dues) timing::count_due(want, due, b);
    ASSERT_EQ(bins.windows(now, dues.size()), want) << "step " << step;
  }
}

// Due times at either end of representable time fall in bins without overflow (the journal
// fuzzer found the floor division negating the earliest instant), and count as what they are.
// A `now` at either end of representable time (a clock far off) gives ends in order, without
// overflow (UBSan, in the sanitizer stage, stops on one): the rounding and the sums are held a
// little over a week inside.
TEST(DueWindows, EndsNearEitherEndOfTheClockAreInOrderWithoutOverflow) {
  for (TimePoint now : {TimePoint::min(), TimePoint::min() + 1h, TimePoint::max() - 1h,
                        TimePoint::max()}) {
    const timing::DueBounds b = timing::due_bounds(now);
    EXPECT_LT(b.minute, b.hour);
    EXPECT_LT(b.hour, b.day);
    EXPECT_LT(b.day, b.week);
  }
}

TEST(DueBins, TimesAtEitherEndOfTheClockAreBinnedWithoutOverflow) {
  engine::DueBins bins;
  const TimePoint now = TimePoint(1767225600s);
  for (TimePoint t : {TimePoint::min(), TimePoint(-1ns)}) {
    bins.add(t);  // UBSan (the sanitizer stage) stops here if the bin's arithmetic overflows
    bins.remove(t);
  }
  bins.add(TimePoint::max());
  bins.add(now + 30s);
  DueWindows want;
  want.next_minute = 1;
  want.beyond = 1;
  EXPECT_EQ(bins.windows(now, 2), want);
  bins.remove(TimePoint::max());
  bins.remove(now + 30s);
  EXPECT_EQ(bins.windows(now, 0), DueWindows{});
}

// ---- the backends, on a ManualClock ----

class Memory {
 public:
  static constexpr bool kDurable = false;
  Result<std::unique_ptr<Engine>> open(ManualClock& clock, const std::string&) {
    EngineOptions o;
    o.clock = &clock;
    return Engine::open(o);
  }
};

template <bool kTiered>
class Store {
 public:
  static constexpr bool kDurable = true;
  Result<std::unique_ptr<Engine>> open(ManualClock& clock, const std::string& dir) {
    StoreOptions o;
    o.dir = dir;
    o.sync = Sync::none;
    if (kTiered) o.horizon = 1min;
    o.engine.clock = &clock;
    return open_store(o);
  }
};

template <class B>
class Timing : public ::testing::Test {
 protected:
  void open() {
    q_.reset();
    auto q = backend_.open(clock_, dir_.path() + "/store");
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    q_ = std::move(q).value();
  }
  void SetUp() override { open(); }
  void push(const std::string& id, Duration delay, const std::string& topic = "t",
            RetryPolicy retry = RetryPolicy::fixed(1s, 5)) {
    ASSERT_TRUE(q_->push({.topic = topic, .id = id, .delay = delay, .retry = retry}).ok()) << id;
  }
  Delivery reserve(const std::string& topic = "t") {
    auto d = q_->reserve(topic, 0ms);
    EXPECT_TRUE(d.ok()) << d.status().to_string();
    return d.ok() ? *d : Delivery{};
  }
  TopicTiming timing(const std::string& topic = "t") {
    const Stats st = q_->stats();
    auto it = st.timing.find(topic);
    return it == st.timing.end() ? TopicTiming{} : it->second;
  }
  // Jobs due at or after the disk tier's horizon live on disk, and count as beyond.
  bool on_disk(TimePoint due) {
    const std::optional<engine::FarKey> k = engine::tier_view(*q_).horizon;
    return k && due >= k->due;
  }

  B backend_;
  testing::TempDir dir_;
  ManualClock clock_{TimePoint(1767225600s) + 20min + 30s};  // 2026-01-01T00:20:30Z
  std::unique_ptr<Engine> q_;
};

using Backends = ::testing::Types<Memory, Store<false>, Store<true>>;
class BackendNames {
 public:
  template <class T>
  static std::string GetName(int) {
    if constexpr (std::is_same_v<T, Memory>) return "Memory";
    if constexpr (std::is_same_v<T, Store<false>>) return "Durable";
    return "Tiered";
  }
};
TYPED_TEST_SUITE(Timing, Backends, BackendNames);

TYPED_TEST(Timing, AJobHandedOut3msAfterItsDueTimeCountsInThe5msBucket) {
  this->push("a", 10s);
  this->clock_.advance(10s + 3ms);
  const Delivery d = this->reserve();
  EXPECT_EQ(d.attempt, 1u);
  const TopicTiming t = this->timing();
  Lateness want;
  want.buckets[bucket_of_bound(5ms)] = 1;
  want.count = 1;
  want.sum_seconds = 0.003;
  EXPECT_EQ(t.first.buckets, want.buckets);
  EXPECT_EQ(t.first.count, 1u);
  EXPECT_NEAR(t.first.sum_seconds, 0.003, 1e-12);
  EXPECT_EQ(t.retry, Lateness{});
}

TYPED_TEST(Timing, RetriesAreCountedApartFromFirstAttempts) {
  this->push("a", 0s, "t", RetryPolicy::fixed(2s, 5));
  Delivery d = this->reserve();  // on time: the 100 µs bucket
  ASSERT_TRUE(this->q_->nack(d.token, 1s).ok());
  this->clock_.advance(1s + 30ms);  // handed out 30 ms after the retry was due: 50 ms bucket
  d = this->reserve();
  EXPECT_EQ(d.attempt, 2u);
  // The lease (30 s) runs out; the policy's 2 s retry is due 32 s after the reservation, and
  // handed out 2 min after that. (A retry whose wait has passed by the time the failure is
  // handled is due then: a jump straight past it would measure from the jump.)
  this->clock_.advance(30s);
  this->clock_.advance(2s + 2min);
  d = this->reserve();
  EXPECT_EQ(d.attempt, 3u);
  const TopicTiming t = this->timing();
  EXPECT_EQ(t.first.count, 1u);
  EXPECT_EQ(t.first.buckets[0], 1u);
  EXPECT_EQ(t.retry.count, 2u);
  EXPECT_EQ(t.retry.buckets[bucket_of_bound(50ms)], 1u);
  EXPECT_EQ(t.retry.buckets[bucket_of_bound(5min)], 1u);
  EXPECT_NEAR(t.retry.sum_seconds, 0.030 + 120, 1e-9);
  EXPECT_EQ(this->q_->stats().delivered, 3u);
}

TYPED_TEST(Timing, DelayedJobsAreCountedByTheWindowTheyFallDueIn) {
  struct Job {
    const char* id;
    Duration delay;
  };
  const std::vector<Job> jobs = {{"s30", 30s},    {"s59", 59s},     {"m2", 2min}, {"m58", 58min},
                                 {"h2", 2h},      {"h23", 23h},     {"d2", 48h},  {"d6", 6 * 24h},
                                 {"d8", 8 * 24h}, {"d30", 30 * 24h}};
  for (const Job& j : jobs) this->push(j.id, j.delay);
  for (int round = 0; round < 3; ++round) {
    // The same rule as every backend's, minus what lives on disk (beyond, whatever its due).
    DueWindows want;
    const timing::DueBounds b = timing::due_bounds(this->clock_.now());
    for (const Job& j : jobs) {
      const TimePoint due = TimePoint(1767225600s) + 20min + 30s + j.delay;
      if (due <= this->clock_.now()) continue;
      if (this->on_disk(due))
        ++want.beyond;
      else
        timing::count_due(want, due, b);
    }
    EXPECT_EQ(this->timing().due, want) << "round " << round;
    if (round == 0 && !this->on_disk(this->clock_.now() + 2h)) {
      EXPECT_EQ(want.next_day, 2u);  // with no disk tier: one job per window at least
    }
    this->clock_.advance(round == 0 ? 31s : 3h);
    (void)this->q_->reserve("t", 0ms);  // takes one of those that fell due: they leave delayed
  }
}

TYPED_TEST(Timing, AnEmptyTopicKeepsItsLatenessAndNoLongerCountsJobs) {
  this->push("a", 1s);
  this->clock_.advance(2s);
  ASSERT_TRUE(this->q_->ack(this->reserve().token).ok());
  const Stats st = this->q_->stats();
  EXPECT_EQ(st.topics.count("t"), 0u);
  ASSERT_EQ(st.timing.count("t"), 1u);
  EXPECT_EQ(st.timing.at("t").first.buckets[bucket_of_bound(1s)], 1u);
  EXPECT_EQ(st.timing.at("t").due, DueWindows{});
}

TYPED_TEST(Timing, OldestReadyIsHowLongTheFrontOfTheLineHasBeenDue) {
  EXPECT_EQ(this->timing().oldest_ready, 0s);
  this->push("a", 1s);
  this->push("b", 3s);
  this->clock_.advance(10s);
  EXPECT_EQ(this->timing().oldest_ready, 9s);
  EXPECT_EQ(this->reserve().id, "a");
  EXPECT_EQ(this->timing().oldest_ready, 7s);
  (void)this->reserve();
  EXPECT_EQ(this->timing().oldest_ready, 0s);
}

TYPED_TEST(Timing, LatenessStartsAgainAtEachOpenAndTheWindowsComeBackFromTheJobs) {
  if constexpr (!TypeParam::kDurable) {
    GTEST_SKIP() << "the in-memory engine keeps nothing across an open";
  } else {
    this->push("late", 0s);
    this->push("soon", 45s);
    this->push("later", 3h);
    this->clock_.advance(20ms);
    (void)this->reserve();
    const Stats before = this->q_->stats();
    EXPECT_EQ(before.timing.at("t").first.count, 1u);
    this->open();
    const Stats after = this->q_->stats();
    EXPECT_EQ(after.delivered, 1u) << "the totals are kept";
    EXPECT_EQ(after.timing.at("t").first, Lateness{}) << "lateness counts since the open";
    EXPECT_EQ(after.timing.at("t").due, before.timing.at("t").due);
  }
}

// ---- random calls on the in-memory engine against a reference ----

// Every few calls, stats() is checked against what the queue's own answers say: the windows
// from get() of every job (a scan: the reference), the lateness from the deliveries the test
// received, the oldest ready job at most the one with the earliest due time (the front of the
// line is that job unless a catch-up made jobs ready out of due order).
class TimingModel : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    EngineOptions o;
    o.clock = &clock_;
    o.shards = GetParam();
    o.seed = 3;
    auto q = Engine::open(o);
    ASSERT_TRUE(q.ok());
    q_ = std::move(q).value();
  }

  Duration random_delay() {
    const Duration spans[] = {0s, 2s, 2min, 3h, 3 * 24h, 20 * 24h};
    const Duration span = spans[rng_() % std::size(spans)];
    return span == 0s ? 0s : Duration(static_cast<int64_t>(rng_() % span.count()));
  }
  const std::string& topic() { return kTopics[rng_() % std::size(kTopics)]; }

  void step() {
    const int r = static_cast<int>(rng_() % 100);
    if (r < 30) {
      const std::string id = "j" + std::to_string(next_id_++);
      auto p = q_->push({.topic = topic(),
                         .id = id,
                         .delay = random_delay(),
                         .ttr = 20s,
                         .retry = RetryPolicy::fixed(Duration(rng_() % 90'000'000'000), 3)});
      ASSERT_TRUE(p.ok());
      ids_.push_back(id);
    } else if (r < 50) {
      auto d = q_->reserve(topic(), 0ms);
      if (!d) return;
      Lateness& l = d->attempt == 1 ? seen_[d->topic].first : seen_[d->topic].retry;
      timing::record(l, (clock_.now() - d->due).count());
      held_.push_back(d->token);
    } else if (r < 65 && !held_.empty()) {
      const size_t i = rng_() % held_.size();
      const Token t = held_[i];
      held_.erase(held_.begin() + static_cast<long>(i));
      switch (rng_() % 5) {
        case 0:
          (void)q_->ack(t);
          break;
        case 1:
          (void)q_->nack(t, rng_() % 2 ? std::optional<Duration>(random_delay()) : std::nullopt);
          break;
        case 2:
          (void)q_->dead_letter(t);
          break;
        case 3:
          (void)q_->release(t);
          break;
        default:
          (void)q_->touch(t);
          held_.push_back(t);
          break;
      }
    } else if (r < 72 && !ids_.empty()) {
      (void)q_->cancel(ids_[rng_() % ids_.size()]);
    } else if (r < 80 && !ids_.empty()) {
      (void)q_->reschedule(ids_[rng_() % ids_.size()], clock_.now() + random_delay());
    } else if (r < 83 && !ids_.empty()) {
      (void)q_->requeue_dead(ids_[rng_() % ids_.size()]);
    } else if (r < 88) {
      // Onto a window's edge (now rounded to the minute, plus a minute, less a nanosecond).
      const TimePoint edge = std::chrono::floor<std::chrono::minutes>(clock_.now()) + 1min - 1ns;
      (void)clock_.set(std::max(edge, clock_.now()));
    } else {
      const Duration jumps[] = {1s, 2min, 3h, 2 * 24h};
      clock_.advance(Duration(static_cast<int64_t>(rng_() % jumps[rng_() % 4].count())));
    }
  }

  void check() {
    const Stats st = q_->stats();
    const TimePoint now = clock_.now();
    const timing::DueBounds b = timing::due_bounds(now);
    std::map<std::string, DueWindows> windows;
    std::map<std::string, TimePoint> earliest_ready;
    std::vector<std::string> live;
    for (const std::string& id : ids_) {
      auto j = q_->get(id);
      if (!j) continue;
      live.push_back(id);
      if (j->state == JobState::delayed) timing::count_due(windows[j->topic], j->due, b);
      if (j->state == JobState::ready &&
          (!earliest_ready.count(j->topic) || j->due < earliest_ready[j->topic]))
        earliest_ready[j->topic] = j->due;
    }
    ids_ = std::move(live);
    for (const std::string& t : kTopics) {
      SCOPED_TRACE("topic " + t);
      auto it = st.timing.find(t);
      const TopicTiming got = it == st.timing.end() ? TopicTiming{} : it->second;
      ASSERT_EQ(got.due, windows[t]);
      const Duration oldest = earliest_ready.count(t) ? now - earliest_ready[t] : 0s;
      ASSERT_LE(got.oldest_ready, oldest);
      ASSERT_GE(got.oldest_ready, 0s);
      if (oldest == 0s) {
        ASSERT_EQ(got.oldest_ready, 0s);
      }
      for (const auto& [g, w] :
           {std::pair{&got.first, &seen_[t].first}, std::pair{&got.retry, &seen_[t].retry}}) {
        ASSERT_EQ(g->buckets, w->buckets);
        ASSERT_EQ(g->count, w->count);
        ASSERT_EQ(g->clamped, 0u);
        ASSERT_NEAR(g->sum_seconds, w->sum_seconds, 1e-6 * std::max(1.0, w->sum_seconds));
      }
    }
  }

  inline static const std::string kTopics[] = {"orders", "sms", "callbacks"};
  ManualClock clock_;
  std::unique_ptr<Engine> q_;
  std::mt19937_64 rng_{GetParam() * 7919 + 11};
  uint64_t next_id_ = 0;
  std::vector<std::string> ids_;
  std::vector<Token> held_;
  std::map<std::string, TopicTiming> seen_;  // lateness only
};

TEST_P(TimingModel, StatsAgreeWithEveryJobAndEveryDelivery) {
  for (int i = 0; i < 4000; ++i) {
    step();
    if (HasFatalFailure()) return;
    if (i % 4 == 0) {
      check();
      if (HasFatalFailure()) return;
    }
  }
  // With one shard, the next job reserve() hands out is the front of the line stats() measured.
  if (GetParam() != 1) return;
  const Stats st = q_->stats();
  for (const std::string& t : kTopics) {
    auto d = q_->reserve(t, 0ms);
    if (!d) continue;
    EXPECT_EQ(st.timing.at(t).oldest_ready, clock_.now() - d->due) << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, TimingModel, ::testing::Values(1, 3));

}  // namespace
}  // namespace delayq
