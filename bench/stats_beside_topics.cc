// delayq-stats-probe: how long pushes wait while stats() runs beside many topics (issue 19).
//
// An in-memory engine (one shard unless told) holds one delayed job on each of --topics topics;
// one thread calls stats() back to back while the main thread pushes to another topic, one push
// every --every-us, for --seconds, timing each push call. A push that waits for a stats() holding
// the shard's lock shows in the maximum. One JSON line on stdout: the push latencies (p50, p99,
// max, in ms), how many pushes and stats() calls ran, the mean stats() time, and the time of a
// first stats() made before the pushes start (the one that sees every topic new). Run it niced:
// the machine's own stalls (delayq-stall-probe) are a floor under the maximum.
//   delayq-stats-probe [--topics 100000] [--seconds 3] [--every-us 50] [--shards 1] [--warmup 1]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "delayq/engine.h"

namespace {

using Steady = std::chrono::steady_clock;

double ms(Steady::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) {
  size_t topics = 100000, shards = 1;
  double seconds = 3, every_us = 50;
  bool warmup = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const double v = std::atof(argv[i + 1]);
    if (k == "--warmup" && (v == 0 || v == 1)) {
      warmup = v == 1;
      continue;
    }
    if (!(v > 0 && v <= 1e7)) {
      std::fprintf(stderr, "bad value for %s\n", k.c_str());
      return 2;
    }
    if (k == "--topics") topics = static_cast<size_t>(v);
    else if (k == "--seconds") seconds = v;
    else if (k == "--every-us") every_us = v;
    else if (k == "--shards") shards = static_cast<size_t>(v);
    else {
      std::fprintf(stderr, "usage: delayq-stats-probe [--topics N] [--seconds S] [--every-us U] [--shards N] [--warmup 0|1]\n");
      return 2;
    }
  }
  delayq::EngineOptions opt;
  opt.shards = shards;
  auto q = delayq::Engine::open(opt);
  if (!q) {
    std::fprintf(stderr, "%s\n", q.status().to_string().c_str());
    return 2;
  }
  delayq::Engine& e = **q;
  using namespace std::chrono_literals;
  for (size_t i = 0; i < topics; ++i)
    if (!e.push({.topic = "t" + std::to_string(i), .delay = 1h, .body = "x"}).ok()) return 1;

  // The first stats() after the topics were made copies every one of them into the engine's view
  // of its topics (those that changed since the last stats()): timed apart, before the pushes.
  // With --warmup 0 it runs beside the pushes like the others, and the maximum includes it.
  double first_stats_ms = 0;
  if (warmup) {
    const auto f0 = Steady::now();
    if (e.stats().topics.size() < topics) return 1;
    first_stats_ms = ms(Steady::now() - f0);
  }

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> stats_calls{0};
  Steady::duration stats_time{0};
  std::thread reader([&] {
    while (!stop.load()) {
      const auto t0 = Steady::now();
      const delayq::Stats st = e.stats();
      stats_time += Steady::now() - t0;
      if (st.topics.size() < topics) std::abort();  // every topic is there
      stats_calls.fetch_add(1);
    }
  });

  std::vector<double> lat;
  const auto end = Steady::now() + std::chrono::duration<double>(seconds);
  auto next = Steady::now();
  const auto step = std::chrono::duration_cast<Steady::duration>(
      std::chrono::duration<double, std::micro>(every_us));
  while (Steady::now() < end) {
    std::this_thread::sleep_until(next);
    next += step;
    const auto t0 = Steady::now();
    if (!e.push({.topic = "hot", .delay = 1h, .body = "x"}).ok()) return 1;
    lat.push_back(ms(Steady::now() - t0));
  }
  stop.store(true);
  reader.join();
  const uint64_t calls = stats_calls.load();
  std::printf(
      "{\"probe\":\"push-beside-stats\",\"topics\":%zu,\"shards\":%zu,\"pushes\":%zu,"
      "\"push_ms\":{\"p50\":%.4f,\"p99\":%.4f,\"max\":%.4f},\"stats_calls\":%llu,"
      "\"stats_mean_ms\":%.3f,\"first_stats_ms\":%.3f,\"warmup\":%s}\n",
      topics, shards, lat.size(), quantile(lat, 0.5), quantile(lat, 0.99),
      lat.empty() ? 0.0 : *std::max_element(lat.begin(), lat.end()),
      static_cast<unsigned long long>(calls), calls ? ms(stats_time) / static_cast<double>(calls) : 0.0,
      first_stats_ms, warmup ? "true" : "false");
  return 0;
}
