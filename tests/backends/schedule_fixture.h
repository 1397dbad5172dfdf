// The fixture of the schedule suites (schedule_engine_test.cc, schedule_store_test.cc,
// schedule_redis_test.cc): a queue on a ManualClock, the in-memory engine, the durable store
// (reopen() keeps the store's directory) with or without a disk tier (Tiered: a horizon of 1 min,
// so that a job due later lives on disk), Redis on 1 or 4 shards (a private redis-server per
// binary, a queue per test; reopen() opens the same queue), or the HTTP client
// (delayq::open_http) to a delayqd run in this process over an in-memory engine on the same
// clock, so that the schedule calls go through the daemon's routes and the wire while
// occurrences fire as the test moves time; and helpers that walk a schedule
// occurrence by occurrence.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "../unit/schedule_times.h"
#include "delayq/engine.h"
#include "delayq/http.h"
#include "delayq/redis.h"
#include "delayq/store.h"
#include "inprocess_daemon.h"
#include "redis_server.h"
#include "temp_dir.h"

namespace delayq::schedule_test {

using namespace std::chrono_literals;

inline Limits limits() { return Limits{.max_delay = 24h * 400, .max_body_bytes = 4096, .default_ttr = 30s}; }

struct Backend {
  std::string name;
  bool durable;
  bool tiered = false;
  uint32_t redis_shards = 0;  // 0: not Redis
  bool http = false;          // open_http to an in-process delayqd over a memory engine
  size_t engine_shards = 1;   // the in-memory engine and the durable store: EngineOptions::shards
};

// The binary's redis-server, started by the first Redis test, killed when the binary exits.
inline testing::RedisServer& redis_server() {
  static testing::RedisServer server;
  return server;
}
inline int next_redis_queue() {
  static std::atomic<int> n{0};
  return n.fetch_add(1);
}
inline void PrintTo(const Backend& b, std::ostream* os) { *os << b.name; }

class ScheduleEngine : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    clock.set(utc(2025, 12, 31, 12));
    queue_name = "sched" + std::to_string(next_redis_queue());
    reopen();
  }
  void reopen() {
    q.reset();
    if (GetParam().redis_shards > 0) {
      auto r = open_redis(redis_options(clock));
      ASSERT_TRUE(r.ok()) << r.status().message();
      q = std::move(r).value();
    } else if (GetParam().http) {
      daemon.reset();  // as a restart: the last daemon closes and its engine goes
      engine.reset();
      open_memory(engine);
      http::ApiOptions api;
      api.max_delay = limits().max_delay;
      api.max_job_bytes = limits().max_body_bytes;
      api.default_pop_timeout = Duration::zero();
      daemon = std::make_unique<testing::InProcessDaemon>(*engine, api);
      ASSERT_FALSE(daemon->url().empty()) << "the in-process delayqd did not listen";
      HttpOptions h;
      h.limits = limits();
      auto r = open_http(daemon->url(), h);
      ASSERT_TRUE(r.ok()) << r.status().message();
      q = std::move(r).value();
    } else if (GetParam().durable) {
      ASSERT_FALSE(dir.path().empty());
      auto r = open_store(store_options());
      ASSERT_TRUE(r.ok()) << r.status().message();
      q = std::move(r).value();
    } else {
      open_memory(q);
    }
  }
  // An in-memory engine on the test's clock, into `into`.
  void open_memory(std::unique_ptr<Queue>& into) {
    EngineOptions o;
    o.clock = &clock;
    o.limits = limits();
    o.shards = GetParam().engine_shards;
    auto r = Engine::open(o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    into = std::move(r).value();
  }
  // The durable store's options: in `sub` of the test's directory, on the test's clock.
  StoreOptions store_options(const std::string& sub = "store") {
    StoreOptions o;
    o.dir = dir.sub(sub);
    o.sync = Sync::none;
    o.engine.clock = &clock;
    o.engine.limits = limits();
    o.engine.shards = GetParam().engine_shards;
    if (GetParam().tiered) o.horizon = 1min;
    return o;
  }
  // A client of the test's Redis queue, on `c`.
  RedisOptions redis_options(Clock& c) {
    EXPECT_TRUE(redis_server().started()) << redis_server().log();
    RedisOptions o;
    o.url = redis_server().url();
    o.queue = queue_name;
    o.limits = limits();
    o.clock = &c;
    o.shards = GetParam().redis_shards;
    return o;
  }
  ScheduleSpec spec(std::string id, std::string rule, std::string zone = "UTC") {
    ScheduleSpec s;
    s.id = std::move(id);
    s.rule = std::move(rule);
    s.zone = std::move(zone);
    s.job.topic = "t";
    s.job.body = "b";
    return s;
  }
  ScheduleInfo info(std::string_view id) {
    auto r = q->get_schedule(id);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : ScheduleInfo{};
  }
  bool has_job(std::string_view sched, TimePoint o) {
    auto r = q->get(occurrence_job_id(sched, o));
    if (r.ok()) {
      EXPECT_EQ(r->due, o) << occurrence_job_id(sched, o);
      EXPECT_EQ(r->topic, "t");
      EXPECT_EQ(r->body, "b");
    }
    return r.ok();
  }
  // Moves the clock occurrence by occurrence until `until`, checking that each occurrence's job
  // appears at its instant, not a second before, and returns the instants fired.
  std::vector<TimePoint> walk(std::string_view id, TimePoint until) {
    std::vector<TimePoint> fired;
    for (;;) {
      const ScheduleInfo i = info(id);
      if (i.next.empty() || i.next[0] >= until) break;
      const TimePoint o = i.next[0];
      if (o - 1s > clock.now()) {
        clock.set(o - 1s);
        EXPECT_FALSE(has_job(id, o)) << "early: " << occurrence_job_id(id, o);
      }
      clock.set(o);
      EXPECT_TRUE(has_job(id, o)) << "missing: " << occurrence_job_id(id, o);
      fired.push_back(o);
      if (::testing::Test::HasFailure()) break;
    }
    return fired;
  }
  // As walk(), for several schedules at once: the clock goes to each next instant of any of them
  // in turn (a schedule's next instant asked again only after it fired). Returns each schedule's
  // instants fired, in the order of `ids`.
  std::vector<std::vector<TimePoint>> walk_all(const std::vector<std::string>& ids,
                                               TimePoint until) {
    std::vector<std::vector<TimePoint>> fired(ids.size());
    std::vector<TimePoint> next(ids.size());
    const auto ask = [&](size_t k) {
      const ScheduleInfo i = info(ids[k]);
      next[k] = !i.next.empty() && i.next[0] < until ? i.next[0] : TimePoint::max();
    };
    for (size_t k = 0; k < ids.size(); ++k) ask(k);
    for (;;) {
      const TimePoint o = *std::min_element(next.begin(), next.end());
      if (o == TimePoint::max() || ::testing::Test::HasFailure()) break;
      if (o - 1s > clock.now()) {
        clock.set(o - 1s);
        for (size_t k = 0; k < ids.size(); ++k)
          if (next[k] == o) {
            EXPECT_FALSE(has_job(ids[k], o)) << "early: " << ids[k];
          }
      }
      clock.set(o);
      for (size_t k = 0; k < ids.size(); ++k) {
        if (next[k] != o) continue;
        EXPECT_TRUE(has_job(ids[k], o)) << "missing: " << occurrence_job_id(ids[k], o);
        fired[k].push_back(o);
        ask(k);
      }
    }
    return fired;
  }
  // Redis on several shards, and the HTTP client over a memory engine: variants of backends the
  // other parameters cover whole, where every call is a round trip (several per occurrence
  // walked); the long walks are shorter there.
  bool variant() const { return GetParam().redis_shards > 1 || GetParam().http; }
  // Jobs in topic "t", by id.
  std::set<std::string> jobs_in_t() {
    std::set<std::string> out;
    for (JobState st : {JobState::delayed, JobState::ready, JobState::reserved}) {
      std::string cursor;
      do {
        auto page = q->list_jobs("t", st, 1000, cursor);
        EXPECT_TRUE(page.ok()) << page.status().message();
        if (!page.ok()) return out;
        for (const JobInfo& j : page->jobs) out.insert(j.id);
        cursor = page->cursor;
      } while (!cursor.empty());
    }
    return out;
  }

  ManualClock clock;
  std::string queue_name;
  testing::TempDir dir{"delayq-sched"};
  // Http only: the engine the daemon serves, then the daemon (gone before its engine), then q.
  std::unique_ptr<Queue> engine;
  std::unique_ptr<testing::InProcessDaemon> daemon;
  std::unique_ptr<Queue> q;
};

}  // namespace delayq::schedule_test
