// W1 of delayq-bench (bench/README.md): a delay queue end to end, on a queue (memory, rocksdb,
// redis: run_w1) and on its lateness baseline, one Asio steady_timer per job (run_w1_asio). The
// heap baseline's W1 is in heap_scheduler.cc.
#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "delayq/engine.h"
#include "delayq/store.h"
#include "delayq_bench.h"
#include "redis_run.h"
#include "report.h"
#include "server_meter.h"

namespace delayq::bench {

using namespace std::chrono_literals;

EngineOptions engine_options(const Args& a) {
  delayq::EngineOptions opt;
  opt.tick = std::chrono::milliseconds(a.tick_ms);
  opt.shards = a.shards;
  opt.seed = a.seed;
  opt.expected_jobs = a.expected_jobs;
  if (a.slack_us >= 0) opt.timer_slack = std::chrono::nanoseconds(static_cast<int64_t>(a.slack_us * 1000));
  return opt;
}

Result<std::unique_ptr<Queue>> open_run_queue(const Args& a, const std::string& dir,
                                              std::unique_ptr<RedisRun>& redis,
                                              const std::string& what) {
  if (a.backend == "redis") {
    redis = std::make_unique<RedisRun>(a, what);
    return redis->open();
  }
  const delayq::EngineOptions opt = engine_options(a);
  Result<std::unique_ptr<Engine>> e = Status(Errc::invalid_argument, "");
  if (a.backend == "rocksdb") {
    delayq::StoreOptions so;
    so.dir = dir;
    so.sync = *delayq::parse_sync(a.sync);
    so.sync_batch_ops = a.sync_batch_ops;
    so.sync_interval = sync_interval(a);
    so.engine = opt;
    e = delayq::open_store(so);
  } else {
    e = delayq::Engine::open(opt);
  }
  if (!e) return e.status();
  return std::unique_ptr<delayq::Queue>(std::move(*e));
}

std::unique_ptr<Queue> open_run_queue_or_say(const Args& a, const std::string& dir,
                                             std::unique_ptr<RedisRun>& redis,
                                             const std::string& what) {
  auto q = open_run_queue(a, dir, redis, what);
  if (q) return std::move(*q);
  std::cerr << q.status().to_string() << "\n";
  return nullptr;
}

int run_w1(const Args& a) {
  const delayq::EngineOptions opt = engine_options(a);
  const StoreDir dir(a.backend == "rocksdb" ? a.dir : "/");
  std::unique_ptr<RedisRun> redis;
  auto q = open_run_queue(a, dir.path(), redis, "w1");
  if (!q) {
    std::cerr << q.status().to_string() << "\n";
    return 2;
  }
  delayq::Queue& engine = **q;
  const size_t n = a.jobs;
  const std::vector<Duration> delay = random_delays(a);
  std::vector<delayq::TimePoint> pushed_at(n);
  std::vector<double> lateness_ms(n, 0);
  std::vector<std::atomic<uint8_t>> got(n);
  std::atomic<size_t> received{0}, duplicates{0};
  std::atomic<bool> stop{false};
  const std::string body(64, 'x');
  const std::string topic = "w1";
  auto& sys = delayq::SystemClock::instance();

  std::atomic<int64_t> last_ack_ns{0};
  // --priorities: each delivery's place in the hand-out order, to count inversions at the end.
  std::vector<Handout> handouts(a.priorities ? n : 0);
  // A delivery received: its lateness, and whether it came before.
  auto receive = [&](const delayq::Delivery& d) {
    const delayq::TimePoint now = sys.now();
    const size_t i = std::stoul(d.id);
    if (a.priorities) handouts[i] = handout_of(d, priority_of(a, i));
    lateness_ms[i] = std::chrono::duration<double, std::milli>(now - (pushed_at[i] + delay[i])).count();
    if (got[i].exchange(1)) duplicates.fetch_add(1);
  };
  auto acked = [&] {
    last_ack_ns.store(Steady::now().time_since_epoch().count());
    if (received.fetch_add(1) + 1 == n) stop.store(true);
  };
  std::vector<std::thread> consumers;
  delayq::Consumer consumer;
  if (a.consume) {
    // consume() with its default batching; a job counts as acknowledged when its handler returns
    // ack (consume() sends the acks of a batch together, at most about a millisecond later).
    consumer = engine.consume(topic, [&](const delayq::Delivery& d) {
      receive(d);
      acked();
      return delayq::HandlerResult::ack();
    }, a.consumers);
  }
  for (size_t c = 0; c < (a.consume ? 0 : a.consumers); ++c) {
    consumers.emplace_back([&] {
      while (!stop.load()) {
        delayq::Result<delayq::Delivery> d = engine.reserve(topic, 100ms);
        if (!d) continue;
        receive(*d);
        if (!engine.ack(d->token).ok()) continue;
        acked();
      }
    });
  }

  // The servers' time from here to the last acknowledgement (server_meter.h).
  std::unique_ptr<ServerMeter> meter;
  if (redis) {
    meter = std::make_unique<ServerMeter>(a.redis, a.server_profile);
    meter->start();
  }
  const Steady::time_point start = Steady::now();
  if (a.batch == 0) {
    std::atomic<bool> failed{false};
    auto produce = [&](size_t first, size_t step) {
      for (size_t i = first; i < n && !failed.load(); i += step) {
        pushed_at[i] = sys.now();
        delayq::Result<std::string> r =
            engine.push({.topic = topic, .id = std::to_string(i), .delay = delay[i],
                         .ttr = a.priorities ? kHandoutTtr : Duration(0), .body = body,
                         .priority = priority_of(a, i)});
        if (!r) {
          std::cerr << "push failed: " << r.status().to_string() << "\n";
          failed.store(true);
        }
      }
    };
    std::vector<std::thread> producers;
    for (size_t p = 1; p < a.producers; ++p) producers.emplace_back(produce, p, a.producers);
    produce(0, a.producers);
    for (auto& t : producers) t.join();
    if (failed.load()) return 1;
  } else {
    for (size_t i = 0; i < n;) {
      std::vector<delayq::JobSpec> specs;
      const size_t end = std::min(n, i + a.batch);
      const delayq::TimePoint t = sys.now();
      for (size_t k = i; k < end; ++k) {
        pushed_at[k] = t;
        specs.push_back({.topic = topic, .id = std::to_string(k), .delay = delay[k],
                         .ttr = a.priorities ? kHandoutTtr : Duration(0), .body = body,
                         .priority = priority_of(a, k)});
      }
      for (auto& r : engine.push_batch(std::move(specs)))
        if (!r) {
          std::cerr << "push failed: " << r.status().to_string() << "\n";
          return 1;
        }
      i = end;
    }
  }
  const double push_s = seconds(Steady::now() - start);

  const Steady::time_point limit = start + std::chrono::duration_cast<Steady::duration>(
                                               std::chrono::duration<double>(a.time_limit_s));
  while (!stop.load() && Steady::now() < limit) std::this_thread::sleep_for(5ms);
  stop.store(true);
  for (auto& t : consumers) t.join();
  consumer.stop();
  const size_t got_n = received.load();
  std::string server;
  if (meter) {
    const ServerTime t = meter->finish(got_n);
    std::cerr << "delayq-bench: " << server_time_text(t);
    server = ",\"server\":" + server_time_json(t);
  }
  const double e2e = got_n ? seconds(Steady::time_point(Steady::duration(last_ack_ns.load())) - start) : 0;
  std::vector<double> lat;
  lat.reserve(got_n);
  for (size_t i = 0; i < n; ++i)
    if (got[i].load()) lat.push_back(lateness_ms[i]);

  std::cout << "{\"peer\":\"delayq-" << a.backend << "\",\"workload\":\"W1\",\"jobs\":" << n
            << ",\"push_per_s\":" << num(n / push_s) << ",\"end_to_end_s\":" << num(e2e)
            << ",\"lateness_ms\":" << summary_json(lat) << ",\"received\":" << got_n
            << ",\"duplicates\":" << duplicates.load();
  uint64_t inversions = 0;
  if (a.priorities) {
    inversions = count_inversions(handouts, got);
    std::cout << ",\"inversions\":" << inversions << ",\"priorities\":" << a.priorities;
  }
  std::cout << server;
  std::cout << ",\"params\":{\"delay_max_s\":"
            << num(a.delay_max_s) << ",\"consumers\":" << a.consumers << ",\"producers\":"
            << a.producers;
  if (redis) {
    std::cout << ",\"shards\":" << a.shards << ",\"batch\":" << a.batch
              << ",\"connections\":" << redis->connections() << ",\"claim_batch\":"
              << a.claim_batch << ",\"replicas_to_ack\":" << a.replicas_to_ack
              << ",\"consume\":" << a.consume << ",\"server_profile\":"
              << a.server_profile << redis->server_params() << "}}"
              << std::endl;
  } else {
    std::cout << (a.backend == "rocksdb" ? sync_params(a) : ",\"sync\":\"none\"")
              << ",\"tick_ms\":" << a.tick_ms << ",\"shards\":" << a.shards
              << ",\"batch\":" << a.batch << ",\"timer_slack_us\":"
              << std::chrono::duration<double, std::micro>(opt.timer_slack).count()
              << ",\"expected_jobs\":" << a.expected_jobs << "}}" << std::endl;
  }
  q->reset();
  if (redis) redis->cleanup();
  if (got_n != n) {
    std::cerr << "time limit: received " << got_n << " of " << n << "\n";
    return 1;
  }
  if (inversions && a.shards == 1) {
    std::cerr << inversions << " deliveries were handed out while a more urgent job had been due"
              << " for over " << kInversionMargin.count() << " ms\n";
    return 1;
  }
  return 0;
}

// The baseline for W1 lateness: no queue at all, each job one boost::asio::steady_timer on one
// io_context run by `consumers` threads; a job is "received" when its handler runs. Whatever
// lateness this shows is the machine's own (timer wake-ups, scheduling, VM stalls).
int run_w1_asio(const Args& a) {
  namespace asio = boost::asio;
  const size_t n = a.jobs;
  const std::vector<Duration> delay = random_delays(a);
  std::vector<delayq::TimePoint> pushed_at(n);
  std::vector<double> lateness_ms(n, 0);
  std::vector<std::unique_ptr<asio::steady_timer>> timers(n);
  std::atomic<size_t> received{0};
  std::atomic<int64_t> last_ns{0};
  auto& sys = delayq::SystemClock::instance();
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (size_t c = 0; c < a.consumers; ++c) threads.emplace_back([&] { io.run(); });

  const Steady::time_point start = Steady::now();
  for (size_t i = 0; i < n; ++i) {
    pushed_at[i] = sys.now();
    timers[i] = std::make_unique<asio::steady_timer>(io, delay[i]);
    timers[i]->async_wait([&, i](const boost::system::error_code& ec) {
      if (ec) return;
      lateness_ms[i] =
          std::chrono::duration<double, std::milli>(sys.now() - (pushed_at[i] + delay[i])).count();
      last_ns.store(Steady::now().time_since_epoch().count());
      received.fetch_add(1);
    });
  }
  const double push_s = seconds(Steady::now() - start);
  const Steady::time_point limit = start + std::chrono::duration_cast<Steady::duration>(
                                               std::chrono::duration<double>(a.time_limit_s));
  while (received.load() < n && Steady::now() < limit) std::this_thread::sleep_for(5ms);
  work.reset();
  io.stop();
  for (auto& t : threads) t.join();
  const size_t got = received.load();
  std::vector<double> lat(lateness_ms.begin(), lateness_ms.end());
  std::cout << "{\"peer\":\"asio-steady-timer\",\"workload\":\"W1\",\"jobs\":" << n
            << ",\"push_per_s\":" << num(n / push_s) << ",\"end_to_end_s\":"
            << num(seconds(Steady::time_point(Steady::duration(last_ns.load())) - start))
            << ",\"lateness_ms\":" << summary_json(lat) << ",\"received\":" << got
            << ",\"params\":{\"delay_max_s\":" << num(a.delay_max_s)
            << ",\"threads\":" << a.consumers << "}}" << std::endl;
  return got == n ? 0 : 1;
}

}  // namespace delayq::bench
