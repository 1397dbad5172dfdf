// W1 and W2 on the heap scheduler (heap_scheduler.h), as docs/benchmarks.md describes them:
// the figures delayq's are divided by in issue 13.
#include "heap_scheduler.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "w2.h"

namespace delayq::bench {
namespace {

using Steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A W1 job as a hand-written scheduler holds it: which job (the id) and its 64-byte body.
struct W1Job {
  size_t index;
  std::string body;
};

// Due jobs on their way from the timer thread to the consumers.
class ReadyJobs {
 public:
  void put(std::vector<W1Job>& due) {
    {
      std::lock_guard l(mu_);
      for (W1Job& j : due) jobs_.push_back(std::move(j));
    }
    if (due.size() == 1)
      cv_.notify_one();
    else
      cv_.notify_all();
  }
  // The oldest ready job; nullopt after `wait` with none (or once closed).
  std::optional<W1Job> take(Duration wait) {
    std::unique_lock l(mu_);
    if (!cv_.wait_for(l, wait, [&] { return closed_ || !jobs_.empty(); }) || jobs_.empty())
      return std::nullopt;
    W1Job j = std::move(jobs_.front());
    jobs_.pop_front();
    return j;
  }
  void close() {
    {
      std::lock_guard l(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<W1Job> jobs_;
  bool closed_ = false;
};

}  // namespace

// W1: producers schedule every job on the heap; the timer thread hands the due ones to
// `consumers` threads, which record lateness exactly as delayq-bench's memory W1 does (the system
// clock at receipt minus the system clock at push plus the delay).
int run_w1_heap(const TimerRun& r) {
  const size_t n = r.jobs;
  std::vector<TimePoint> pushed_at(n);
  std::vector<double> lateness_ms(n, 0);
  std::vector<std::atomic<uint8_t>> got(n);
  std::atomic<size_t> received{0}, duplicates{0};
  std::atomic<int64_t> last_ns{0};
  std::atomic<bool> done{false};
  const std::string body(64, 'x');
  auto& sys = SystemClock::instance();

  ReadyJobs ready;
  HeapScheduler<W1Job> heap([&](std::vector<W1Job>& due) { ready.put(due); });
  std::vector<std::thread> consumers;
  for (size_t c = 0; c < r.consumers; ++c)
    consumers.emplace_back([&] {
      while (!done.load()) {
        std::optional<W1Job> j = ready.take(100ms);
        if (!j) continue;
        const size_t i = j->index;
        lateness_ms[i] =
            std::chrono::duration<double, std::milli>(sys.now() - (pushed_at[i] + r.delay[i]))
                .count();
        if (got[i].exchange(1)) duplicates.fetch_add(1);
        last_ns.store(Steady::now().time_since_epoch().count());
        if (received.fetch_add(1) + 1 == n) done.store(true);
      }
    });

  const Steady::time_point start = Steady::now();
  auto produce = [&](size_t first, size_t step) {
    for (size_t i = first; i < n; i += step) {
      pushed_at[i] = sys.now();  // before the scheduler's own clock read: lateness never flatters
      heap.schedule_after(r.delay[i], W1Job{i, body});
    }
  };
  std::vector<std::thread> producers;
  for (size_t p = 1; p < r.producers; ++p) producers.emplace_back(produce, p, r.producers);
  produce(0, r.producers);
  for (auto& t : producers) t.join();
  const double push_s = seconds(Steady::now() - start);

  const Steady::time_point limit = start + std::chrono::duration_cast<Steady::duration>(
                                               std::chrono::duration<double>(r.time_limit_s));
  while (!done.load() && Steady::now() < limit) std::this_thread::sleep_for(5ms);
  done.store(true);
  heap.stop();
  ready.close();
  for (auto& t : consumers) t.join();

  const size_t got_n = received.load();
  std::vector<double> lat;
  lat.reserve(got_n);
  for (size_t i = 0; i < n; ++i)
    if (got[i].load()) lat.push_back(lateness_ms[i]);
  const double e2e =
      got_n ? seconds(Steady::time_point(Steady::duration(last_ns.load())) - start) : 0;
  std::cout << "{\"peer\":\"heap\",\"workload\":\"W1\",\"jobs\":" << n
            << ",\"push_per_s\":" << num(n / push_s) << ",\"end_to_end_s\":" << num(e2e)
            << ",\"lateness_ms\":" << summary_json(lat) << ",\"received\":" << got_n
            << ",\"duplicates\":" << duplicates.load()
            << ",\"params\":{\"delay_max_s\":" << num(r.delay_max_s)
            << ",\"consumers\":" << r.consumers << ",\"producers\":" << r.producers
            << ",\"body_bytes\":64}}" << std::endl;
  if (got_n != n) std::cerr << "time limit: received " << got_n << " of " << n << "\n";
  return got_n == n ? 0 : 1;
}

// W2: callbacks (std::function, as a hand-written scheduler holds them) run on the timer thread.
int run_w2_heap(const TimerRun& r) {
  using Callback = std::function<void()>;
  HeapScheduler<Callback> heap([](std::vector<Callback>& due) {
    for (Callback& cb : due) cb();
  });
  return run_w2_on(heap, "heap", r, "");
}

}  // namespace delayq::bench
