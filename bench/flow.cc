// Flow control in delayq-bench (flow.h): W1's inversion count, and the rate workload: --jobs
// ready jobs in one topic limited to --rate hand-outs per second with burst --burst, taken by
// --consumers reserve/ack loops; each 1-s window after the burst is counted from the hand-out
// instants on the queue's own clock, and the run fails when one is off by more than 2 %.
#include "flow.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "delayq_bench.h"
#include "redis_run.h"
#include "server_meter.h"
#include "report.h"

namespace delayq::bench {

using namespace std::chrono_literals;

uint32_t priority_of(const Args& a, size_t i) {
  if (a.priorities == 0) return kDefaultPriority;
  return kDefaultPriority - a.priorities / 2 + static_cast<uint32_t>(i % a.priorities);
}

Handout handout_of(const Delivery& d, uint32_t priority) {
  return {.fence = d.token.fence, .priority = priority, .due = d.due,
          .at = d.lease_deadline - kHandoutTtr};
}

uint64_t count_inversions(const std::vector<Handout>& h,
                          const std::vector<std::atomic<uint8_t>>& got) {
  std::vector<const Handout*> order;
  for (size_t i = 0; i < h.size(); ++i)
    if (got[i].load()) order.push_back(&h[i]);
  std::sort(order.begin(), order.end(),
            [](const Handout* x, const Handout* y) { return x->fence < y->fence; });
  // Walking from the last hand-out back: the earliest due time among the later hand-outs of
  // each priority.
  std::map<uint32_t, TimePoint> earliest_later;
  uint64_t inversions = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Handout& d = **it;
    for (const auto& [priority, due] : earliest_later) {
      if (priority >= d.priority) break;
      if (due + kInversionMargin <= d.at) {
        ++inversions;
        break;
      }
    }
    auto [slot, added] = earliest_later.try_emplace(d.priority, d.due);
    if (!added) slot->second = std::min(slot->second, d.due);
  }
  return inversions;
}

int run_rate(const Args& a) {
  const StoreDir dir(a.backend == "rocksdb" ? a.dir : "/");
  std::unique_ptr<RedisRun> redis;
  std::unique_ptr<Queue> opened = open_run_queue_or_say(a, dir.path(), redis, "rate");
  if (!opened) return 2;
  Queue& q = *opened;
  const std::string topic = "rate";
  const auto count = static_cast<uint32_t>(a.rate);
  if (Status st = q.set_topic_limits(topic, {.rate = TopicLimits::Rate{count, 1s, a.burst}});
      !st.ok()) {
    std::cerr << "set_topic_limits: " << st.to_string() << "\n";
    return 2;
  }
  const size_t n = a.jobs;
  const std::string body(64, 'x');
  // The servers' time from the pushes to the last acknowledgement (server_meter.h).
  std::unique_ptr<ServerMeter> meter;
  if (redis) {
    meter = std::make_unique<ServerMeter>(a.redis, a.server_profile);
    meter->start();
  }
  for (size_t i = 0; i < n;) {
    std::vector<JobSpec> specs;
    for (const size_t end = std::min(n, i + 1000); i < end; ++i)
      specs.push_back({.topic = topic, .id = std::to_string(i), .ttr = kHandoutTtr, .body = body});
    for (auto& r : q.push_batch(std::move(specs)))
      if (!r) {
        std::cerr << "push failed: " << r.status().to_string() << "\n";
        return 1;
      }
  }

  std::mutex mu;
  std::vector<TimePoint> at;
  at.reserve(n);
  std::atomic<size_t> received{0};
  std::atomic<bool> stop{false};
  const Steady::time_point start = Steady::now();
  const Steady::time_point limit =
      start + std::chrono::duration_cast<Steady::duration>(
                  std::chrono::duration<double>(a.time_limit_s > 0 ? a.time_limit_s
                                                                   : n / a.rate + 30));
  std::vector<std::thread> consumers;
  for (size_t c = 0; c < a.consumers; ++c)
    consumers.emplace_back([&] {
      while (!stop.load()) {
        Result<Delivery> d = q.reserve(topic, 100ms);
        if (!d) continue;
        {
          std::lock_guard lock(mu);
          at.push_back(d->lease_deadline - kHandoutTtr);
        }
        (void)q.ack(d->token);
        if (received.fetch_add(1) + 1 == n) stop.store(true);
      }
    });
  while (!stop.load() && Steady::now() < limit) std::this_thread::sleep_for(5ms);
  stop.store(true);
  for (auto& t : consumers) t.join();
  const double run_s = seconds(Steady::now() - start);
  std::string server;
  if (meter) {
    const ServerTime t = meter->finish(at.size());
    std::cerr << "delayq-bench: " << server_time_text(t);
    server = ",\"server\":" + server_time_json(t);
  }

  // The windows: whole seconds from the first hand-out after the burst.
  std::sort(at.begin(), at.end());
  std::vector<size_t> windows;
  if (at.size() > a.burst) {
    const TimePoint first = at[a.burst];
    for (TimePoint w = first; w + 1s <= at.back(); w += 1s)
      windows.push_back(static_cast<size_t>(
          std::lower_bound(at.begin(), at.end(), w + 1s) - std::lower_bound(at.begin(), at.end(), w)));
  }
  double worst = 0;
  std::string listed;
  for (size_t w : windows) {
    worst = std::max(worst, std::abs(static_cast<double>(w) - a.rate) / a.rate * 100);
    listed += (listed.empty() ? "" : ",") + std::to_string(w);
  }
  std::cout << "{\"peer\":\"delayq-" << a.backend << "\",\"workload\":\"rate\",\"jobs\":" << n
            << ",\"received\":" << at.size() << ",\"run_s\":" << num(run_s)
            << ",\"windows\":[" << listed << "],\"worst_window_pct\":" << num(worst) << server
            << ",\"params\":{\"rate_per_s\":" << count << ",\"burst\":" << a.burst
            << ",\"consumers\":" << a.consumers
            << (a.backend == "rocksdb" ? sync_params(a) : std::string()) << ",\"shards\":"
            << a.shards << "}}" << std::endl;
  opened.reset();
  if (redis) redis->cleanup();
  if (at.size() != n) {
    std::cerr << "time limit: received " << at.size() << " of " << n << "\n";
    return 1;
  }
  if (windows.empty() || worst > 2.0) {
    std::cerr << (windows.empty() ? std::string("no whole 1-s window after the burst")
                                  : "a window is " + num(worst) + " % off the limit") << "\n";
    return 1;
  }
  return 0;
}

}  // namespace delayq::bench
