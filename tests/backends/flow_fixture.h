// The fixture of the flow-control and browsing suites (flow_*_test.cc): every backend on a
// ManualClock, so that a rate, a lease or a page can be checked at exact instants.
//
// Backends (the test name's suffix):
//  - Memory:  Engine::open, one shard.
//  - Durable: open_store in a fresh temporary directory, Sync::none.
//  - Tiered:  the same with a disk tier whose horizon is 1 min: jobs due later live on disk until
//             shortly before their due time.
//  - Http:    delayq::open_http to a delayqd server run in this process (run_server, stopped
//             through ServerOptions::stop) over a one-shard Engine on the fixture's clock: the
//             HTTP client Queue, the daemon's routes and the wire end to end. Delays, leases and
//             rates run on the ManualClock; a due_at, though, is checked by the client and the
//             daemon against the system clock (HTTP carries unix times), so tests that push with
//             a due_at far from the ManualClock's 2026-01-01 do not fit this backend.
//  - Redis:   tests/backends/flow_redis.h, in the suites that link delayq::redis.
// Each test gets a backend of its own; reopen() closes the queue and opens it again on the same
// directory (the memory engine starts empty: kept_jobs() says whether a reopen keeps them).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "delayq/clock.h"
#include "delayq/engine.h"
#include "delayq/http.h"
#include "delayq/store.h"
#include "inprocess_daemon.h"
#include "temp_dir.h"

namespace delayq::flow {

using namespace std::chrono_literals;

// 2026-01-01T00:00:00Z plus a little: a whole-microsecond instant every backend stores exactly.
inline TimePoint start_time() { return TimePoint(1767225600s) + 20min + 30s; }

class Backend {
 public:
  virtual ~Backend() = default;
  // Opens the queue on `clock` (the same store every time, for backends that keep jobs).
  virtual Result<std::unique_ptr<Queue>> open(ManualClock& clock, const Limits& limits) = 0;
  virtual bool keeps_jobs() const = 0;
  virtual bool tiered() const { return false; }
  // The smallest step of time the backend keeps: instants and durations are rounded up to it.
  virtual Duration resolution() const { return Duration(1); }
  // Whether a token bucket and the throttled counts are kept across reopen() (else the bucket
  // starts full and the counts at 0).
  virtual bool bucket_survives_reopen() const { return false; }
  // Whether a topic's jobs are handed out in its order (false: a queue of several shards,
  // which orders each shard's jobs only).
  virtual bool keeps_topic_order() const { return true; }
  // Whether each call is a round trip (Redis, HTTP): the long walks of the clock take longer
  // steps there.
  virtual bool remote() const { return false; }
};

struct BackendKind {
  std::string name;
  std::function<std::unique_ptr<Backend>()> make;
};

// gtest prints the backend's name, not its bytes.
inline void PrintTo(const BackendKind& b, std::ostream* os) { *os << b.name; }

inline Limits flow_limits() {
  return Limits{.max_delay = 24h * 400, .max_body_bytes = 4096, .default_ttr = 30s};
}

// A one-shard in-memory engine on `clock`.
inline Result<std::unique_ptr<Queue>> open_engine(ManualClock& clock, const Limits& l) {
  EngineOptions o;
  o.clock = &clock;
  o.limits = l;
  o.seed = 7;
  auto r = Engine::open(o);
  if (!r.ok()) return r.status();
  return std::unique_ptr<Queue>(std::move(r).value());
}

class MemoryBackend : public Backend {
 public:
  Result<std::unique_ptr<Queue>> open(ManualClock& clock, const Limits& l) override {
    return open_engine(clock, l);
  }
  bool keeps_jobs() const override { return false; }
};

class StoreBackend : public Backend {
 public:
  explicit StoreBackend(bool tiered) : tiered_(tiered) {}
  Result<std::unique_ptr<Queue>> open(ManualClock& clock, const Limits& l) override {
    if (dir_.path().empty()) return Status(Errc::io_error, "no temporary directory");
    StoreOptions o;
    o.dir = dir_.path() + "/store";
    o.sync = Sync::none;
    if (tiered_) o.horizon = 1min;
    o.engine.clock = &clock;
    o.engine.limits = l;
    o.engine.seed = 7;
    auto r = open_store(o);
    if (!r.ok()) return r.status();
    return std::unique_ptr<Queue>(std::move(r).value());
  }
  bool keeps_jobs() const override { return true; }
  bool tiered() const override { return tiered_; }

