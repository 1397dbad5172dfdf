// delayq-timing-micro: what the engine's timing bookkeeping (Stats::timing) adds to its hot
// paths, in ns per operation, without the rest of the queue around it:
//   - Lateness/record: one delivery counted in its topic's histogram (every reserve()), for
//     lateness values spread log-uniformly over 10 µs to 10 s;
//   - DueBins/w1: a delayed job binned and, when it falls due, unbinned (every push of a delayed
//     job and every job falling due), due times uniform over the next 5 s as in W1, with `pending`
//     jobs binned meanwhile;
//   - DueBins/spread: the same with due times spread over 30 days (bins rarely shared).
// docs/benchmarks.md sets these beside the W1 before/after pair.
#include <benchmark/benchmark.h>

#include <deque>
#include <random>
#include <vector>

#include "common/timing.h"
#include "engine/due_bins.h"

namespace {

using namespace std::chrono_literals;
using delayq::Duration;
using delayq::TimePoint;

void LatenessRecord(benchmark::State& state) {
  std::mt19937_64 rng(1);
  std::vector<int64_t> late(4096);
  for (int64_t& v : late)
    v = static_cast<int64_t>(
        std::exp(std::uniform_real_distribution<double>(std::log(1e4), std::log(1e10))(rng)));
  delayq::Lateness l;
  size_t i = 0;
  for (auto _ : state) {
    delayq::timing::record(l, late[i++ & 4095]);
    benchmark::DoNotOptimize(l);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(LatenessRecord);

// Binning and unbinning `pending` jobs in a rolling window: each iteration bins a new job and
// unbins the oldest, as jobs come and fall due.
void DueBinsRolling(benchmark::State& state, Duration spread) {
  const auto pending = static_cast<size_t>(state.range(0));
  std::mt19937_64 rng(2);
  TimePoint now = TimePoint(1767225600s);
  const auto next_due = [&] {
    now += 10us;  // time moves on as jobs come
    return now + Duration(static_cast<int64_t>(rng() % static_cast<uint64_t>(spread.count())));
  };
  delayq::engine::DueBins bins;
  std::deque<TimePoint> live;
  for (size_t n = 0; n < pending; ++n) {
    live.push_back(next_due());
    bins.add(live.back());
  }
  for (auto _ : state) {
    live.push_back(next_due());
    bins.add(live.back());
    bins.remove(live.front());
    live.pop_front();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(DueBinsRolling, w1, Duration(5s))->Arg(1000)->Arg(100000);
BENCHMARK_CAPTURE(DueBinsRolling, spread, Duration(30 * 24h))->Arg(1000)->Arg(100000);

}  // namespace

BENCHMARK_MAIN();
