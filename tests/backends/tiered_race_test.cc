// Pushes racing refills (docs/tiered-store.md, "Who owns the boundary"): producer threads push
// jobs due around the horizon while another thread moves the ManualClock in small steps, so that
// refills run between and beside the pushes, and their batches are still queued for the disk
// (Sync::always: each write waits for an fsync) while the refill reads. Every job must be
// delivered exactly once, and none before its due time: none lost behind the refill's cursor
// (Cadence's bug), none loaded twice.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tiered_fixture.h"

namespace delayq {
namespace {

class TieredRace : public TieredStore {
 protected:
  void run(size_t shards) {
    constexpr Duration kHorizon = 1s;
    constexpr int kProducers = 4, kJobs = 300;
    open_for_race(shards, kHorizon);
    if (HasFatalFailure()) return;

    std::atomic<int> producing{kProducers};
    std::vector<std::thread> threads = race_pushes(kProducers, kJobs, producing, 24h);
    std::map<std::string, int> delivered;
    std::thread consumer([&] {
      while (producing.load() > 0 || clock_.now() < end_.load()) {
        auto d = q_->reserve("t", 0ms);
        if (!d) {
          std::this_thread::yield();
          continue;
        }
        EXPECT_LE(d->due, clock_.now()) << d->id << " delivered early";
        ++delivered[d->id];
        const Status acked = q_->ack(d->token);  // the lease (a day) cannot have run out
        EXPECT_TRUE(acked.ok()) << acked.to_string();
      }
    });
    // The clock moves a tenth of the horizon at a time while the producers push.
    while (producing.load() > 0) {
      clock_.advance(kHorizon / 10);
      std::this_thread::yield();
    }
    end_ = clock_.now() + 3 * kHorizon;
    clock_.set(end_);
    for (auto& t : threads) t.join();
    consumer.join();
    for (auto d = q_->reserve("t", 0ms); d; d = q_->reserve("t", 0ms)) {
      ++delivered[d->id];
      EXPECT_TRUE(q_->ack(d->token).ok());
    }
    EXPECT_TRUE(q_->health().ok()) << q_->health().to_string();
    for (int p = 0; p < kProducers; ++p)
      for (int i = 0; i < kJobs; ++i) {
        const std::string id = "p" + std::to_string(p) + "-" + std::to_string(i);
        EXPECT_EQ(delivered[id], 1) << id;
      }
    EXPECT_EQ(delivered.size(), size_t{kProducers * kJobs});
    EXPECT_TRUE(q_->stats().topics.empty());
  }

  std::atomic<TimePoint> end_{TimePoint::max()};
};

TEST_F(TieredRace, PushesRacingRefillsAreNeitherLostNorLoadedTwice) {
  run(1);
}
TEST_F(TieredRace, OnFourShardsToo) {
  run(4);
}

}  // namespace
}  // namespace delayq