 private:
  bool tiered_;
  testing::TempDir dir_{"delayq-flow"};
};

class HttpBackend : public Backend {
 public:
  bool remote() const override { return true; }
  Result<std::unique_ptr<Queue>> open(ManualClock& clock, const Limits& l) override {
    daemon_.reset();  // a reopen: the last daemon drains and closes its engine, as a restart
    auto engine = open_engine(clock, l);
    if (!engine.ok()) return engine.status();
    engine_ = std::move(engine).value();
    http::ApiOptions api;
    api.max_delay = l.max_delay;
    api.max_job_bytes = l.max_body_bytes;
    api.default_pop_timeout = Duration::zero();
    daemon_ = std::make_unique<testing::InProcessDaemon>(*engine_, api);
    if (daemon_->url().empty())
      return Status(Errc::unavailable, "the in-process delayqd did not listen");
    HttpOptions h;
    h.limits = l;
    return open_http(daemon_->url(), h);
  }
  bool keeps_jobs() const override { return false; }
  ~HttpBackend() override { daemon_.reset(); }

 private:
  std::unique_ptr<Queue> engine_;
  std::unique_ptr<testing::InProcessDaemon> daemon_;  // declared after the engine it serves
};

inline std::vector<BackendKind> backends() {
  return {
      {"Memory", [] { return std::make_unique<MemoryBackend>(); }},
      {"Durable", [] { return std::make_unique<StoreBackend>(false); }},
      {"Tiered", [] { return std::make_unique<StoreBackend>(true); }},
      {"Http", [] { return std::make_unique<HttpBackend>(); }},
  };
}

inline std::string backend_name(const ::testing::TestParamInfo<BackendKind>& info) {
  return info.param.name;
}

class Flow : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    backend_ = GetParam().make();
    open();
  }
  void TearDown() override {
    if (q_) q_->close();
    q_.reset();
    // Before clock_ goes: a backend may still run on it (Http's in-process daemon closes its
    // engine, which leaves the clock, when it stops).
    backend_.reset();
  }
  void open() {
    auto q = backend_->open(clock_, flow_limits());
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    q_ = std::move(q).value();
  }
  // Closes the queue and opens it again (same directory, same clock).
  void reopen() {
    q_->close();
    q_.reset();
    open();
  }
  Queue& q() { return *q_; }
  TimePoint now() const { return clock_.now(); }
  // `d` after start_time() (a whole microsecond) as the backend keeps it: rounded up to its
  // resolution(), so that nothing is due early.
  Duration as_kept(Duration d) const {
    const Duration step = backend_->resolution();
    return (d + step - Duration(1)) / step * step;
  }
  void advance(Duration d) { clock_.advance(d); }

  std::string push(JobSpec spec) {
    auto r = q_->push(std::move(spec));
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : std::string();
  }
  // The id of the job a non-blocking reserve hands out now, or "" when none (any error).
  std::string take(const std::vector<std::string>& topics) {
    auto d = q_->reserve(topics, 0ms);
    return d.ok() ? d->id : std::string();
  }
  std::string take(const std::string& topic) { return take(std::vector<std::string>{topic}); }
  // A job handed out (`got`) against the one the topic's order gives (`want`): the same, or on a
  // backend that keeps no order across its shards, any job.
  void expect_next(const std::string& got, const std::string& want) {
    if (backend_->keeps_topic_order())
      EXPECT_EQ(got, want);
    else
      EXPECT_FALSE(got.empty()) << "no job handed out (" << want << " in the topic's order)";
  }

  std::unique_ptr<Backend> backend_;
  ManualClock clock_{start_time()};
  std::unique_ptr<Queue> q_;
};

}  // namespace delayq::flow

// In each flow_*_test.cc, after its tests:
//   INSTANTIATE_TEST_SUITE_P(Backends, Flow, ::testing::ValuesIn(delayq::flow::backends()),
//                            delayq::flow::backend_name);
