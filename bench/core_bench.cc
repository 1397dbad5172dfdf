// delayq-core-micro: the engine core's hot path alone (no lock, no clock, no thread), in ns per
// job: a job pushed, reserved and acknowledged, on plain `now` values.
//   - CoreCycle/keep:N: with N other ready jobs in the topic's line (N = 0: the topic empties
//     after every job, and is made again by the next push);
//   - CoreCycleTopics/N: each job on the next of N topics, round robin (N = 100000: every push
//     finds its topic emptied long before).
// For the before/after pair of a change to the core's bookkeeping (topics, retry policies).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "engine/core.h"

namespace {

using namespace std::chrono_literals;
using delayq::engine::Core;
using delayq::engine::CoreOptions;

const delayq::TimePoint kStart = delayq::TimePoint(1767225600s);

// Pushes, reserves from `topic` and acks one job; the id counts up.
void cycle(Core& c, const std::vector<std::string>& topic, uint64_t& n, delayq::TimePoint now) {
  const std::string id = std::to_string(++n);
  if (!c.push({.topic = topic[0], .id = id}, now).ok()) std::abort();
  delayq::Result<delayq::Delivery> d = c.reserve(topic, now);
  if (!d || !c.ack(d->token, now).ok()) std::abort();
}

void CoreCycle(benchmark::State& state) {
  Core c(CoreOptions{}, kStart);
  const std::vector<std::string> topic{"t"};
  uint64_t n = 0;
  for (int64_t k = 0; k < state.range(0); ++k)
    if (!c.push({.topic = "t", .id = "keep" + std::to_string(k), .delay = 1h}, kStart).ok())
      std::abort();
  delayq::TimePoint now = kStart;
  for (auto _ : state) {
    now += 1us;
    cycle(c, topic, n, now);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(CoreCycle)->ArgName("keep")->Arg(0)->Arg(1000);

void CoreCycleTopics(benchmark::State& state) {
  Core c(CoreOptions{}, kStart);
  std::vector<std::vector<std::string>> topics;
  for (int64_t k = 0; k < state.range(0); ++k) topics.push_back({"topic-" + std::to_string(k)});
  uint64_t n = 0;
  size_t i = 0;
  delayq::TimePoint now = kStart;
  for (auto _ : state) {
    now += 1us;
    cycle(c, topics[i], n, now);
    if (++i == topics.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(CoreCycleTopics)->Arg(10)->Arg(100000);

}  // namespace

BENCHMARK_MAIN();
