// The schedules workload (bench/README.md): --schedules S schedules "every 1m" on the durable
// store (or memory), their first occurrences spread evenly over a minute or all at one instant
// (--same-second 1), then --time-limit seconds of firing, with --consumers reserve/ack loops.
//
// Every occurrence fires exactly once (catch-up all), so the instants that fire are known in
// advance: for each schedule, its start and every minute after it. Sorted, the k-th of them is
// the k-th job the queue pushes, give or take the order within one wake-up; a sampler reads
// stats().pushed every millisecond, and the first sample that counts k pushes is the push time
// of the k-th instant. A delivery's time is its hand-out instant on the queue's clock (the lease
// deadline minus the jobs' ttr). Both are measured only for instants in the steady window: from
// one second after the last schedule was created to the end of the run.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "delayq_bench.h"
#include "redis_run.h"
#include "report.h"

namespace delayq::bench {

namespace {

using namespace std::chrono_literals;

constexpr Duration kTtr = std::chrono::seconds(60);
constexpr Duration kEvery = std::chrono::minutes(1);
constexpr Duration kGrace = std::chrono::seconds(3);

double ms_between(TimePoint from, TimePoint to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

int run_schedules(const Args& a) {
  const StoreDir dir(a.backend == "rocksdb" ? a.dir : "/");
  std::unique_ptr<RedisRun> redis;
  std::unique_ptr<Queue> opened = open_run_queue_or_say(a, dir.path(), redis, "schedules");
  if (!opened) return 2;
  Queue& q = *opened;
  Clock& clock = SystemClock::instance();
  const size_t n = a.schedules;
  const std::string topic = "sched";

  // The first occurrences: from a whole second 2 s ahead, spread over a minute or all at it.
  const TimePoint created_from = clock.now();
  const TimePoint t0 = std::chrono::ceil<std::chrono::seconds>(created_from) + 2s;
  std::vector<TimePoint> start(n);
  for (size_t i = 0; i < n; ++i)
    start[i] = a.same_second ? t0 : t0 + kEvery * static_cast<Duration::rep>(i) / static_cast<Duration::rep>(n);
  const Steady::time_point create_begin = Steady::now();
  for (size_t i = 0; i < n; ++i) {
    ScheduleSpec s;
    s.id = "s" + std::to_string(i);
    s.rule = "every 1m";
    s.start = start[i];
    s.catch_up = ScheduleSpec::CatchUp::all;  // each instant fires once, even during creation
    s.job.topic = topic;
    s.job.body = std::string(64, 'x');
    s.job.ttr = kTtr;
    if (Status st = q.schedule(s); !st.ok()) {
      std::cerr << "schedule " << s.id << ": " << st.to_string() << "\n";
      return 1;
    }
  }
  const double create_s = seconds(Steady::now() - create_begin);
  const TimePoint steady_from = clock.now() + 1s;
  const TimePoint until = steady_from + std::chrono::duration_cast<Duration>(
                                            std::chrono::duration<double>(a.time_limit_s));

  // Every instant that fires up to the end, in order, and the instant of each job id (a
  // delivery's due time is when its job was pushed if that was later).
  std::vector<TimePoint> instants;
  std::unordered_map<std::string, TimePoint> instant_of;
  for (size_t i = 0; i < n; ++i)
    for (TimePoint o = start[i]; o < until; o += kEvery) {
      instants.push_back(o);
      if (o >= steady_from) instant_of.emplace(occurrence_job_id("s" + std::to_string(i), o), o);
    }
  std::sort(instants.begin(), instants.end());

  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<double> to_delivery_ms;
  uint64_t delivered = 0, delivered_in_window = 0, early = 0;
  std::vector<std::thread> consumers;
  for (size_t c = 0; c < a.consumers; ++c)
    consumers.emplace_back([&] {
      while (!stop.load()) {
        Result<Delivery> d = q.reserve(topic, 100ms);
        if (!d) continue;
        const TimePoint at = d->lease_deadline - kTtr;
        (void)q.ack(d->token);
        const auto o = instant_of.find(d->id);
        std::lock_guard l(mu);
        ++delivered;
        if (at < d->due) ++early;
        if (o != instant_of.end()) {
          if (at < o->second) ++early;
          to_delivery_ms.push_back(ms_between(o->second, at));
          if (at < until) ++delivered_in_window;
        }
      }
    });
  // The sampler: (time, pushed) each time the count moves.
  std::vector<std::pair<TimePoint, uint64_t>> samples;
  uint64_t last = q.stats().pushed;
  samples.emplace_back(clock.now(), last);
  // Up to a grace period after the end, for what fell due just before it (not counted as
  // delivered in the window).
  while (clock.now() < until + kGrace) {
    std::this_thread::sleep_for(1ms);
    const uint64_t p = q.stats().pushed;
    if (p != last) samples.emplace_back(clock.now(), last = p);
  }
  stop.store(true);
  for (auto& t : consumers) t.join();

  std::vector<double> to_push_ms;
  uint64_t not_pushed = 0;
  for (size_t k = 0, s = 0; k < instants.size(); ++k) {
    while (s < samples.size() && samples[s].second <= k) ++s;
    if (instants[k] < steady_from || instants[k] >= until) continue;
    if (s == samples.size()) {
      ++not_pushed;
      continue;
    }
    to_push_ms.push_back(ms_between(instants[k], samples[s].first));
  }
  const uint64_t in_window = static_cast<uint64_t>(std::count_if(
      instants.begin(), instants.end(), [&](TimePoint o) { return o >= steady_from; }));
  const double window_s = a.time_limit_s;
  const uint64_t pushed = q.stats().pushed;
  std::cout << "{\"peer\":\"delayq-" << a.backend << "\",\"workload\":\"schedules\",\"jobs\":"
            << n << ",\"create_per_s\":" << num(n / create_s)
            << ",\"offered_per_s\":" << num(in_window / window_s)
            << ",\"delivered_per_s\":" << num(delivered_in_window / window_s)
            << ",\"occurrences\":" << in_window << ",\"pushed\":" << pushed
            << ",\"delivered\":" << delivered << ",\"not_pushed\":" << not_pushed
            << ",\"early\":" << early << ",\"to_push_ms\":" << summary_json(to_push_ms)
            << ",\"to_delivery_ms\":" << summary_json(to_delivery_ms)
            << ",\"params\":{\"same_second\":" << (a.same_second ? 1 : 0)
            << ",\"window_s\":" << num(window_s) << ",\"consumers\":" << a.consumers
            << (a.backend == "rocksdb" ? sync_params(a) : std::string())
            << ",\"shards\":" << a.shards << "}}" << std::endl;
  opened.reset();
  if (redis) redis->cleanup();
  // Whole: every instant in the window pushed and delivered, none early, none twice.
  const bool whole = not_pushed == 0 && early == 0 && pushed >= instants.size() &&
                     to_delivery_ms.size() == in_window;
  if (!whole) std::cerr << "the run was not whole (see not_pushed, early, pushed, delivered)\n";
  return whole ? 0 : 1;
}

}  // namespace delayq::bench
