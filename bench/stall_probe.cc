// delayq-stall-probe: how often this machine stops a running thread, with no queue involved.
// Two threads (one per core here) read the clock in a tight loop for a few seconds and count the
// gaps between consecutive reads. Gaps of milliseconds are the host or kernel taking the CPU
// away; any job due during one is late by it, whatever the queue does. One JSON line on stdout.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  const double secs = argc > 1 ? std::atof(argv[1]) : 5.0;
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::vector<long>> gaps(n);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      const auto end = Clock::now() + std::chrono::duration<double>(secs);
      auto last = Clock::now();
      for (;;) {
        const auto now = Clock::now();
        const long us = std::chrono::duration_cast<std::chrono::microseconds>(now - last).count();
        if (us >= 500) gaps[t].push_back(us);
        last = now;
        if (now > end) break;
      }
    });
  for (auto& t : threads) t.join();
  std::vector<long> all;
  for (auto& g : gaps) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  long stalled_us = 0, over_1ms = 0;
  for (long g : all) {
    stalled_us += g;
    over_1ms += g >= 1000;
  }
  std::printf(
      "{\"probe\":\"stalls\",\"seconds\":%.1f,\"threads\":%u,\"gaps_over_0_5ms\":%zu,"
      "\"gaps_over_1ms\":%ld,\"max_gap_ms\":%.2f,\"stalled_share\":%.4f}\n",
      secs, n, all.size(), over_1ms, all.empty() ? 0.0 : all.back() / 1000.0,
      stalled_us / (secs * 1e6 * n));
}
