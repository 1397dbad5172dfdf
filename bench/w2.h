// The timer workloads of docs/benchmarks.md (W2) as several peers run them: TimerService, the
// heap scheduler (heap_scheduler.h) and one Asio steady_timer per entry. W2 is written once here,
// over any timer service, so that every peer does exactly the same work and only the service
// differs.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "delayq/clock.h"
#include "report.h"

namespace delayq::bench {

// What shapes a timer run (delayq-bench's options that these workloads read).
struct TimerRun {
  size_t jobs = 0;
  std::vector<Duration> delay;  // one per job: whole milliseconds in [0, delay_max]
  size_t consumers = 2;         // W1
  size_t producers = 1;         // W1
  double delay_max_s = 5;
  double time_limit_s = 35;
  int tick_ms = 1;  // TimerService
};

// W1 and W2 on the baselines and on TimerService; each prints one JSON line and returns the
// process's exit code (0: every job arrived, or every entry fired or was cancelled).
int run_w1_heap(const TimerRun& r);
int run_w2_heap(const TimerRun& r);
int run_w2_timer_service(const TimerRun& r);
int run_w2_asio(const TimerRun& r);

// What W2's callbacks record: each entry's lateness, measured against the clock read before the
// group of kGroup schedules that holds it. The true due instant is a little later than that, so
// the figure overstates lateness by at most a group's scheduling time (a few microseconds) and a
// negative one is a callback that really ran early.
struct W2State {
  static constexpr size_t kGroup = 64;
  explicit W2State(size_t n) : due(n), lateness_ms(n, std::nan("")) {}
  std::vector<std::chrono::steady_clock::time_point> due;
  std::vector<double> lateness_ms;  // NaN until the entry fires
  std::atomic<size_t> fired{0};
};

// W2's callback. 16 bytes and trivially copyable: it fits std::function's small buffer, so no
// peer pays an allocation for the callable itself.
struct W2Fire {
  W2State* s;
  size_t i;
  void operator()() const {
    const auto late = std::chrono::steady_clock::now() - s->due[i];
    s->lateness_ms[i] = std::chrono::duration<double, std::milli>(late).count();
    s->fired.fetch_add(1, std::memory_order_relaxed);
  }
};

// W2 on `timers`: from this thread, schedule every entry with schedule_after(delay, W2Fire),
// then cancel every second one; wait until every entry not cancelled has fired (or the time
// limit), stop the service and print the line. `params` are extra fields of "params".
template <class Timers>
int run_w2_on(Timers& timers, const char* peer, const TimerRun& r, const std::string& params) {
  using Steady = std::chrono::steady_clock;
  const size_t n = r.jobs;
  W2State state(n);
  std::vector<decltype(timers.schedule_after(Duration{}, W2Fire{}))> handles(n);

  const Steady::time_point t0 = Steady::now();
  for (size_t g = 0; g < n; g += W2State::kGroup) {
    const Steady::time_point now = Steady::now();
    for (size_t i = g; i < std::min(n, g + W2State::kGroup); ++i) {
      state.due[i] = now + r.delay[i];
      handles[i] = timers.schedule_after(r.delay[i], W2Fire{&state, i});
    }
  }
  const double schedule_s = seconds(Steady::now() - t0);

  size_t cancelled = 0;
  const Steady::time_point t1 = Steady::now();
  for (size_t i = 0; i < n; i += 2) cancelled += timers.cancel(handles[i]);
  const double cancel_s = seconds(Steady::now() - t1);
  const size_t cancel_calls = (n + 1) / 2;

  const Steady::time_point limit =
      Steady::now() +
      std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(r.time_limit_s));
  while (state.fired.load() + cancelled < n && Steady::now() < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  timers.stop();

  // Every entry that fired (the service's thread is joined): cancelled ones that fired first too.
  const size_t fired = state.fired.load();
  std::vector<double> lat;
  lat.reserve(fired);
  for (double ms : state.lateness_ms)
    if (!std::isnan(ms)) lat.push_back(ms);
  std::cout << "{\"peer\":\"" << peer << "\",\"workload\":\"W2\",\"jobs\":" << n
            << ",\"schedule_per_s\":" << num(n / schedule_s)
            << ",\"cancel_per_s\":" << num(cancel_calls / cancel_s)
            << ",\"cancelled\":" << cancelled << ",\"fired\":" << fired
            << ",\"lateness_ms\":" << summary_json(lat)
            << ",\"params\":{\"delay_max_s\":" << num(r.delay_max_s) << params << "}}" << std::endl;
  return fired + cancelled == n ? 0 : 1;
}

}  // namespace delayq::bench
