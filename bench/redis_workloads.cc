// The Redis workloads of delayq-bench (bench/README.md): redis-memory (what a pending job costs
// the server) and wheel-vs-zset (one operation in-process against one round trip). W1 on
// --backend redis is w1.cc's.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "delayq/timing_wheel.h"
#include "delayq_bench.h"
#include "redis_run.h"
#include "report.h"

namespace delayq::bench {

using namespace std::chrono_literals;

// redis-memory: what a pending job costs the server. used_memory (INFO memory) before and after
// pushing N jobs due in an hour (64-byte bodies, 6-byte ids, one topic), divided by N. Beside
// it, the same N ids as bare members of one sorted set (ZADD id score): the floor any
// ZSET-based delay queue pays.
int run_redis_memory(const Args& a) {
  RedisRun run(a, "mem");
  auto q = run.open();
  if (!q) RedisRun::die(q.status().to_string());
  const std::string body(64, 'x');
  auto ids = [&](size_t i) {
    std::string id = std::to_string(i);
    return std::string(6 - std::min<size_t>(6, id.size()), '0') + id;
  };
  const double before = run.info("memory", "used_memory");
  for (size_t i = 0; i < a.jobs; i += 1000) {
    std::vector<delayq::JobSpec> specs;
    for (size_t k = i; k < std::min(a.jobs, i + 1000); ++k)
      specs.push_back({.topic = "mem", .id = ids(k), .delay = 1h, .body = body});
    for (auto& r : (*q)->push_batch(std::move(specs)))
      if (!r) RedisRun::die(r.status().to_string());
  }
  const double after = run.info("memory", "used_memory");
  q->reset();
  run.cleanup();

  auto c = run.connect();
  const std::string zkey = "{dq:" + run.queue() + ":zset}";
  const double zbefore = run.info("memory", "used_memory");
  std::vector<std::string> hold;
  for (size_t i = 0; i < a.jobs; i += 1000) {
    std::vector<std::vector<std::string_view>> cmds;
    hold.clear();
    for (size_t k = i; k < std::min(a.jobs, i + 1000); ++k) {
      hold.push_back(std::to_string(1700000000000000 + k * 997));
      hold.push_back(ids(k));
    }
    for (size_t h = 0; h < hold.size(); h += 2) cmds.push_back({"ZADD", zkey, hold[h], hold[h + 1]});
    if (!c->call_many(cmds)) RedisRun::die("ZADD failed");
  }
  const double zafter = run.info("memory", "used_memory");
  (void)c->call({"DEL", zkey});
  std::cout << "{\"peer\":\"delayq-redis\",\"workload\":\"redis-memory\",\"jobs\":" << a.jobs
            << ",\"used_memory_before\":" << static_cast<uint64_t>(before)
            << ",\"used_memory_after\":" << static_cast<uint64_t>(after)
            << ",\"bytes_per_job\":" << num((after - before) / a.jobs)
            << ",\"zset_bytes_per_entry\":" << num((zafter - zbefore) / a.jobs)
            << ",\"params\":{\"body_bytes\":64,\"id_bytes\":6,\"shards\":" << a.shards
            << run.server_params() << "}}" << std::endl;
  return 0;
}

// wheel-vs-zset: the cost of one schedule and one claim, in-process against Redis.
//   wheel_schedule / wheel_fire: delayq::TimingWheel, N entries due uniformly over 5000 ticks,
//     then advance() over all of them (cost per fired entry). One thread, no locks.
//   ping: one round trip, the floor under every Redis figure below.
//   zadd / zpopmin: a bare sorted set, one command per round trip; *_pipelined: 100 per round
//     trip (mostly the server's own cost).
//   push_script: Queue::push of a job due in a moment (the push script: a ZADD plus the job's
//     record, body, counters); push_script_batch100: push_batch of 100.
//   claim_script: Queue::reserve of a due job (the claim script, which also moves due jobs from
//     the delayed set to the ready line); ack_script: Queue::ack.
// All Redis calls from one client thread on one connection.
int run_wheel_vs_zset(const Args& a) {
  const size_t n = a.jobs;
  std::map<std::string, double> ns;
  auto per_op = [&](const char* name, size_t ops, auto&& body) {
    const Steady::time_point t0 = Steady::now();
    body();
    ns[name] = std::chrono::duration<double, std::nano>(Steady::now() - t0).count() / ops;
  };

  {
    std::mt19937_64 rng(a.seed);
    std::vector<uint64_t> due(n);
    for (auto& d : due) d = 1 + rng() % 5000;
    delayq::TimingWheel wheel(0);
    per_op("wheel_schedule", n, [&] {
      for (size_t i = 0; i < n; ++i) wheel.schedule(due[i], i);
    });
    uint64_t sum = 0;
    per_op("wheel_fire", n, [&] {
      wheel.advance(5001, [&](uint64_t payload, uint64_t) { sum += payload; });
    });
    if (sum != n * (n - 1) / 2) RedisRun::die("the wheel lost entries");
  }

  RedisRun run(a, "zset");
  auto c = run.connect();
  auto must = [](auto&& r) {
    if (!r) RedisRun::die(r.status().to_string());
    return std::move(*r);
  };
  const std::string zkey = "{dq:" + run.queue() + ":zset}";
  std::vector<std::string> score(n), member(n);
  std::mt19937_64 rng(a.seed);
  for (size_t i = 0; i < n; ++i) {
    score[i] = std::to_string(1700000000000000 + rng() % 5000000);
    member[i] = std::to_string(i);
  }
  per_op("ping", n, [&] {
    for (size_t i = 0; i < n; ++i) must(c->call({"PING"}));
  });
  per_op("zadd", n, [&] {
    for (size_t i = 0; i < n; ++i) must(c->call({"ZADD", zkey, score[i], member[i]}));
  });
  per_op("zpopmin", n, [&] {
    for (size_t i = 0; i < n; ++i) must(c->call({"ZPOPMIN", zkey}));
  });
  per_op("zadd_pipelined", n, [&] {
    for (size_t i = 0; i < n; i += 100) {
      std::vector<std::vector<std::string_view>> cmds;
      for (size_t k = i; k < std::min(n, i + 100); ++k) cmds.push_back({"ZADD", zkey, score[k], member[k]});
      must(c->call_many(cmds));
    }
  });
  per_op("zpopmin_pipelined", n, [&] {
    for (size_t i = 0; i < n; i += 100) {
      std::vector<std::vector<std::string_view>> cmds(std::min<size_t>(100, n - i), {"ZPOPMIN", zkey});
      must(c->call_many(cmds));
    }
  });
  (void)c->call({"UNLINK", zkey});

  Args one = a;
  one.consumers = 1;
  one.producers = 1;
  one.connections = 1;
  RedisRun qrun(one, "zsetq");
  auto q = must(qrun.open(1));
  const std::string body(64, 'x');
  // Every job is due 2 s after the first push: by the time the claims start, all are due.
  const delayq::TimePoint due = delayq::SystemClock::instance().now() + 2s;
  per_op("push_script", n, [&] {
    for (size_t i = 0; i < n; ++i)
      must(q->push({.topic = "z", .id = "a" + member[i], .due_at = due, .body = body}));
  });
  per_op("push_script_batch100", n, [&] {
    for (size_t i = 0; i < n; i += 100) {
      std::vector<delayq::JobSpec> specs;
      for (size_t k = i; k < std::min(n, i + 100); ++k)
        specs.push_back({.topic = "z", .id = "b" + member[k], .due_at = due, .body = body});
      for (auto& r : q->push_batch(std::move(specs))) must(r);
    }
  });
  while (delayq::SystemClock::instance().now() < due + 10ms) std::this_thread::sleep_for(10ms);
  std::vector<delayq::Token> tokens;
  tokens.reserve(2 * n);
  per_op("claim_script", 2 * n, [&] {
    for (size_t i = 0; i < 2 * n; ++i) tokens.push_back(must(q->reserve("z", 0ms)).token);
  });
  per_op("ack_script", 2 * n, [&] {
    for (const auto& t : tokens)
      if (auto s = q->ack(t); !s.ok()) RedisRun::die(s.to_string());
  });
  q.reset();
  qrun.cleanup();

  std::cout << "{\"peer\":\"delayq-redis\",\"workload\":\"wheel-vs-zset\",\"jobs\":" << n
            << ",\"ns_per_op\":{";
  bool first = true;
  for (const char* k : {"wheel_schedule", "wheel_fire", "ping", "zadd", "zpopmin",
                        "zadd_pipelined", "zpopmin_pipelined", "push_script",
                        "push_script_batch100", "claim_script", "ack_script"}) {
    std::cout << (first ? "" : ",") << "\"" << k << "\":" << num(ns[k]);
    first = false;
  }
  std::cout << "},\"ratios\":{\"push_script_vs_zadd\":" << num(ns["push_script"] / ns["zadd"])
            << ",\"claim_script_vs_zpopmin\":" << num(ns["claim_script"] / ns["zpopmin"])
            << ",\"zadd_vs_wheel_schedule\":" << num(ns["zadd"] / ns["wheel_schedule"])
            << ",\"zpopmin_vs_wheel_fire\":" << num(ns["zpopmin"] / ns["wheel_fire"])
            << ",\"push_script_vs_wheel_schedule\":" << num(ns["push_script"] / ns["wheel_schedule"])
            << ",\"claim_script_vs_wheel_fire\":" << num(ns["claim_script"] / ns["wheel_fire"])
            << "},\"params\":{\"body_bytes\":64,\"wheel_span_ticks\":5000,\"pipeline\":100"
            << run.server_params() << "}}" << std::endl;
  return 0;
}

}  // namespace delayq::bench
