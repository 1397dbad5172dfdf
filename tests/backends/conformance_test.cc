// The conformance suite: every rule of the Queue contract (include/delayq/queue.h, the long form
// in docs/semantics.md), as one value-parameterized test suite run against each backend (each test
// is compiled once and run on every backend: "Backends/Conformance.<Test>/<Backend>"):
//
//  - Memory:  Engine::open on the system clock.
//  - Durable: open_store in a fresh temporary directory (Sync::none: a crash of the machine is not
//             what is tested here, and it keeps the suite fast).
//  - Tiered:  the same with a disk tier whose horizon is 20 ms (docs/tiered-store.md): nearly
//             every job not due at once lives only on disk until shortly before its due time,
//             so every rule is kept by disk-only jobs and across the boundary.
//  - Redis:   open_redis against one private redis-server per test binary (tests/support/redis_server.h),
//             each test on a queue of its own name so that no test sees another's jobs.
//  - DurableAlways, TieredAlways: Durable and Tiered under Sync::always, where every call waits
//             for its fsync (the store's default).
//  - Http:    open_http against a delayqd of this build, one per test (class Http below).
//
// Everything runs in real time with short delays, on machines that may be slow and shared. So no
// test asserts how soon something happened: only that it did not happen early (checked against
// the system clock, which the engine, the store and the Redis server all read) and that it did
// happen within a generous timeout. "Early" means before the due time the test computed itself:
// its own clock reading taken before the call that set the time (push, nack, reschedule, a
// reservation whose lease then ran out), plus the delay. The due time a queue reports is checked
// against that too, and never used as the bound: a queue that computed a wrong due time and
// delivered on it would otherwise pass. Instants that a test chooses are whole microseconds, the
// resolution of the Redis backend (docs/redis.md, "Time": it rounds due times up), so that exact
// due times compare equal on every backend; where a queue computes a time itself ("now + 250 ms")
// the check allows the one microsecond that Redis may round by.
//
// Kept whole over ~400 lines: one suite over every backend, one fixture and one list of backends,
// so that each rule is written once and run everywhere.
#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "common/rules.h"
#include "daemon_process.h"
#include "delayq/engine.h"
#include "delayq/http.h"
#include "delayq/redis.h"
#include "delayq/store.h"
#include "redis_server.h"
#include "reports.h"
#include "temp_dir.h"

namespace delayq {

// Readable failure messages (found by argument-dependent lookup, so in delayq itself).
static void PrintTo(JobState s, std::ostream* os) { *os << to_string(s); }
static void PrintTo(const TopicStats& s, std::ostream* os) {
  *os << "{delayed " << s.delayed << ", ready " << s.ready << ", reserved " << s.reserved
      << ", dead " << s.dead << "}";
}

namespace conformance {

using namespace std::chrono_literals;

// "Surely by then": the bound of every wait that normally takes milliseconds.
constexpr Duration kLong = 10s;
// What a backend may round a time it computes by (Redis: whole microseconds).
constexpr Duration kSlack = 1us;

TimePoint now() { return SystemClock::instance().now(); }

// `t` rounded up to a whole microsecond: an instant every backend stores exactly.
TimePoint whole_us(TimePoint t) { return std::chrono::ceil<std::chrono::microseconds>(t); }

int64_t ns(TimePoint t) { return t.time_since_epoch().count(); }

// lo <= t <= hi, give or take kSlack on either side.
::testing::AssertionResult Between(TimePoint t, TimePoint lo, TimePoint hi) {
  if (t >= lo - kSlack && t <= hi + kSlack) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "time " << ns(t) << " is not within [" << ns(lo) << ", " << ns(hi) << "] ("
         << (t < lo ? ns(lo) - ns(t) : ns(t) - ns(hi)) << " ns " << (t < lo ? "early" : "late")
         << ")";
}

// Queue limits, the same struct in every backend's options. Smaller than the library's
// defaults so that the limits can be tested without megabyte bodies; default_retry is the
// library's (exponential from 1 s, 10 attempts).
Limits test_limits() { return Limits{.max_delay = 1h, .max_body_bytes = 4096, .default_ttr = 30s}; }

EngineOptions engine_options(const Limits& l) {
  EngineOptions o;
  o.limits = l;
  o.seed = 7;
  return o;
}

template <class Q>
Result<std::unique_ptr<Queue>> as_queue(Result<std::unique_ptr<Q>> r) {
  if (!r.ok()) return r.status();
  return std::unique_ptr<Queue>(std::move(r).value());
}

// ---- the backends ----
//
// Each one: kName (the test name's suffix), kKeepsJobs (a closed queue's jobs are there again
// at the next open()), and open(limits). One backend object lives as long as one test; every
// open() of it reaches the same jobs, except for the memory engine, which starts empty each time.

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Result<std::unique_ptr<Queue>> open(const Limits& l) = 0;
};

class Memory : public Backend {
 public:
  static constexpr const char* kName = "Memory";
  static constexpr bool kKeepsJobs = false;
  Result<std::unique_ptr<Queue>> open(const Limits& l) override {
    return as_queue(Engine::open(engine_options(l)));
  }
};

template <bool kTiered, Sync kSync = Sync::none>
class DurableStore : public Backend {
 public:
  static constexpr const char* kName =
      kSync == Sync::always ? (kTiered ? "TieredAlways" : "DurableAlways")
                            : (kTiered ? "Tiered" : "Durable");
  static constexpr bool kKeepsJobs = true;
  Result<std::unique_ptr<Queue>> open(const Limits& l) override {
    if (dir_.path().empty())
      return Status(Errc::io_error, "could not create a temporary directory");
    StoreOptions o;
    o.dir = dir_.path();
    o.sync = kSync;
    if (kTiered) o.horizon = 20ms;
    o.engine = engine_options(l);
    return as_queue(open_store(o));
  }

 private:
  testing::TempDir dir_{"delayq-conformance"};
};
class Durable : public DurableStore<false> {};
class Tiered : public DurableStore<true> {};
// The same under Sync::always, where every call waits for its fsync (the group commit's other
// path: a call that finds a write in flight waits for the next one).
class DurableAlways : public DurableStore<false, Sync::always> {};
class TieredAlways : public DurableStore<true, Sync::always> {};

// One redis-server for the whole binary, started by the first test that needs it (a run filtered
// to the other backends starts none) and killed when the tests are over.
class SharedRedis : public ::testing::Environment {
 public:
  static testing::RedisServer& server() {
    std::lock_guard lock(mu_);
    if (!server_) server_ = std::make_unique<testing::RedisServer>();
    return *server_;
  }
  void TearDown() override {
    std::lock_guard lock(mu_);
    server_.reset();
  }

 private:
  static inline std::mutex mu_;
  static inline std::unique_ptr<testing::RedisServer> server_;
};
[[maybe_unused]] ::testing::Environment* const kSharedRedis =
    ::testing::AddGlobalTestEnvironment(new SharedRedis);

class Redis : public Backend {
 public:
  static constexpr const char* kName = "Redis";
  static constexpr bool kKeepsJobs = true;
  // A queue name no other test of this process uses: the tests share one server.
  Redis() : queue_("conf" + std::to_string(next_queue_.fetch_add(1))) {}

  Result<std::unique_ptr<Queue>> open(const Limits& l) override {
    testing::RedisServer& server = SharedRedis::server();
    if (!server.started()) {
      return Status(Errc::unavailable, "redis-server did not start: " + server.log());
    }
    RedisOptions o;
    o.url = server.url();
    o.queue = queue_;
    o.limits = l;
    o.seed = 7;
    return open_redis(o);
  }

 private:
  static inline std::atomic<int> next_queue_{0};
  std::string queue_;
};

// delayqd over HTTP (delayq/http.h): a daemon of this build per test, on a store of its own
// (--sync none), started at the first open() and restarted on the same store when a later open()
// asks for other limits (its --max-job-bytes, --max-delay and --default-ttr; the last two only
// when they are whole seconds). The default retry policy is the daemon's own; the client checks
// the test's limits too (HttpOptions::limits), so a push beyond the test's max_delay is refused
// as on every backend. A closed client's jobs are still in the daemon: it keeps jobs.
class Http : public Backend {
 public:
  static constexpr const char* kName = "Http";
  static constexpr bool kKeepsJobs = true;

  Result<std::unique_ptr<Queue>> open(const Limits& l) override {
    std::vector<std::string> args{"--listen", "127.0.0.1:0", "--store", dir_.sub("store"),
                                  "--sync", "none", "--max-job-bytes",
                                  std::to_string(l.max_body_bytes)};
    const auto whole_seconds = [&](const char* flag, Duration d) {
      if (d > Duration(0) && d % std::chrono::seconds(1) == Duration(0))
        args.insert(args.end(), {flag, std::to_string(d / std::chrono::seconds(1))});
    };
    whole_seconds("--max-delay", l.max_delay);
    whole_seconds("--default-ttr", l.default_ttr);
    if (port_ == 0 || args != args_) {
      if (daemon_.running()) {
        daemon_.signal(SIGTERM);
        if (!daemon_.wait(std::chrono::seconds(30))) daemon_.kill9();
      }
      port_ = daemon_.start(args);
      if (port_ == 0) return Status(Errc::unavailable, "delayqd did not start: " + daemon_.log());
      args_ = std::move(args);
    }
    HttpOptions o;
    o.limits = l;
    return open_http("http://127.0.0.1:" + std::to_string(port_), o);
  }

 private:
  testing::TempDir dir_{"delayq-conformance-http"};
  testing::DaemonProcess daemon_{DELAYQD_PATH, dir_.sub("delayqd.log")};
  int port_ = 0;
  std::vector<std::string> args_{};  // the running daemon's
};

// One backend as the suite's parameter: its name, whether it keeps jobs, and how to make one.
struct Kind {
  const char* name;
  bool keeps_jobs;
  std::unique_ptr<Backend> (*make)();
};
template <class B>
constexpr Kind kind() {
  return {B::kName, B::kKeepsJobs, [] { return std::unique_ptr<Backend>(std::make_unique<B>()); }};
}
void PrintTo(const Kind& k, std::ostream* os) { *os << k.name; }

// ---- the fixture ----

class Conformance : public ::testing::TestWithParam<Kind> {
 protected:
  bool keeps_jobs() const { return GetParam().keeps_jobs; }
  // delayqd's JSON carries text: over HTTP, ids and bodies are valid UTF-8 (delayq/http.h).
  bool text_only() const { return backend_name() == "Http"; }
  std::string_view backend_name() const { return GetParam().name; }

  void SetUp() override { ASSERT_NO_FATAL_FAILURE(open()); }
  void TearDown() override {
    if (q_) q_->close();
    q_.reset();
  }

  // (Re)opens the queue. The old one is closed first: a store's directory admits one owner.
  void open(const Limits& limits = test_limits()) {
    q_.reset();
    Result<std::unique_ptr<Queue>> r = backend_->open(limits);
    ASSERT_TRUE(r.ok()) << backend_name() << ": " << r.status().to_string();
    q_ = std::move(r).value();
  }

  // push(), remembering the job's due time as the test computes it: the clock read before the
  // call, plus the delay; or due_at, if that is later.
  Result<std::string> push_r(JobSpec spec) {
    const TimePoint before = now();
    const TimePoint due =
        spec.due_at ? std::max(*spec.due_at, before) : before + spec.delay.value_or(0ms);
    Result<std::string> r = q_->push(std::move(spec));
    if (r.ok()) expect_due(*r, due);
    return r;
  }
  std::string push(JobSpec spec) {
    Result<std::string> r = push_r(std::move(spec));
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : std::string();
  }
  std::string push(std::string topic, std::string id, Duration delay = 0ms,
                   std::optional<RetryPolicy> retry = std::nullopt, Duration ttr = 0ms,
                   std::string body = "") {
    return push({.topic = std::move(topic),
                 .id = std::move(id),
                 .delay = delay,
                 .ttr = ttr,
                 .body = std::move(body),
                 .retry = std::move(retry)});
  }

  // A job to push with due_at = t0 + offset (push_ahead()).
  struct Ahead {
    std::string topic;
    std::string id;
    Duration offset;
  };
  // Pushes `jobs` with due times t0 + offset, t0 chosen so that every due time lies after the
  // last push returned: a due time already past at its push would mean "now", and the order
  // under test would not be the one tested. The first try leaves 400 ms for the pushes; if they
  // took longer (a slow machine), the jobs are cancelled and pushed again with four times the
  // margin. Returns t0; fails the test if even the last margin (25.6 s) was too short.
  TimePoint push_ahead(const std::vector<Ahead>& jobs) {
    for (Duration margin = 400ms; margin <= 1min; margin *= 4) {
      const TimePoint t0 = whole_us(now() + margin);
      for (const Ahead& j : jobs) {
        Result<std::string> r = push_r({.topic = j.topic, .id = j.id, .due_at = t0 + j.offset});
        EXPECT_TRUE(r.ok()) << j.id << ": " << r.status().to_string();
      }
      if (now() < t0) return t0;
      for (const Ahead& j : jobs) EXPECT_TRUE(q_->cancel(j.id).ok()) << j.id;
    }
    ADD_FAILURE() << "pushing " << jobs.size() << " jobs took longer than 25 s every time";
    return TimePoint{};
  }

  // Jobs "0" .. "<n - 1>" of `topic`, ready now, pushed with one push_batch.
  void push_ready(const std::string& topic, int n) {
    std::vector<JobSpec> specs;
    for (int i = 0; i < n; ++i) specs.push_back({.topic = topic, .id = std::to_string(i)});
    for (const Result<std::string>& r : q_->push_batch(std::move(specs)))
      EXPECT_TRUE(r.ok()) << r.status().to_string();
  }

  // Every call on the token `t` of a delivery that no longer holds its job is refused with
  // stale_token (and so changes nothing).
  void expect_stale(const Token& t) {
    Status s = q_->ack(t);
    EXPECT_TRUE(s.is(Errc::stale_token)) << s.to_string();
    EXPECT_TRUE(q_->nack(t).is(Errc::stale_token));
    EXPECT_TRUE(q_->dead_letter(t).is(Errc::stale_token));
    EXPECT_TRUE(q_->touch(t).is(Errc::stale_token));
    EXPECT_TRUE(q_->release(t).is(Errc::stale_token));
  }

  // From now on, the job `id` may not be delivered before `due` (an instant the test computed).
  void expect_due(const std::string& id, TimePoint due) { due_[id] = due; }

  // The next delivery of `topics`, waiting for it up to kLong; fails the test if none comes, if
  // it came before the due time the test computed for it (a job without one fails too), or if
  // the queue reports an earlier due time than that.
  Delivery take(const std::vector<std::string>& topics) {
    Result<Delivery> d = q_->reserve(topics, kLong);
    const TimePoint at = now();
    EXPECT_TRUE(d.ok()) << d.status().to_string();
    if (!d.ok()) return Delivery{};
    expect_not_early(*d, at);
    return *d;
  }
  // `d`, seen at `at`, did not come before the due time the test computed for it.
  void expect_not_early(const Delivery& d, TimePoint at) {
    auto it = due_.find(d.id);
    if (it == due_.end()) {
      ADD_FAILURE() << d.id << " was delivered, but the test computed no due time for it";
      return;
    }
    EXPECT_GE(at, it->second) << d.id << " was delivered " << ns(it->second) - ns(at)
                              << " ns before the due time the test computed";
    EXPECT_GE(d.due, it->second - kSlack)
        << d.id << " reports a due time " << ns(it->second) - ns(d.due)
        << " ns before the one the test computed";
  }
  Delivery take(const std::string& topic) { return take(std::vector<std::string>{topic}); }
  // take() with the given reserve() timeout.
  Delivery take_within(const std::string& topic, Duration timeout) {
    Result<Delivery> d = q_->reserve(topic, timeout);
    const TimePoint at = now();
    EXPECT_TRUE(d.ok()) << d.status().to_string();
    if (!d.ok()) return Delivery{};
    expect_not_early(*d, at);
    return *d;
  }

  // Reserves the next job of `topic` and fails it at once (its last attempt: it is dead).
  void nack_next(const std::string& topic, std::optional<Duration> delay = std::nullopt) {
    Delivery d = take(topic);
    Status s = q_->nack(d.token, delay);
    EXPECT_TRUE(s.ok()) << s.to_string();
  }

  JobInfo get(const std::string& id) {
    Result<JobInfo> j = q_->get(id);
    EXPECT_TRUE(j.ok()) << id << ": " << j.status().to_string();
    return j.ok() ? *j : JobInfo{};
  }
  // The job's state, or "gone" when get() says not_found.
  std::string state(const std::string& id) {
    Result<JobInfo> j = q_->get(id);
    if (j.is(Errc::not_found)) return "gone";
    EXPECT_TRUE(j.ok()) << id << ": " << j.status().to_string();
    return j.ok() ? to_string(j->state) : j.status().to_string();
  }

  // The job waits for `due` after a failed attempt: delayed, or ready once `due` has passed (a
  // slow machine may get here late).
  void expect_waiting(const std::string& id, TimePoint due) {
    const std::string st = state(id);
    if (st == "ready") {
      EXPECT_GE(now(), due) << id << " became ready early";
    } else {
      EXPECT_EQ(st, "delayed") << id;
    }
  }

  // Polls `pred` until it holds or kLong has passed; returns whether it held.
  template <class Pred>
  bool eventually(Pred pred) {
    const auto until = std::chrono::steady_clock::now() + kLong;
    while (!pred()) {
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }

  // One job in each state, in `topic`: "<topic>-delayed" (due in 30 minutes), "<topic>-reserved"
  // (its delivery is returned), "<topic>-dead" (one attempt, failed) and "<topic>-ready".
  Delivery every_state(const std::string& topic) {
    push(topic, topic + "-delayed", 30min, std::nullopt, 0ms, "d");
    push(topic, topic + "-reserved", 0ms, std::nullopt, 0ms, "r");
    Delivery reserved = take(topic);
    EXPECT_EQ(reserved.id, topic + "-reserved");
    push(topic, topic + "-dead", 0ms, RetryPolicy::fixed(0ms, 1), 0ms, "x");
    nack_next(topic);
    push(topic, topic + "-ready", 0ms, std::nullopt, 0ms, "y");
    EXPECT_EQ(state(topic + "-delayed"), "delayed");
    EXPECT_EQ(state(topic + "-reserved"), "reserved");
    EXPECT_EQ(state(topic + "-dead"), "dead");
    EXPECT_EQ(state(topic + "-ready"), "ready");
    return reserved;
  }

  std::unique_ptr<Backend> backend_ = GetParam().make();
  std::unique_ptr<Queue> q_;
  // Per job, the earliest instant its next delivery may come, as the test computed it (see the
  // top of the file). Kept across deliveries: a redelivery cannot come before it either, and a
  // test that makes the next one later (a nack's wait, a lease) says so with expect_due().
  std::map<std::string, TimePoint> due_;
};

INSTANTIATE_TEST_SUITE_P(Backends, Conformance,
                         ::testing::Values(kind<Memory>(), kind<Durable>(), kind<Tiered>(),
                                           kind<Redis>(), kind<DurableAlways>(),
                                           kind<TieredAlways>(), kind<Http>()),
                         [](const ::testing::TestParamInfo<Kind>& i) { return i.param.name; });

// ---- push and ids ----

TEST_P(Conformance, PushReturnsTheGivenIdOrAGeneratedUniqueOne) {
  Queue& q = *this->q_;
  Result<std::string> given = q.push({.topic = "ids", .id = "order-42"});
  ASSERT_TRUE(given.ok()) << given.status().to_string();
  EXPECT_EQ(*given, "order-42");
  std::set<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    Result<std::string> r = q.push({.topic = "ids", .delay = 30min});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_FALSE(r->empty());
    EXPECT_LE(r->size(), kMaxIdBytes);
    EXPECT_EQ(this->get(*r).state, JobState::delayed);
    ids.insert(*r);
  }
  EXPECT_EQ(ids.size(), 20u);
  EXPECT_EQ(ids.count("order-42"), 0u);
  EXPECT_EQ(q.stats().topics["ids"], (TopicStats{.delayed = 20, .ready = 1}));
}

TEST_P(Conformance, ADuplicateIdIsRefusedWhileTheJobLivesInAnyState) {
  Queue& q = *this->q_;
  this->every_state("dup");
  for (const char* s : {"delayed", "ready", "reserved", "dead"}) {
    const std::string id = std::string("dup-") + s;
    Result<std::string> r = q.push({.topic = "elsewhere", .id = id, .body = "impostor"});
    EXPECT_TRUE(r.is(Errc::duplicate_id)) << id << ": " << r.status().to_string();
    // The live job is untouched.
    JobInfo j = this->get(id);
    EXPECT_EQ(j.topic, "dup");
    EXPECT_EQ(to_string(j.state), std::string(s));
    EXPECT_NE(j.body, "impostor");
  }
  // The limits are checked before the id.
  EXPECT_TRUE(q.push({.topic = "dup", .id = "dup-ready", .delay = -1s}).is(Errc::invalid_argument));
  const Stats st = q.stats();
  EXPECT_EQ(st.pushed, 4u);
  EXPECT_EQ(st.topics.count("elsewhere"), 0u);
}

TEST_P(Conformance, AnIdIsFreeAgainOnceItsJobIsAckedCancelledOrPurged) {
  Queue& q = *this->q_;
  this->push("free", "x", 0ms, std::nullopt, 0ms, "first");
  Delivery first = this->take("free");
  ASSERT_TRUE(q.ack(first.token).ok());
  this->push("free", "x", 0ms, std::nullopt, 0ms, "second");
  EXPECT_EQ(this->get("x").body, "second");
  // The first job's token does not reach the new job that reuses its id.
  Status s = q.ack(first.token);
  EXPECT_TRUE(s.is(Errc::stale_token)) << s.to_string();
  EXPECT_EQ(this->state("x"), "ready");

  ASSERT_TRUE(q.cancel("x").ok());
  this->push("free", "x", 30min, std::nullopt, 0ms, "third");
  EXPECT_EQ(this->get("x").body, "third");
  ASSERT_TRUE(q.cancel("x").ok());

  // The id may come back in another topic; calls about it follow it there.
  this->push("elsewhere", "x", 0ms, std::nullopt, 0ms, "fourth");
  s = q.ack(first.token);
  EXPECT_TRUE(s.is(Errc::stale_token)) << s.to_string();
  EXPECT_EQ(this->get("x").topic, "elsewhere");
  Delivery fourth = this->take("elsewhere");
  EXPECT_EQ(fourth.body, "fourth");
  EXPECT_TRUE(q.touch(fourth.token).ok());
  ASSERT_TRUE(q.ack(fourth.token).ok());
  EXPECT_EQ(this->state("x"), "gone");

  this->push("free", "y", 0ms, RetryPolicy::fixed(0ms, 1));
  this->nack_next("free");
  EXPECT_EQ(this->state("y"), "dead");
  EXPECT_TRUE(q.push({.topic = "free", .id = "y"}).is(Errc::duplicate_id));
  Result<uint64_t> purged = q.purge_dead("free");
  ASSERT_TRUE(purged.ok());
  EXPECT_EQ(*purged, 1u);
  this->push("free", "y");
  EXPECT_EQ(this->get("y").attempts, 0u);
}

// "topic: 1 to 255 bytes of UTF-8" (NUL included); ids up to 255 bytes, any bytes. The Redis
// backend builds keys, records and wake-up messages from them. A topic that is not UTF-8 is
// refused, in the same words by every backend (common/rules).
TEST_P(Conformance, TopicsAndIdsMayHoldAnyBytes) {
  Queue& q = *this->q_;
  const Result<std::string> binary = q.push({.topic = "\xff\xfe\x80", .id = "b"});
  EXPECT_TRUE(binary.is(Errc::invalid_argument)) << binary.status().to_string();
  EXPECT_EQ(binary.status().message().rfind("topic is not valid UTF-8 (byte 0 is 0xff)", 0), 0u)
      << binary.status().to_string();
  if (this->text_only()) {
    Result<std::string> r = q.push({.topic = "bin", .id = "\xff\xfe\x80"});
    EXPECT_TRUE(r.is(Errc::invalid_argument)) << r.status().to_string();
    EXPECT_TRUE(q.get("\xff\xfe\x80").is(Errc::invalid_argument));
  } else {
    ASSERT_TRUE(q.push({.topic = "bin", .id = "\xff\xfe\x80"}).ok());
    EXPECT_EQ(this->get("\xff\xfe\x80").topic, "bin");
    ASSERT_TRUE(q.cancel("\xff\xfe\x80").ok());
  }
  std::vector<std::string> names{"a:b", "{tag}", "}{", "with space", "*", "r:x"};
  names.push_back(std::string("nul\0byte", 8));
  names.push_back("\xc3\xa9\xe2\x9c\x93");  // UTF-8 beyond ASCII
  names.push_back(std::string(255, '\0'));
  for (const std::string& name : names) {
    SCOPED_TRACE(::testing::PrintToString(name));
    Result<std::string> r = this->push_r({.topic = name, .id = name, .body = name});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(*r, name);
    JobInfo j = this->get(name);
    EXPECT_EQ(j.topic, name);
    EXPECT_EQ(j.body, name);
  }
  const Stats st = q.stats();
  EXPECT_EQ(st.topics.size(), names.size());
  for (const std::string& name : names) {
    EXPECT_EQ(st.topics.count(name), 1u) << ::testing::PrintToString(name);
  }
  for (const std::string& name : names) {
    SCOPED_TRACE(::testing::PrintToString(name));
    Delivery d = this->take(name);
    EXPECT_EQ(d.id, name);
    EXPECT_EQ(d.topic, name);
    EXPECT_EQ(d.body, name);
    EXPECT_EQ(d.token.id, name);
    ASSERT_TRUE(q.ack(d.token).ok());
  }
  // A consumer waiting on such a topic is woken by a push to it.
  const std::string odd("wake\0me:{x}", 11);
  auto waiting = std::async(std::launch::async, [&] { return q.reserve(odd, kLong); });
  std::this_thread::sleep_for(50ms);
  this->push(odd, "woken");
  Result<Delivery> d = waiting.get();
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, "woken");
  EXPECT_EQ(d->topic, odd);
}

// The ends of the time range: never a wrap-around into "now", never an error other than
// invalid_argument.
TEST_P(Conformance, ExtremeTimesMeanNowOrAreRefused) {
  Queue& q = *this->q_;
  for (const TimePoint past : {TimePoint::min(), TimePoint{}, TimePoint(-(24h * 365 * 200))}) {
    SCOPED_TRACE(ns(past));
    const TimePoint before = now();
    Result<std::string> r = q.push({.topic = "x", .due_at = past});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    JobInfo j = this->get(*r);
    EXPECT_EQ(j.state, JobState::ready);
    EXPECT_TRUE(Between(j.due, before, now()));
    ASSERT_TRUE(q.cancel(*r).ok());
  }
  EXPECT_TRUE(q.push({.topic = "x", .due_at = TimePoint::max()}).is(Errc::invalid_argument));
  EXPECT_TRUE(q.push({.topic = "x", .delay = Duration::max()}).is(Errc::invalid_argument));
  EXPECT_TRUE(q.push({.topic = "x", .delay = Duration::min()}).is(Errc::invalid_argument));
  EXPECT_TRUE(q.push({.topic = "x", .ttr = Duration::max()}).is(Errc::invalid_argument));
  EXPECT_TRUE(q.push({.topic = "x", .retry = RetryPolicy::fixed(Duration::max(), 2)})
                  .is(Errc::invalid_argument));

  this->push("x", "j", 10min);
  const TimePoint due = this->get("j").due;
  Status s = q.reschedule("j", now() + 24h * 365 * 100);
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
  EXPECT_EQ(this->get("j").due, due);
  const TimePoint before = now();
  s = q.reschedule("j", TimePoint::min());
  EXPECT_TRUE(s.ok()) << s.to_string();
  this->expect_due("j", before);
  JobInfo j = this->get("j");
  EXPECT_EQ(j.state, JobState::ready);
  EXPECT_TRUE(Between(j.due, before, now()));

  Delivery d = this->take("x");
  s = q.nack(d.token, Duration::max());
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
  s = q.nack(d.token, Duration::min());
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
  EXPECT_EQ(this->state("j"), "reserved");
  // A nack delay of exactly max_delay is fine.
  const TimePoint nacked = now();
  ASSERT_TRUE(q.nack(d.token, 1h).ok());
  EXPECT_TRUE(Between(this->get("j").due, nacked + 1h, now() + 1h));
  EXPECT_EQ(q.stats().topics["x"], (TopicStats{.delayed = 1}));
}

// (Once a Redis bug: the due time, rounded up to whole microseconds, overflowed on its way back.)
TEST_P(Conformance, RescheduleToTheEndOfTimeIsRefused) {
  Queue& q = *this->q_;
  this->push("x", "j", 10min);
  const TimePoint due = this->get("j").due;
  Status s = q.reschedule("j", TimePoint::max());
  EXPECT_EQ(this->get("j").due, due);
  EXPECT_EQ(this->state("j"), "delayed");
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
}

// The longest max_delay a queue accepts (100 years, rules::kLongestDelay): a delay, due time,
// lease, nack wait, policy wait or reschedule that far out is kept exactly (never wrapped into the
// past, never "due now"), and one a nanosecond further is refused.
TEST_P(Conformance, TheLongestMaxDelayIsKeptExactlyAtEveryEntry) {
  constexpr Duration kMax = rules::kLongestDelay;
  ASSERT_NO_FATAL_FAILURE(
      this->open(Limits{.max_delay = kMax, .max_body_bytes = 4096, .default_ttr = 30s}));
  Queue& q = *this->q_;
  TimePoint before = now();
  this->push({.topic = "far", .id = "delay", .delay = kMax});
  EXPECT_EQ(this->state("delay"), "delayed");
  EXPECT_TRUE(Between(this->get("delay").due, before + kMax, now() + kMax));
  const TimePoint at = whole_us(now()) + kMax - 1ms;
  this->push({.topic = "far", .id = "due_at", .due_at = at});
  EXPECT_EQ(this->get("due_at").due, at);
  EXPECT_EQ(this->state("due_at"), "delayed");
  EXPECT_TRUE(q.push({.topic = "far", .delay = kMax + 1ns}).is(Errc::invalid_argument));
  EXPECT_TRUE(q.push({.topic = "far", .due_at = now() + kMax + 1min}).is(Errc::invalid_argument));

  // A lease of max_delay, touched; then the policy's wait of max_delay.
  this->push({.topic = "far", .id = "lease", .ttr = kMax, .retry = RetryPolicy::fixed(kMax, 3)});
  before = now();
  Delivery d = this->take("far");
  ASSERT_EQ(d.id, "lease");
  EXPECT_TRUE(Between(d.lease_deadline, before + kMax, now() + kMax));
  before = now();
  Result<TimePoint> lease = q.touch(d.token);
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  EXPECT_TRUE(Between(*lease, before + kMax, now() + kMax));
  before = now();
  ASSERT_TRUE(q.nack(d.token).ok());
  EXPECT_EQ(this->state("lease"), "delayed");
  EXPECT_TRUE(Between(this->get("lease").due, before + kMax, now() + kMax));

  // Rescheduled to max_delay from now, then back to now, then nacked with max_delay.
  Status s = q.reschedule("lease", now() + kMax + 1min);
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
  const TimePoint to = whole_us(now()) + kMax - 1ms;
  ASSERT_TRUE(q.reschedule("lease", to).ok());
  EXPECT_EQ(this->get("lease").due, to);
  before = now();
  ASSERT_TRUE(q.reschedule("lease", before).ok());
  this->expect_due("lease", before);
  d = this->take("far");
  ASSERT_EQ(d.id, "lease");
  s = q.nack(d.token, kMax + 1ns);
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
  before = now();
  ASSERT_TRUE(q.nack(d.token, kMax).ok());
  EXPECT_TRUE(Between(this->get("lease").due, before + kMax, now() + kMax));
  EXPECT_EQ(q.stats().topics["far"], (TopicStats{.delayed = 3}));
}

// An exponential policy whose waits overflow any integer (1 ms x 1e6^n) stops at its cap, the
// longest max_delay: every wait is the formula's, or the cap, never wrapped around to "now".
TEST_P(Conformance, AnExponentialPolicyThatOverflowsStopsAtItsCap) {
  constexpr Duration kMax = rules::kLongestDelay;
  ASSERT_NO_FATAL_FAILURE(
      this->open(Limits{.max_delay = kMax, .max_body_bytes = 4096, .default_ttr = 30s}));
  Queue& q = *this->q_;
  this->push({.topic = "exp", .id = "j", .retry = RetryPolicy::exponential(1ms, 1e6, kMax, 0, 8)});
  const std::vector<Duration> waits{1ms, 1000s, 1'000'000'000s, kMax, kMax, kMax, kMax};
  for (size_t i = 0; i < waits.size(); ++i) {
    SCOPED_TRACE("attempt " + std::to_string(i + 1));
    Delivery d = this->take("exp");
    ASSERT_EQ(d.id, "j");
    const TimePoint before = now();
    ASSERT_TRUE(q.nack(d.token).ok());
    JobInfo j = this->get("j");
    EXPECT_TRUE(Between(j.due, before + waits[i], now() + waits[i]));
    // Back to now for the next attempt.
    const TimePoint back = now();
    ASSERT_TRUE(q.reschedule("j", back).ok());
    this->expect_due("j", back);
  }
  Delivery d = this->take("exp");
  ASSERT_TRUE(q.nack(d.token).ok());
  EXPECT_EQ(this->state("j"), "dead");
}

// Waits of reserve() and reserve_async() at the ends of Duration: min() (and any negative
// timeout) looks once and times out at once; max() waits as long as it takes, neither timing out
// at once nor overflowing.
TEST_P(Conformance, ReserveTimeoutsAtTheEndsOfDuration) {
  Queue& q = *this->q_;
  for (const Duration t : {Duration::min(), Duration(-1h)}) {
    const auto started = std::chrono::steady_clock::now();
    EXPECT_TRUE(q.reserve("w", t).is(Errc::timeout));
    EXPECT_LT(std::chrono::steady_clock::now() - started, kLong);
    std::promise<Status> p;
    q.reserve_async({"w"}, t, [&](Result<Delivery> r) { p.set_value(r.status()); });
    auto f = p.get_future();
    ASSERT_EQ(f.wait_for(kLong), std::future_status::ready);
    EXPECT_TRUE(f.get().is(Errc::timeout));
  }
  this->push("w", "ready");
  EXPECT_EQ(this->take_within("w", Duration::min()).id, "ready");

  auto waiting = std::async(std::launch::async, [&] { return q.reserve("w", Duration::max()); });
  std::promise<Result<Delivery>> p;
  q.reserve_async({"w"}, Duration::max(), [&](Result<Delivery> r) { p.set_value(std::move(r)); });
  std::this_thread::sleep_for(50ms);
  this->push("w", "a", 20ms);
  this->push("w", "b", 20ms);
  auto f = p.get_future();
  ASSERT_EQ(waiting.wait_for(kLong), std::future_status::ready);
  ASSERT_EQ(f.wait_for(kLong), std::future_status::ready);
  Result<Delivery> one = waiting.get(), two = f.get();
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  ASSERT_TRUE(two.ok()) << two.status().to_string();
  this->expect_not_early(*one, now());
  this->expect_not_early(*two, now());
  EXPECT_EQ(std::set<std::string>({one->id, two->id}), (std::set<std::string>{"a", "b"}));
}

// push_batch() checks each spec's times on its own, as push() does.
TEST_P(Conformance, PushBatchTakesExtremeTimesAsPushDoes) {
  Queue& q = *this->q_;
  const TimePoint before = now();
  std::vector<Result<std::string>> r = q.push_batch({
      {.topic = "b", .id = "max-delay", .delay = Duration::max()},
      {.topic = "b", .id = "min-delay", .delay = Duration::min()},
      {.topic = "b", .id = "min-due", .due_at = TimePoint::min()},
      {.topic = "b", .id = "max-due", .due_at = TimePoint::max()},
      {.topic = "b", .id = "max-ttr", .ttr = Duration::max()},
      {.topic = "b", .id = "hour", .delay = 1h},
  });
  ASSERT_EQ(r.size(), 6u);
  EXPECT_TRUE(r[0].is(Errc::invalid_argument)) << r[0].status().to_string();
  EXPECT_TRUE(r[1].is(Errc::invalid_argument)) << r[1].status().to_string();
  ASSERT_TRUE(r[2].ok()) << r[2].status().to_string();
  EXPECT_TRUE(r[3].is(Errc::invalid_argument)) << r[3].status().to_string();
  EXPECT_TRUE(r[4].is(Errc::invalid_argument)) << r[4].status().to_string();
  ASSERT_TRUE(r[5].ok()) << r[5].status().to_string();
  EXPECT_EQ(this->state("min-due"), "ready");
  EXPECT_TRUE(Between(this->get("min-due").due, before, now()));
  EXPECT_EQ(this->state("hour"), "delayed");
  EXPECT_TRUE(Between(this->get("hour").due, before + 1h, now() + 1h));
  EXPECT_EQ(q.stats().topics["b"], (TopicStats{.delayed = 1, .ready = 1}));
}

// ---- bad input: the same Errc on every backend, and the memory engine's message ----

TEST_P(Conformance, BadPushesAreRefusedAndChangeNothing) {
  Queue& q = *this->q_;
  // The reference for the wording: the messages are part of what the backends share.
  auto reference = Engine::open(engine_options(test_limits())).value();
  const TimePoint t = now();
  struct Bad {
    const char* what;
    JobSpec spec;
    bool same_message = true;  // false when the message names a time relative to "now"
  };
  const std::vector<Bad> bad{
      {"empty topic", {.topic = ""}},
      {"256-byte topic", {.topic = std::string(256, 't')}},
      {"256-byte id", {.topic = "t", .id = std::string(256, 'i')}},
      {"body over max_body_bytes", {.topic = "t", .body = std::string(4097, '\0')}},
      {"negative delay", {.topic = "t", .delay = -1ns}},
      {"very negative delay", {.topic = "t", .delay = -5min}},
      {"delay beyond max_delay", {.topic = "t", .delay = 1h + 1ms}},
      {"due_at beyond max_delay", {.topic = "t", .due_at = t + 1h + 1min}, false},
      {"delay and due_at", {.topic = "t", .delay = 1s, .due_at = t + 1s}},
      {"negative ttr", {.topic = "t", .ttr = -1s}},
      {"ttr beyond max_delay", {.topic = "t", .ttr = 1h + 1s}},
      {"ttr below 1ms", {.topic = "t", .ttr = 999us}},
      {"ttr of 1ns", {.topic = "t", .ttr = 1ns}},
      {"max_attempts 0", {.topic = "t", .retry = RetryPolicy::fixed(1s, 0)}},
      {"negative fixed delay", {.topic = "t", .retry = RetryPolicy::fixed(-1s, 3)}},
      {"empty list", {.topic = "t", .retry = RetryPolicy::list({})}},
      {"negative listed delay", {.topic = "t", .retry = RetryPolicy::list({1s, -1s})}},
      {"negative base", {.topic = "t", .retry = RetryPolicy::exponential(-1s, 2, 1h, 0, 3)}},
      {"factor below 1", {.topic = "t", .retry = RetryPolicy::exponential(1s, 0.5, 1h, 0, 3)}},
      {"factor above 1e6", {.topic = "t", .retry = RetryPolicy::exponential(1s, 2e6, 1h, 0, 3)}},
      {"cap below base", {.topic = "t", .retry = RetryPolicy::exponential(2s, 2, 1s, 0, 3)}},
      {"jitter above 1", {.topic = "t", .retry = RetryPolicy::exponential(1s, 2, 1h, 1.5, 3)}},
      {"negative jitter", {.topic = "t", .retry = RetryPolicy::exponential(1s, 2, 1h, -0.1, 3)}},
      // Not in the documented list, but refused by the engine: a retry wait the queue could not
      // schedule.
      {"retry wait beyond max_delay", {.topic = "t", .retry = RetryPolicy::fixed(2h, 3)}},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.what);
    Result<std::string> r = q.push(b.spec);
    EXPECT_TRUE(r.is(Errc::invalid_argument)) << r.status().to_string();
    Result<std::string> want = reference->push(b.spec);
    EXPECT_TRUE(want.is(Errc::invalid_argument)) << want.status().to_string();
    if (b.same_message) {
      EXPECT_EQ(r.status().message(), want.status().message());
    }
  }
  // Each limit itself is fine.
  const std::vector<JobSpec> edge{
      {.topic = std::string(255, 't')},
      {.topic = "t", .id = std::string(255, 'i')},
      {.topic = "t", .body = std::string(4096, '\0')},
      {.topic = "t", .delay = 1h},
      {.topic = "t", .due_at = now() + 1h - 1s},
      {.topic = "t", .ttr = 1h},
      {.topic = "t", .ttr = 1ms},
      {.topic = "t", .retry = RetryPolicy::fixed(1h, 1)},
  };
  for (const JobSpec& spec : edge) {
    Result<std::string> r = q.push(spec);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
  }
  const Stats st = q.stats();
  EXPECT_EQ(st.pushed, edge.size());
  EXPECT_EQ(st.topics.size(), 2u);
}

TEST_P(Conformance, BadCallsOtherThanPushAreRefusedAndChangeNothing) {
  Queue& q = *this->q_;
  auto reference = Engine::open(engine_options(test_limits())).value();
  auto same_message = [&](const Status& got, const Status& want) {
    EXPECT_EQ(got.code(), want.code());
    EXPECT_EQ(got.message(), want.message());
  };
  const std::vector<std::string> none;
  same_message(q.reserve(none, 0ms).status(), reference->reserve(none, 0ms).status());
  EXPECT_TRUE(q.reserve(none, 0ms).is(Errc::invalid_argument));
  // reserve_async refuses at once, on the calling thread.
  bool called = false;
  Status async_status;
  q.reserve_async({}, kLong, [&](Result<Delivery> r) {
    called = true;
    async_status = r.status();
  });
  EXPECT_TRUE(called);
  EXPECT_TRUE(async_status.is(Errc::invalid_argument)) << async_status.to_string();

  // Unknown ids and tokens of unknown jobs.
  for (Queue* qq : {&q, static_cast<Queue*>(reference.get())}) {
    EXPECT_TRUE(qq->get("nope").is(Errc::not_found));
    EXPECT_TRUE(qq->cancel("nope").is(Errc::not_found));
    EXPECT_TRUE(qq->reschedule("nope", now()).is(Errc::not_found));
    EXPECT_TRUE(qq->requeue_dead("nope").is(Errc::not_found));
    EXPECT_TRUE(qq->ack(Token{"nope", 1}).is(Errc::not_found));
    EXPECT_TRUE(qq->nack(Token{"nope", 1}).is(Errc::not_found));
    EXPECT_TRUE(qq->dead_letter(Token{"nope", 1}).is(Errc::not_found));
    EXPECT_TRUE(qq->touch(Token{"nope", 1}).is(Errc::not_found));
  }
  same_message(q.get("nope").status(), reference->get("nope").status());
  same_message(q.cancel("nope"), reference->cancel("nope"));
  same_message(q.requeue_dead("nope"), reference->requeue_dead("nope"));

  // nack with a bad delay: refused, and the delivery is still held.
  this->push("bad", "held");
  Delivery d = this->take("bad");
  Status s = q.nack(d.token, -1ns);
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
  s = q.nack(d.token, 1h + 1s);
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
  EXPECT_EQ(this->state("held"), "reserved");
  EXPECT_TRUE(q.touch(d.token).ok());
  EXPECT_EQ(this->get("held").attempts, 1u);

  // reschedule beyond max_delay: refused, the due time unchanged.
  const TimePoint due = whole_us(now() + 10min);
  ASSERT_TRUE(q.push({.topic = "bad", .id = "later", .due_at = due}).ok());
  s = q.reschedule("later", now() + 1h + 1min);
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
  EXPECT_EQ(this->get("later").due, due);
  EXPECT_EQ(this->get("later").state, JobState::delayed);

  const Stats st = q.stats();
  testing::expect_totals(st, {{"pushed", 2}, {"delivered", 1}, {"retried", 0}, {"cancelled", 0}});
}

// ---- due times and order ----

TEST_P(Conformance, NothingIsDeliveredBeforeItsDueTime) {
  Queue& q = *this->q_;
  // Each job's due time, as the test sees it: delivery must not come before it.
  std::map<std::string, TimePoint> earliest;
  std::map<std::string, TimePoint> latest;  // the due time the queue may report, at most
  auto by_delay = [&](const std::string& id, Duration delay) {
    const TimePoint before = now();
    this->push("early", id, delay);
    earliest[id] = before + delay;
    latest[id] = now() + delay;
  };
  auto by_due_at = [&](const std::string& id, TimePoint at) {
    ASSERT_TRUE(this->push_r({.topic = "early", .id = id, .due_at = at}).ok());
    earliest[id] = at;
    latest[id] = at;
  };
  by_delay("delay-60ms", 60ms);
  by_due_at("due-at-120ms", whole_us(now() + 120ms));
  // Not a whole microsecond: Redis rounds it up, never down.
  by_due_at("due-at-90ms-and-a-bit", whole_us(now() + 90ms) + 123ns);
  by_delay("delay-150ms-and-a-bit", 150ms + 777ns);
  by_delay("delay-30ms", 30ms);
  {
    // One snapshot: between two stats() calls, jobs move from delayed to ready.
    Stats st = q.stats();
    EXPECT_EQ(st.topics["early"].ready + st.topics["early"].delayed, 5u);
  }
  this->push("early", "in-an-hour", 1h);
  EXPECT_EQ(this->state("in-an-hour"), "delayed");

  for (int i = 0; i < 5; ++i) {
    Delivery d = this->take("early");
    const TimePoint at = now();
    ASSERT_TRUE(earliest.count(d.id)) << d.id;
    EXPECT_GE(at, earliest[d.id]) << d.id << " came " << ns(earliest[d.id]) - ns(at) << " ns early";
    // The reported due time is the requested one (Redis: rounded up to the microsecond).
    EXPECT_TRUE(Between(d.due, earliest[d.id], latest[d.id])) << d.id;
    EXPECT_TRUE(q.ack(d.token).ok());
  }
  Result<Delivery> none = q.reserve("early", 100ms);
  EXPECT_TRUE(none.is(Errc::timeout)) << (none.ok() ? none->id : none.status().to_string());
}

TEST_P(Conformance, JobsDueNowAreReadyAtOnceInPushOrder) {
  const TimePoint before = now();
  this->push("now", "zero-delay", 0ms);
  ASSERT_TRUE(this->push_r({.topic = "now", .id = "past", .due_at = now() - 1h}).ok());
  ASSERT_TRUE(this->push_r({.topic = "now", .id = "far-past", .due_at = TimePoint{}}).ok());
  ASSERT_TRUE(this->push_r({.topic = "now", .id = "no-time"}).ok());
  const TimePoint after = now();
  for (const char* id : {"zero-delay", "past", "far-past", "no-time"}) {
    JobInfo j = this->get(id);
    EXPECT_EQ(j.state, JobState::ready) << id;
    // "Its due time is the current time."
    EXPECT_TRUE(Between(j.due, before, after)) << id;
  }
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) order.push_back(this->take("now").id);
  EXPECT_EQ(order, (std::vector<std::string>{"zero-delay", "past", "far-past", "no-time"}));
}

TEST_P(Conformance, DelayedJobsComeOutInDueOrderTiesInPushOrder) {
  Queue& q = *this->q_;
  // Every due time lies after the last push (push_ahead() makes sure): were one already past
  // when pushed, it would mean "now" and join the line in push order instead.
    const std::vector<Ahead> jobs{
      {"order", "c1", 60ms}, {"order", "a1", 0ms},  {"order", "b1", 30ms},
      {"order", "c2", 60ms}, {"order", "a2", 0ms},  {"order", "b2", 30ms},
      {"order", "d", 90ms},  {"order", "c3", 60ms}, {"order", "a3", 0ms},
  };
  ASSERT_NE(this->push_ahead(jobs), TimePoint{});
  std::vector<std::string> order;
  for (size_t i = 0; i < jobs.size(); ++i) {
    Delivery d = this->take("order");
    order.push_back(d.id);
    EXPECT_TRUE(q.ack(d.token).ok());
  }
  EXPECT_EQ(order,
            (std::vector<std::string>{"a1", "a2", "a3", "b1", "b2", "c1", "c2", "c3", "d"}));
}

TEST_P(Conformance, ReserveOverSeveralTopicsTakesTheEarliestDueTiesToTheFirstListed) {
  Queue& q = *this->q_;
  const std::vector<std::string> topics{"x", "y", "z"};
  // Due now, in this order: y's job is the earliest.
  this->push("y", "y1");
  this->push("x", "x1");
  this->push("z", "z1");
  EXPECT_EQ(this->take(topics).id, "y1");
  EXPECT_EQ(this->take(topics).id, "x1");
  EXPECT_EQ(this->take(topics).id, "z1");
  // Equal due times: the topic listed first. (Both due after their pushes, or they would not be
  // equal: a past due time means the push's own instant.)
  const TimePoint t = this->push_ahead({{"z", "z2", 0ms}, {"y", "y2", 0ms}, {"x", "x2", 50ms}});
  ASSERT_NE(t, TimePoint{});
  while (now() < t + 100ms) std::this_thread::sleep_for(10ms);
  const std::vector<std::string> zyx{"z", "y", "x"};
  const std::vector<std::string> yzx{"y", "z", "x"};
  EXPECT_EQ(this->take(yzx).id, "y2");
  EXPECT_EQ(this->take(zyx).id, "z2");
  EXPECT_EQ(this->take(zyx).id, "x2");
  // Topics that never had a job are not an error.
  EXPECT_TRUE(q.reserve(std::vector<std::string>{"never", "used"}, 0ms).is(Errc::timeout));
}

TEST_P(Conformance, ReserveWaitsUpToItsTimeout) {
  Queue& q = *this->q_;
  // Nothing ready: timeout, and not before the timeout has passed.
  this->push("wait", "in-an-hour", 1h);
  const auto start = std::chrono::steady_clock::now();
  Result<Delivery> r = q.reserve("wait", 200ms);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(r.is(Errc::timeout)) << (r.ok() ? r->id : r.status().to_string());
  EXPECT_GE(waited, 200ms - 1ms);
  // A job that becomes due during the wait is handed out, and not early.
  const TimePoint due = whole_us(now() + 150ms);
  ASSERT_TRUE(this->push_r({.topic = "wait", .id = "soon", .due_at = due}).ok());
  r = q.reserve("wait", kLong);
  const TimePoint at = now();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->id, "soon");
  EXPECT_GE(at, due);
  // A job pushed while a consumer waits wakes it.
  auto waiting = std::async(std::launch::async, [&] { return q.reserve("wait", kLong); });
  std::this_thread::sleep_for(50ms);
  this->push("wait", "pushed-while-waiting");
  Result<Delivery> woken = waiting.get();
  ASSERT_TRUE(woken.ok()) << woken.status().to_string();
  EXPECT_EQ(woken->id, "pushed-while-waiting");
  // So does a job rescheduled to earlier than the wait's end, and it still comes on time.
  waiting = std::async(std::launch::async, [&] { return q.reserve("wait", kLong); });
  std::this_thread::sleep_for(50ms);
  const TimePoint sooner = whole_us(now() + 100ms);
  ASSERT_TRUE(q.reschedule("in-an-hour", sooner).ok());
  woken = waiting.get();
  ASSERT_TRUE(woken.ok()) << woken.status().to_string();
  EXPECT_EQ(woken->id, "in-an-hour");
  EXPECT_GE(now(), sooner);
}

// ---- leases, tokens, attempts ----

TEST_P(Conformance, AckRemovesTheJobAndThenItsTokenIsNotFound) {
  Queue& q = *this->q_;
  this->push("ack", "j", 0ms, std::nullopt, 0ms, "payload");
  Delivery d = this->take("ack");
  EXPECT_EQ(d.id, "j");
  EXPECT_EQ(d.topic, "ack");
  EXPECT_EQ(d.body, "payload");
  EXPECT_EQ(d.attempt, 1u);
  EXPECT_EQ(d.token.id, "j");
  ASSERT_TRUE(q.ack(d.token).ok());
  EXPECT_EQ(this->state("j"), "gone");
  EXPECT_TRUE(q.ack(d.token).is(Errc::not_found));
  EXPECT_TRUE(q.nack(d.token).is(Errc::not_found));
  EXPECT_TRUE(q.dead_letter(d.token).is(Errc::not_found));
  EXPECT_TRUE(q.touch(d.token).is(Errc::not_found));
  // A token that went through its text form is the same token.
  this->push("ack", "k");
  Delivery e = this->take("ack");
  EXPECT_GT(e.token.fence, d.token.fence);  // every delivery of the queue gets a larger fence
  Result<Token> parsed = Token::parse(e.token.to_string());
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(q.ack(*parsed).ok());
  const Stats st = q.stats();
  testing::expect_totals(st, {{"acked", 2}, {"delivered", 2}});
  EXPECT_TRUE(st.topics.empty());
}

TEST_P(Conformance, OneHolderAtATimeAndARedeliveredJobsOldTokenIsStale) {
  Queue& q = *this->q_;
  this->push("lease", "j", 0ms, RetryPolicy::fixed(0ms, 3), 300ms);
  const TimePoint before = now();
  Delivery first = this->take("lease");
  const TimePoint after = now();
  EXPECT_EQ(first.attempt, 1u);
  EXPECT_EQ(first.max_attempts, 3u);
  EXPECT_TRUE(Between(first.lease_deadline, before + 300ms, after + 300ms));
  // The lease runs out 300 ms after the reservation at the earliest; the retry waits 0.
  this->expect_due("j", before + 300ms);
  // While the lease runs, nobody else gets the job.
  Result<Delivery> other = q.reserve("lease", 0ms);
  if (other.ok()) {
    this->expect_not_early(*other, now());  // "the job was handed out twice at once"
  } else {
    EXPECT_TRUE(other.is(Errc::timeout)) << other.status().to_string();
  }
  // Not acknowledged: the lease runs out, the attempt counts, the job comes back (wait 0).
  Delivery second = other.ok() ? *other : this->take("lease");
  EXPECT_EQ(second.id, "j");
  EXPECT_EQ(second.attempt, 2u);
  EXPECT_GT(second.token.fence, first.token.fence);
  this->expect_stale(first.token);
  // The refused token changed nothing for the current holder.
  JobInfo j = this->get("j");
  EXPECT_EQ(j.state, JobState::reserved);
  EXPECT_EQ(j.attempts, 2u);
  EXPECT_EQ(j.lease_deadline, second.lease_deadline);
  ASSERT_TRUE(q.ack(second.token).ok());
  const Stats st = q.stats();
  testing::expect_totals(st,
                         {{"delivered", 2}, {"leases_expired", 1}, {"retried", 1}, {"acked", 1}});
}

TEST_P(Conformance, AnAckAfterTheLeaseRanOutIsRefusedEvenBeforeTheRetry) {
  this->push("late", "j", 0ms, RetryPolicy::fixed(30min, 3), 100ms);
  Delivery d = this->take("late");
  while (now() <= d.lease_deadline + 20ms) std::this_thread::sleep_for(10ms);
  this->expect_stale(d.token);
  JobInfo j = this->get("j");
  EXPECT_EQ(j.state, JobState::delayed);
  EXPECT_EQ(j.attempts, 1u);
  // The retry wait counts from the instant the lease ran out.
  EXPECT_TRUE(Between(j.due, d.lease_deadline + 30min, d.lease_deadline + 30min));
}

TEST_P(Conformance, ALeaseThatRunsOutIsAFailedAttemptRetriedFromWhenItRanOutThenDead) {
  Queue& q = *this->q_;
  this->push("expire", "j", 0ms, RetryPolicy::fixed(200ms, 2), 150ms);
  const TimePoint taken = now();  // the lease runs out 150 ms after this, at the earliest
  Delivery first = this->take("expire");
  // (Delayed for 200 ms, then ready: a slow poll may only see the latter.)
  ASSERT_TRUE(this->eventually([&] { return this->state("j") != "reserved"; }))
      << this->state("j");
  EXPECT_GE(now(), taken + 150ms);
  JobInfo j = this->get("j");
  EXPECT_EQ(j.attempts, 1u);
  EXPECT_TRUE(Between(j.due, first.lease_deadline + 200ms, first.lease_deadline + 200ms));
  this->expect_due("j", taken + 150ms + 200ms);
  Delivery second = this->take("expire");
  EXPECT_EQ(second.attempt, 2u);
  EXPECT_EQ(second.due, first.lease_deadline + 200ms);  // when the job became due again
  // The last attempt runs out too: dead, not retried.
  ASSERT_TRUE(this->eventually([&] { return this->state("j") == "dead"; })) << this->state("j");
  EXPECT_GE(now(), taken + 150ms + 200ms + 150ms);
  EXPECT_EQ(this->get("j").attempts, 2u);
  Result<std::vector<JobInfo>> dead = q.list_dead("expire", 10);
  ASSERT_TRUE(dead.ok());
  ASSERT_EQ(dead->size(), 1u);
  EXPECT_EQ((*dead)[0].id, "j");
  EXPECT_TRUE(q.ack(second.token).is(Errc::stale_token));
  const Stats st = q.stats();
  testing::expect_totals(st, {{"leases_expired", 2}, {"retried", 1}, {"dead_lettered", 1}});
}

// A lease that runs out while nobody calls (Redis catches up at the next call; a store closed
// meanwhile, at its reopen) is retried at lease end + wait, and that retry comes out in its place
// in due order among the jobs that fell due meanwhile: not ahead of one due before it.
TEST_P(Conformance, ALeasesRetryThatFellDueUnwatchedComesOutInDueOrder) {
  this->push("unwatched", "leased", 0ms, RetryPolicy::fixed(1s, 3), 200ms);
  const Delivery first = this->take("unwatched");
  const TimePoint retry_due = first.lease_deadline + 1s;
  // Due between the lease's end and its retry, however long the calls took.
  ASSERT_TRUE(this->q_->push({.topic = "unwatched", .id = "delayed",
                              .due_at = first.lease_deadline + 500ms}).ok());
  this->expect_due("delayed", first.lease_deadline + 500ms);
  ASSERT_LT(now(), retry_due) << "the take and the push took over a second";
  this->expect_due("leased", retry_due);
  if (this->keeps_jobs()) this->q_.reset();  // closed: a store catches up at its reopen
  while (now() <= retry_due + 50ms) std::this_thread::sleep_for(10ms);
  if (this->keeps_jobs()) ASSERT_NO_FATAL_FAILURE(this->open());
  EXPECT_EQ(this->take("unwatched").id, "delayed");
  const Delivery again = this->take("unwatched");
  EXPECT_EQ(again.id, "leased");
  EXPECT_EQ(again.attempt, 2u);
  EXPECT_EQ(again.due, retry_due);
}

TEST_P(Conformance, TouchExtendsTheLeaseWithoutCountingAnAttempt) {
  Queue& q = *this->q_;
  this->push("touch", "j", 0ms, RetryPolicy::fixed(0ms, 5), 700ms);
  Delivery d = this->take("touch");
  std::this_thread::sleep_for(100ms);
  const TimePoint before = now();
  Result<TimePoint> lease = q.touch(d.token);
  const TimePoint after = now();
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  EXPECT_TRUE(Between(*lease, before + 700ms, after + 700ms));
  EXPECT_GT(*lease, d.lease_deadline);
  JobInfo j = this->get("j");
  EXPECT_EQ(j.lease_deadline, *lease);
  EXPECT_EQ(j.attempts, 1u);
  EXPECT_EQ(j.state, JobState::reserved);
  // The lease now runs out at the new deadline, not the old one.
  this->expect_due("j", before + 700ms);
  Delivery again = this->take("touch");
  EXPECT_EQ(again.attempt, 2u);
  EXPECT_TRUE(q.touch(d.token).is(Errc::stale_token));
  EXPECT_TRUE(q.touch(again.token).ok());
  ASSERT_TRUE(q.ack(again.token).ok());
  EXPECT_TRUE(q.touch(again.token).is(Errc::not_found));
}

// ---- retries ----

TEST_P(Conformance, NackRetriesAfterThePolicysWaitOrAnExplicitOneThenDeadLetters) {
  Queue& q = *this->q_;
  this->push("nack", "j", 0ms, RetryPolicy::fixed(250ms, 4));
  // Nacks `d` and checks the job's new due time: `wait` from the nack.
  auto nack = [&](const Delivery& d, std::optional<Duration> delay, Duration wait) {
    const TimePoint before = now();
    Status s = q.nack(d.token, delay);
    const TimePoint after = now();
    EXPECT_TRUE(s.ok()) << s.to_string();
    JobInfo j = this->get("j");
    EXPECT_EQ(j.attempts, d.attempt);
    EXPECT_TRUE(Between(j.due, before + wait, after + wait));
    this->expect_due("j", before + wait);
    return before + wait;
  };
  Delivery d1 = this->take("nack");
  const TimePoint due = nack(d1, std::nullopt, 250ms);
  this->expect_waiting("j", due);
  EXPECT_TRUE(q.nack(d1.token).is(Errc::stale_token));  // already nacked
  Delivery d2 = this->take("nack");  // (take() checks each redelivery against the nack's due)
  EXPECT_EQ(d2.attempt, 2u);
  nack(d2, 60ms, 60ms);  // an explicit delay instead of the policy's
  Delivery d3 = this->take("nack");
  EXPECT_EQ(d3.attempt, 3u);
  nack(d3, 0ms, 0ms);  // a wait of 0: ready at once
  EXPECT_EQ(this->state("j"), "ready");
  Delivery d4 = this->take("nack");
  EXPECT_EQ(d4.attempt, 4u);
  // The last attempt: dead, the delay ignored.
  ASSERT_TRUE(q.nack(d4.token, 10min).ok());
  EXPECT_EQ(this->state("j"), "dead");
  EXPECT_EQ(this->get("j").attempts, 4u);
  const Stats st = q.stats();
  testing::expect_totals(st, {{"retried", 3}, {"dead_lettered", 1}});
  EXPECT_EQ(st.topics.at("nack"), (TopicStats{.dead = 1}));
}

TEST_P(Conformance, RetryPoliciesFixedListAndExponentialThenDeadLetters) {
  Queue& q = *this->q_;
  // Fails every delivery of `id` and checks each wait and that no retry comes early; returns the
  // number of deliveries until the job was dead.
  auto fail_until_dead = [&](const std::string& id, const std::vector<Duration>& waits) {
    uint32_t deliveries = 0;
    for (;;) {
      Delivery d = this->take("retry");
      if (d.id != id) {
        ADD_FAILURE() << "got " << d.id << " instead of " << id;
        return deliveries;
      }
      ++deliveries;
      EXPECT_EQ(d.attempt, deliveries);
      const TimePoint before = now();
      EXPECT_TRUE(q.nack(d.token).ok());
      const TimePoint after = now();
      if (deliveries > waits.size()) break;
      const Duration wait = waits[deliveries - 1];
      this->expect_due(id, before + wait);
      JobInfo j = this->get(id);
      if (wait == 0ms) {
        EXPECT_EQ(j.state, JobState::ready) << id;
      } else {
        this->expect_waiting(id, before + wait);
      }
      EXPECT_TRUE(Between(j.due, before + wait, after + wait)) << id << " retry " << deliveries;
    }
    EXPECT_EQ(this->state(id), "dead");
    return deliveries;
  };
  this->push("retry", "fixed", 0ms, RetryPolicy::fixed(40ms, 3));
  EXPECT_EQ(fail_until_dead("fixed", {40ms, 40ms}), 3u);

  // list: one delivery plus one per listed delay.
  this->push("retry", "list", 0ms, RetryPolicy::list({50ms, 0ms, 80ms}));
  EXPECT_EQ(this->get("list").max_attempts, 4u);
  EXPECT_EQ(fail_until_dead("list", {50ms, 0ms, 80ms}), 4u);
  // Past the end of the list, the last entry.
  RetryPolicy longer = RetryPolicy::list({30ms, 60ms});
  longer.max_attempts = 5;
  this->push("retry", "list-past-end", 0ms, longer);
  EXPECT_EQ(fail_until_dead("list-past-end", {30ms, 60ms, 60ms, 60ms}), 5u);

  // exponential: base * factor^(n-1), capped.
  this->push("retry", "exp", 0ms, RetryPolicy::exponential(40ms, 2.0, 100ms, 0.0, 4));
  EXPECT_EQ(fail_until_dead("exp", {40ms, 80ms, 100ms}), 4u);
  // A growth far past the cap (1e6^n): the cap, whatever n. Long waits, skipped with reschedule.
  this->push("retry", "steep", 0ms, RetryPolicy::exponential(10ms, 1e6, 30min, 0.0, 10));
  for (Duration wait : {Duration(10ms), Duration(30min), Duration(30min), Duration(30min)}) {
    Delivery d = this->take("retry");
    const TimePoint before = now();
    ASSERT_TRUE(q.nack(d.token).ok());
    EXPECT_TRUE(Between(this->get("steep").due, before + wait, now() + wait))
        << "attempt " << d.attempt;
    this->expect_due("steep", now());
    ASSERT_TRUE(q.reschedule("steep", now()).ok());
  }
  ASSERT_TRUE(q.cancel("steep").ok());

  // Jitter only shortens the wait, by up to its share. Long waits, skipped with reschedule.
  this->push("retry", "jitter", 0ms, RetryPolicy::exponential(10s, 2.0, 15s, 0.5, 10));
  for (Duration full : {10s, 15s, 15s}) {
    Delivery d = this->take("retry");
    const TimePoint before = now();
    ASSERT_TRUE(q.nack(d.token).ok());
    const TimePoint after = now();
    const TimePoint due = this->get("jitter").due;
    EXPECT_TRUE(Between(due, before + full / 2, after + full)) << "full wait " << full.count();
    this->expect_due("jitter", now());
    ASSERT_TRUE(q.reschedule("jitter", now()).ok());
  }
  ASSERT_TRUE(q.cancel("jitter").ok());

  // No policy given: the queue's default (exponential from 1 s, 10 attempts).
  this->push("retry", "default");
  EXPECT_EQ(this->get("default").max_attempts, 10u);
  Delivery d = this->take("retry");
  EXPECT_EQ(d.id, "default");
  EXPECT_EQ(d.max_attempts, 10u);
  const TimePoint before = now();
  ASSERT_TRUE(q.nack(d.token).ok());
  EXPECT_TRUE(Between(this->get("default").due, before + 1s, now() + 1s));
}

TEST_P(Conformance, DeadLetterMovesADeliveryToTheDeadLettersAtOnce) {
  Queue& q = *this->q_;
  this->push("dl", "j", 0ms, RetryPolicy::fixed(0ms, 10), 0ms, "body");
  Delivery d = this->take("dl");
  ASSERT_TRUE(q.dead_letter(d.token).ok());
  JobInfo j = this->get("j");
  EXPECT_EQ(j.state, JobState::dead);
  EXPECT_EQ(j.attempts, 1u);
  this->expect_stale(d.token);
  EXPECT_TRUE(q.reserve("dl", 0ms).is(Errc::timeout));
  Result<std::vector<JobInfo>> dead = q.list_dead("dl", 10);
  ASSERT_TRUE(dead.ok());
  ASSERT_EQ(dead->size(), 1u);
  EXPECT_EQ((*dead)[0].id, "j");
  EXPECT_EQ((*dead)[0].topic, "dl");
  EXPECT_EQ((*dead)[0].state, JobState::dead);
  EXPECT_EQ((*dead)[0].body, "body");
  EXPECT_EQ(q.stats().dead_lettered, 1u);
}

// ---- cancel, get, reschedule ----

TEST_P(Conformance, CancelRemovesAJobInEveryState) {
  Queue& q = *this->q_;
  Delivery held = this->every_state("c");
  this->push("c", "c-soon", 100ms);
  this->push("other", "o");
  for (const char* s : {"delayed", "ready", "reserved", "dead"}) {
    const std::string id = std::string("c-") + s;
    Status st = q.cancel(id);
    EXPECT_TRUE(st.ok()) << id << ": " << st.to_string();
    EXPECT_EQ(this->state(id), "gone");
    EXPECT_TRUE(q.cancel(id).is(Errc::not_found)) << id;
  }
  // The holder of the cancelled job is refused.
  EXPECT_TRUE(q.ack(held.token).is(Errc::not_found));
  EXPECT_TRUE(q.touch(held.token).is(Errc::not_found));
  Result<std::vector<JobInfo>> dead = q.list_dead("c", 10);
  ASSERT_TRUE(dead.ok());
  EXPECT_TRUE(dead->empty());
  // A cancelled delayed job never fires.
  ASSERT_TRUE(q.cancel("c-soon").ok());
  Result<Delivery> r = q.reserve("c", 300ms);
  EXPECT_TRUE(r.is(Errc::timeout)) << (r.ok() ? r->id : r.status().to_string());
  const Stats st = q.stats();
  EXPECT_EQ(st.topics.count("c"), 0u);
  EXPECT_EQ(st.topics.at("other"), (TopicStats{.ready = 1}));
  EXPECT_EQ(st.cancelled, 5u);
}

TEST_P(Conformance, GetReportsASnapshotOfTheJob) {
  Queue& q = *this->q_;
  std::string body;
  for (int i = 0; i < (this->text_only() ? 128 : 256); ++i) body.push_back(static_cast<char>(i));
  body += std::string("\0\0tail\0", 7);
  const TimePoint due = whole_us(now() + 20min);
  ASSERT_TRUE(this->push_r({.topic = "g",
                            .id = "j",
                            .due_at = due,
                            .ttr = 7s,
                            .body = body,
                            .retry = RetryPolicy::fixed(1s, 4)})
                  .ok());
  JobInfo j = this->get("j");
  EXPECT_EQ(j.id, "j");
  EXPECT_EQ(j.topic, "g");
  EXPECT_EQ(j.state, JobState::delayed);
  EXPECT_EQ(j.attempts, 0u);
  EXPECT_EQ(j.max_attempts, 4u);
  EXPECT_EQ(j.due, due);
  EXPECT_EQ(j.ttr, 7s);
  EXPECT_EQ(j.body.size(), body.size());
  EXPECT_EQ(j.body, body);

  TimePoint before = now();
  ASSERT_TRUE(q.reschedule("j", before - 1s).ok());
  this->expect_due("j", before);
  j = this->get("j");
  EXPECT_EQ(j.state, JobState::ready);
  EXPECT_TRUE(Between(j.due, before, now()));

  before = now();
  Delivery d = this->take("g");
  TimePoint after = now();
  EXPECT_EQ(d.body, body);
  EXPECT_EQ(d.max_attempts, 4u);
  EXPECT_TRUE(Between(d.lease_deadline, before + 7s, after + 7s));
  j = this->get("j");
  EXPECT_EQ(j.state, JobState::reserved);
  EXPECT_EQ(j.attempts, 1u);
  EXPECT_EQ(j.lease_deadline, d.lease_deadline);
  EXPECT_EQ(j.due, d.due);

  before = now();
  ASSERT_TRUE(q.nack(d.token).ok());
  after = now();
  j = this->get("j");
  EXPECT_EQ(j.state, JobState::delayed);
  EXPECT_EQ(j.attempts, 1u);
  EXPECT_TRUE(Between(j.due, before + 1s, after + 1s));
  EXPECT_EQ(j.body, body);
  // Rescheduling a retry keeps its attempt count.
  const TimePoint retry_at = whole_us(now() + 5min);
  ASSERT_TRUE(q.reschedule("j", retry_at).ok());
  j = this->get("j");
  EXPECT_EQ(j.attempts, 1u);
  EXPECT_EQ(j.due, retry_at);

  // ttr 0: the queue's default_ttr.
  this->push("g", "k");
  EXPECT_EQ(this->get("k").ttr, 30s);
  EXPECT_EQ(this->get("k").max_attempts, 10u);
}

// get() and list_dead() report what the queue applies to the job: the ttr and retry policy it was
// pushed with, else the queue's defaults as they were at the push (a reopen with other defaults
// changes nothing for jobs already pushed). Defaults unlike the library's, so that a backend
// reporting RetryPolicy{} or ttr 0 for "not given" is caught.
TEST_P(Conformance, GetReportsTheEffectiveTtrAndRetryPolicy) {
  if (backend_name() == "Http")
    GTEST_SKIP() << "delayqd's default retry policy is its own (the library's)";
  Limits limits = test_limits();
  limits.default_ttr = 45s;
  limits.default_retry = RetryPolicy::fixed(3s, 6);
  ASSERT_NO_FATAL_FAILURE(this->open(limits));
  const RetryPolicy own = RetryPolicy::exponential(500ms, 1.5, 1min, 0.25, 4);
  const RetryPolicy list = RetryPolicy::list({2s, 5s});
  // Due in 20 minutes (on disk in the tiered store) and due now (in memory), each way.
  this->push("e", "own-later", 20min, own, 7s);
  this->push("e", "own-now", 0ms, list, 2s);
  this->push("e", "default-later", 20min);
  this->push("e", "default-now");
  const auto expect = [&](const std::string& id, Duration ttr, const RetryPolicy& retry) {
    const JobInfo j = this->get(id);
    EXPECT_EQ(j.ttr, ttr) << id;
    EXPECT_EQ(j.retry, retry) << id;
    EXPECT_EQ(j.max_attempts, retry.max_attempts) << id;
  };
  expect("own-later", 7s, own);
  expect("own-now", 2s, list);
  expect("default-later", 45s, limits.default_retry);
  expect("default-now", 45s, limits.default_retry);

  // A dead letter is listed with its policy.
  this->push("d", "dead", 0ms, RetryPolicy::fixed(0ms, 1));
  this->nack_next("d");
  this->push("d", "dead-default", 0ms);
  ASSERT_TRUE(this->q_->dead_letter(this->take("d").token).ok());
  Result<std::vector<JobInfo>> dead = this->q_->list_dead("d", 10);
  ASSERT_TRUE(dead.ok()) << dead.status().to_string();
  ASSERT_EQ(dead->size(), 2u);
  EXPECT_EQ((*dead)[0].id, "dead");
  EXPECT_EQ((*dead)[0].retry, RetryPolicy::fixed(0ms, 1));
  EXPECT_EQ((*dead)[1].id, "dead-default");
  EXPECT_EQ((*dead)[1].retry, limits.default_retry);
  EXPECT_EQ((*dead)[1].ttr, 45s);

  if (this->keeps_jobs()) {
    Limits other = test_limits();
    other.default_ttr = 20s;
    other.default_retry = RetryPolicy::fixed(9s, 2);
    ASSERT_NO_FATAL_FAILURE(this->open(other));
    expect("own-later", 7s, own);
    expect("default-later", 45s, limits.default_retry);
    expect("default-now", 45s, limits.default_retry);
    this->push("e", "pushed-after");
    expect("pushed-after", 20s, other.default_retry);
  }
}

TEST_P(Conformance, RescheduleMovesDelayedAndReadyJobsOnly) {
  Queue& q = *this->q_;
  this->push("r", "j", 10min);
  const TimePoint later = whole_us(now() + 30min);
  ASSERT_TRUE(q.reschedule("j", later).ok());
  EXPECT_EQ(this->get("j").state, JobState::delayed);
  EXPECT_EQ(this->get("j").due, later);
  // The past means now.
  const TimePoint before = now();
  ASSERT_TRUE(q.reschedule("j", before - 1h).ok());
  JobInfo j = this->get("j");
  EXPECT_EQ(j.state, JobState::ready);
  EXPECT_TRUE(Between(j.due, before, now()));
  // Ready back to delayed, then due soon: delivered then, not before.
  ASSERT_TRUE(q.reschedule("j", whole_us(now() + 10min)).ok());
  EXPECT_EQ(this->state("j"), "delayed");
  const TimePoint soon = whole_us(now() + 150ms);
  ASSERT_TRUE(q.reschedule("j", soon).ok());
  this->expect_due("j", soon);
  Delivery d = this->take("r");
  EXPECT_EQ(d.due, soon);
  EXPECT_EQ(d.attempt, 1u);  // rescheduling counts no attempt
  // Reserved and dead jobs are refused.
  Status s = q.reschedule("j", now() + 1min);
  EXPECT_TRUE(s.is(Errc::invalid_state)) << s.to_string();
  EXPECT_EQ(this->state("j"), "reserved");
  ASSERT_TRUE(q.dead_letter(d.token).ok());
  s = q.reschedule("j", now());
  EXPECT_TRUE(s.is(Errc::invalid_state)) << s.to_string();
  EXPECT_EQ(this->state("j"), "dead");
  // Beyond max_delay: refused, nothing changed.
  this->push("r", "k", 10min);
  const TimePoint k_due = this->get("k").due;
  s = q.reschedule("k", now() + 1h + 1min);
  EXPECT_TRUE(s.is(Errc::invalid_argument)) << s.to_string();
  EXPECT_EQ(this->get("k").due, k_due);
  EXPECT_TRUE(q.reschedule("nope", now()).is(Errc::not_found));
  // A ready job rescheduled to now joins the back of the line.
  this->push("line", "first");
  this->push("line", "second");
  ASSERT_TRUE(q.reschedule("first", now()).ok());
  EXPECT_EQ(this->take("line").id, "second");
  EXPECT_EQ(this->take("line").id, "first");
}

// ---- dead letters ----

TEST_P(Conformance, DeadLettersAreListedRequeuedAndPurged) {
  Queue& q = *this->q_;
  for (const char* id : {"d1", "d2", "d3"}) {
    this->push("dead", id, 0ms, RetryPolicy::fixed(0ms, 1), 0ms, std::string("body of ") + id);
    this->nack_next("dead");
  }
  auto dead_ids = [&](size_t limit) {
    std::vector<std::string> ids;
    Result<std::vector<JobInfo>> l = q.list_dead("dead", limit);
    EXPECT_TRUE(l.ok()) << l.status().to_string();
    if (!l.ok()) return ids;
    for (const JobInfo& j : *l) {
      EXPECT_EQ(j.state, JobState::dead);
      EXPECT_EQ(j.topic, "dead");
      EXPECT_EQ(j.body, "body of " + j.id);
      ids.push_back(j.id);
    }
    return ids;
  };
  using Ids = std::vector<std::string>;
  EXPECT_EQ(dead_ids(10), (Ids{"d1", "d2", "d3"}));  // oldest first
  EXPECT_EQ(dead_ids(2), (Ids{"d1", "d2"}));
  EXPECT_EQ(dead_ids(0), Ids{});

  // requeue_dead: ready now at the back of the line, attempts back to zero, a full set of
  // deliveries again.
  this->push("dead", "waiting", 0ms, RetryPolicy::fixed(0ms, 1), 0ms, "body of waiting");
  ASSERT_TRUE(q.requeue_dead("d2").ok());
  JobInfo j = this->get("d2");
  EXPECT_EQ(j.state, JobState::ready);
  EXPECT_EQ(j.attempts, 0u);
  EXPECT_EQ(dead_ids(10), (Ids{"d1", "d3"}));
  Status s = q.requeue_dead("d2");
  EXPECT_TRUE(s.is(Errc::invalid_state)) << s.to_string();
  Delivery w = this->take("dead");
  EXPECT_EQ(w.id, "waiting");  // it was in the line before d2 came back
  ASSERT_TRUE(q.ack(w.token).ok());
  Delivery d = this->take("dead");
  EXPECT_EQ(d.id, "d2");
  EXPECT_EQ(d.attempt, 1u);
  s = q.requeue_dead("d2");
  EXPECT_TRUE(s.is(Errc::invalid_state)) << s.to_string();
  ASSERT_TRUE(q.nack(d.token).ok());
  EXPECT_EQ(dead_ids(10), (Ids{"d1", "d3", "d2"}));  // d2 is now the newest

  Result<uint64_t> n = q.requeue_dead_topic("dead");
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_EQ(*n, 3u);
  EXPECT_EQ(q.stats().topics["dead"], (TopicStats{.ready = 3}));
  EXPECT_EQ(dead_ids(10), Ids{});
  for (int i = 0; i < 3; ++i) this->nack_next("dead");
  n = q.purge_dead("dead");
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_EQ(*n, 3u);
  for (const char* id : {"d1", "d2", "d3"}) EXPECT_EQ(this->state(id), "gone") << id;
  EXPECT_EQ(dead_ids(10), Ids{});

  // Unknown topics: nothing, not an error.
  Result<std::vector<JobInfo>> none = q.list_dead("no-such-topic", 10);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(q.requeue_dead_topic("no-such-topic").value(), 0u);
  EXPECT_EQ(q.purge_dead("no-such-topic").value(), 0u);
  const Stats st = q.stats();
  EXPECT_EQ(st.topics.count("dead"), 0u);
  testing::expect_totals(st, {{"requeued", 4}, {"purged", 3}, {"dead_lettered", 7}});
}

// ---- stats ----

TEST_P(Conformance, StatsCountJobsPerTopicAndTotals) {
  Queue& q = *this->q_;
  this->push("s1", "a");                                  // ready
  this->push("s1", "b", 30min);                           // delayed
  this->push("s2", "c");                                  // reserved
  Delivery c = this->take("s2");
  this->push("s2", "d", 0ms, RetryPolicy::fixed(0ms, 1));  // dead
  this->nack_next("s2");
  this->push("s2", "e");                                  // acked
  ASSERT_TRUE(q.ack(this->take("s2").token).ok());
  this->push("s1", "f", 30min);                           // cancelled
  ASSERT_TRUE(q.cancel("f").ok());
  this->push("s3", "g", 0ms, RetryPolicy::fixed(0ms, 2));  // retried, dead, requeued: ready
  this->nack_next("s3");
  ASSERT_TRUE(q.dead_letter(this->take("s3").token).ok());
  this->push("s3", "h");                                  // dead, purged
  ASSERT_TRUE(q.dead_letter(this->take("s3").token).ok());
  ASSERT_TRUE(q.requeue_dead("g").ok());
  ASSERT_EQ(q.purge_dead("s3").value(), 1u);
  this->push("s4", "i", 0ms, RetryPolicy::fixed(30min, 3), 100ms);  // lease runs out: delayed
  const TimePoint taken = now();  // the lease runs out 100 ms after this, at the earliest
  this->take("s4");
  ASSERT_TRUE(this->eventually([&] { return q.stats().leases_expired == 1; }));
  EXPECT_GE(now(), taken + 100ms) << "the lease ran out early";

  const Stats st = q.stats();
  const std::map<std::string, TopicStats> want{
      {"s1", {.delayed = 1, .ready = 1}},
      {"s2", {.reserved = 1, .dead = 1}},
      {"s3", {.ready = 1}},
      {"s4", {.delayed = 1}},
  };
  EXPECT_EQ(st.topics, want);
  testing::expect_totals(st, {{"pushed", 9},
                              {"delivered", 7},
                              {"acked", 1},
                              {"retried", 2},
                              {"dead_lettered", 3},
                              {"leases_expired", 1},
                              {"cancelled", 1},
                              {"requeued", 1},
                              {"purged", 1}});
  EXPECT_TRUE(q.ack(c.token).ok());
}

// ---- ack_batch() ----

// Each token is settled as ack() would settle it had the tokens come one after the other: the
// same Errc and words for the refused ones (an ack refused beforehand changes nothing, so its
// Status is the one to match), a token given twice found gone the second time, other topics and
// unknown ids in the same batch.
TEST_P(Conformance, AckBatchSettlesEachTokenAsAckWould) {
  Queue& q = *this->q_;
  for (const char* id : {"ab-1", "ab-2", "ab-3", "ab-4", "ab-5"}) this->push("ab", id);
  this->push("ab-other", "ab-x");
  std::map<std::string, Delivery> d;
  for (int i = 0; i < 5; ++i) {
    Delivery one = this->take("ab");
    d[one.id] = one;
  }
  d["ab-x"] = this->take("ab-other");
  ASSERT_EQ(d.size(), 6u);
  ASSERT_TRUE(q.ack(d["ab-1"].token).ok());
  ASSERT_TRUE(q.nack(d["ab-2"].token, 0ms).ok());
  const Delivery again = this->take("ab");
  ASSERT_EQ(again.id, "ab-2");
  ASSERT_TRUE(q.cancel("ab-3").ok());
  const Token unknown{"ab-never-pushed", 1};
  // What ack() says of the tokens it refuses (a refused ack changes nothing).
  const Status acked_before = q.ack(d["ab-1"].token);
  const Status stale = q.ack(d["ab-2"].token);
  const Status cancelled = q.ack(d["ab-3"].token);
  const Status never = q.ack(unknown);
  ASSERT_TRUE(stale.is(Errc::stale_token)) << stale.to_string();

  const std::vector<Token> tokens{d["ab-1"].token, d["ab-2"].token, again.token,
                                  d["ab-3"].token, d["ab-4"].token, d["ab-4"].token,
                                  d["ab-x"].token, unknown,         d["ab-5"].token};
  const std::vector<Status> got = q.ack_batch(tokens);
  ASSERT_EQ(got.size(), tokens.size());
  EXPECT_EQ(got[0].to_string(), acked_before.to_string());
  EXPECT_EQ(got[1].to_string(), stale.to_string());
  EXPECT_TRUE(got[2].ok()) << got[2].to_string();
  EXPECT_EQ(got[3].to_string(), cancelled.to_string());
  EXPECT_TRUE(got[4].ok()) << got[4].to_string();
  EXPECT_TRUE(got[5].is(Errc::not_found)) << got[5].to_string();  // acked just before
  EXPECT_TRUE(got[6].ok()) << got[6].to_string();
  EXPECT_EQ(got[7].to_string(), never.to_string());
  EXPECT_TRUE(got[8].ok()) << got[8].to_string();
  for (const char* id : {"ab-1", "ab-2", "ab-3", "ab-4", "ab-5", "ab-x"})
    EXPECT_EQ(this->state(id), "gone") << id;
  EXPECT_EQ(q.stats().acked, 5u);
  EXPECT_TRUE(q.ack_batch({}).empty());
}

// ---- push_batch ----

TEST_P(Conformance, PushBatchPushesEachSpecOnItsOwn) {
  Queue& q = *this->q_;
  this->push("batch", "exists");
  std::vector<JobSpec> specs;
  specs.push_back({.topic = "batch", .id = "b1", .body = "one"});
  specs.push_back({.topic = "", .id = "bad-topic"});
  specs.push_back({.topic = "batch", .id = "b1"});      // taken by the first spec
  specs.push_back({.topic = "batch", .id = "exists"});  // taken before the batch
  specs.push_back({.topic = "batch", .body = "generated"});
  specs.push_back({.topic = "batch", .id = "fat", .body = std::string(4097, 'x')});
  specs.push_back({.topic = "batch", .id = "b2", .delay = 30min});
  specs.push_back({.topic = "batch", .id = "neg", .delay = -1s});
  specs.push_back({.topic = "batch", .id = "b3", .body = "three"});
  const TimePoint before = now();
  std::vector<TimePoint> due;
  for (const JobSpec& spec : specs) due.push_back(before + spec.delay.value_or(0ms));
  std::vector<Result<std::string>> r = q.push_batch(std::move(specs));
  ASSERT_EQ(r.size(), 9u);
  for (size_t i = 0; i < r.size(); ++i)
    if (r[i].ok()) this->expect_due(*r[i], due[i]);
  EXPECT_TRUE(r[0].ok() && *r[0] == "b1") << r[0].status().to_string();
  EXPECT_TRUE(r[1].is(Errc::invalid_argument)) << r[1].status().to_string();
  EXPECT_TRUE(r[2].is(Errc::duplicate_id)) << r[2].status().to_string();
  EXPECT_TRUE(r[3].is(Errc::duplicate_id)) << r[3].status().to_string();
  ASSERT_TRUE(r[4].ok()) << r[4].status().to_string();
  EXPECT_FALSE(r[4]->empty());
  EXPECT_TRUE(r[5].is(Errc::invalid_argument)) << r[5].status().to_string();
  EXPECT_TRUE(r[6].ok() && *r[6] == "b2") << r[6].status().to_string();
  EXPECT_TRUE(r[7].is(Errc::invalid_argument)) << r[7].status().to_string();
  EXPECT_TRUE(r[8].ok() && *r[8] == "b3") << r[8].status().to_string();
  EXPECT_EQ(this->state("bad-topic"), "gone");
  EXPECT_EQ(this->state("fat"), "gone");
  EXPECT_EQ(this->state("neg"), "gone");
  EXPECT_EQ(this->state("b2"), "delayed");
  EXPECT_EQ(this->get("exists").body, "");
  // The good ones joined the line in the batch's order.
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) order.push_back(this->take("batch").id);
  EXPECT_EQ(order, (std::vector<std::string>{"exists", "b1", *r[4], "b3"}));
  EXPECT_EQ(q.stats().pushed, 5u);
  // An empty batch is no error.
  EXPECT_TRUE(q.push_batch({}).empty());
}

// ---- consume() ----

TEST_P(Conformance, ConsumeActsOnTheHandlersResult) {
  Queue& q = *this->q_;
  this->push("cons", "ack");
  this->push("cons", "retry-later", 0ms, RetryPolicy::fixed(0ms, 5));
  this->push("cons", "dead");
  this->push("cons", "throws", 0ms, RetryPolicy::fixed(80ms, 5));
  this->push("cons", "out-of-attempts", 0ms, RetryPolicy::fixed(0ms, 2));
  std::mutex mu;
  std::map<std::string, std::vector<uint32_t>> attempts;
  std::map<std::string, TimePoint> returned;  // when each job's handler last returned
  std::map<std::string, TimePoint> early;     // the first instant its next delivery may come
  std::vector<std::string> came_early;
  Consumer c = q.consume(
      "cons",
      [&](const Delivery& d) -> HandlerResult {
        std::lock_guard lock(mu);
        const TimePoint at = now();
        if (early.count(d.id) && at < early[d.id]) came_early.push_back(d.id);
        attempts[d.id].push_back(d.attempt);
        const size_t n = attempts[d.id].size();
        returned[d.id] = at;
        if (d.id == "retry-later" && n == 1) {
          early[d.id] = at + 100ms;
          return HandlerResult::retry(100ms);
        }
        if (d.id == "throws" && n == 1) {
          early[d.id] = at + 80ms;
          throw std::runtime_error("a handler that throws fails the attempt");
        }
        if (d.id == "dead") return HandlerResult::dead_letter();
        if (d.id == "out-of-attempts") return HandlerResult::retry();
        return HandlerResult::ack();
      },
      2);
  // ack 1 + retry-later 2 + dead 1 + throws 2 + out-of-attempts 2.
  EXPECT_TRUE(this->eventually([&] { return c.handled() >= 8; })) << c.handled();
  c.stop();
  EXPECT_EQ(c.handled(), 8u);
  // A stopped consumer takes nothing more.
  this->push("cons", "after-stop");
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(this->state("after-stop"), "ready");
  std::lock_guard lock(mu);
  EXPECT_TRUE(came_early.empty()) << came_early.front() << " was redelivered early";
  using Attempts = std::vector<uint32_t>;
  EXPECT_EQ(attempts["ack"], Attempts{1});
  EXPECT_EQ(attempts["retry-later"], (Attempts{1, 2}));
  EXPECT_EQ(attempts["dead"], Attempts{1});
  EXPECT_EQ(attempts["throws"], (Attempts{1, 2}));
  EXPECT_EQ(attempts["out-of-attempts"], (Attempts{1, 2}));
  for (const char* id : {"ack", "retry-later", "throws"}) EXPECT_EQ(this->state(id), "gone") << id;
  EXPECT_EQ(this->state("dead"), "dead");
  EXPECT_EQ(this->state("out-of-attempts"), "dead");
  const Stats st = q.stats();
  testing::expect_totals(st, {{"acked", 3}, {"retried", 3}, {"dead_lettered", 2}});
}

// Many jobs ready at once: consume() takes them in batches (on the backends that can) and acks
// them together; every job reaches the handler once and is acked.
TEST_P(Conformance, ConsumeHandlesManyReadyJobsOnceEachAndAcksThemAll) {
  Queue& q = *this->q_;
  constexpr int kJobs = 300;
  this->push_ready("many", kJobs);
  std::mutex mu;
  std::map<std::string, int> seen;
  Consumer c = q.consume(
      "many",
      [&](const Delivery& d) {
        std::lock_guard lock(mu);
        ++seen[d.id];
        return HandlerResult::ack();
      },
      2);
  EXPECT_TRUE(this->eventually([&] { return c.handled() >= kJobs; })) << c.handled();
  c.stop();
  EXPECT_EQ(c.handled(), uint64_t{kJobs});
  std::lock_guard lock(mu);
  EXPECT_EQ(seen.size(), size_t{kJobs});
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << id;
  Stats st = q.stats();
  EXPECT_EQ(st.acked, uint64_t{kJobs});
  EXPECT_EQ(st.topics["many"].ready + st.topics["many"].reserved, 0u);
}

// A consumer stopped while its threads hold jobs they have not handed to the handler gives them
// back undone (release()): every job is either handled and acked, or ready again with no
// attempt counted; none stays reserved. However the stop falls, that holds.
TEST_P(Conformance, AStoppedConsumerGivesBackTheJobsItHasNotHandled) {
  Queue& q = *this->q_;
  constexpr int kJobs = 200;
  this->push_ready("stop", kJobs);
  std::atomic<int> calls{0};
  Consumer c = q.consume("stop", [&](const Delivery&) {
    // Slow from the 100th call on: the stop below comes while jobs wait in a batch.
    if (calls.fetch_add(1) >= 100) std::this_thread::sleep_for(20ms);
    return HandlerResult::ack();
  });
  EXPECT_TRUE(this->eventually([&] { return calls.load() > 100; }));
  c.stop();
  const uint64_t handled = c.handled();
  Stats st = q.stats();
  EXPECT_EQ(st.acked, handled);
  EXPECT_EQ(st.topics["stop"].reserved, 0u);
  EXPECT_EQ(st.topics["stop"].ready, kJobs - handled);
  EXPECT_LE(st.released, st.topics["stop"].ready);  // the rest were never taken
  for (int i = 0; i < kJobs; ++i) {
    Result<JobInfo> j = q.get(std::to_string(i));
    if (j.ok()) {
      EXPECT_EQ(j->attempts, 0u) << i;
    }
  }
}

// ---- reserve_async() ----

TEST_P(Conformance, ReserveAsyncDeliversTimesOutAndIsNeverEarly) {
  Queue& q = *this->q_;
  std::promise<std::pair<Result<Delivery>, TimePoint>> got;
  q.reserve_async({"as-x", "as-y"}, kLong, [&](Result<Delivery> d) {
    got.set_value({std::move(d), now()});
  });
  const TimePoint due = whole_us(now() + 120ms);
  ASSERT_TRUE(q.push({.topic = "as-y", .id = "y", .due_at = due}).ok());
  auto f = got.get_future();
  ASSERT_EQ(f.wait_for(kLong + 5s), std::future_status::ready);
  auto [d, at] = f.get();
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, "y");
  EXPECT_EQ(d->topic, "as-y");
  EXPECT_GE(at, due);
  EXPECT_TRUE(q.ack(d->token).ok());

  // Nothing becomes ready: timeout, once.
  std::atomic<int> calls{0};
  std::promise<Status> timed_out;
  const auto start = std::chrono::steady_clock::now();
  q.reserve_async({"as-x"}, 150ms, [&](Result<Delivery> r) {
    if (calls.fetch_add(1) == 0) timed_out.set_value(r.status());
  });
  auto t = timed_out.get_future();
  ASSERT_EQ(t.wait_for(kLong), std::future_status::ready);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms - 1ms);
  Status s = t.get();
  EXPECT_TRUE(s.is(Errc::timeout)) << s.to_string();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(calls.load(), 1);
}

// ---- close() ----

TEST_P(Conformance, CloseEndsWaitsAndLaterCallsFailWithClosed) {
  Queue& q = *this->q_;
  Delivery held = this->every_state("cl");
  auto blocked = std::async(std::launch::async, [&] { return q.reserve("cl-empty", kLong); });
  std::promise<Status> async_closed;
  q.reserve_async({"cl-empty"}, kLong,
                  [&](Result<Delivery> r) { async_closed.set_value(r.status()); });
  std::this_thread::sleep_for(100ms);  // (either way, the waits must end with `closed`)
  q.close();
  ASSERT_EQ(blocked.wait_for(kLong), std::future_status::ready);
  EXPECT_TRUE(blocked.get().is(Errc::closed));
  auto f = async_closed.get_future();
  ASSERT_EQ(f.wait_for(kLong), std::future_status::ready);
  Status s = f.get();
  EXPECT_TRUE(s.is(Errc::closed)) << s.to_string();

  auto is_closed = [](const auto& r) { return r.is(Errc::closed); };
  EXPECT_TRUE(is_closed(q.push({.topic = "cl", .id = "late"})));
  for (const Result<std::string>& r : q.push_batch({{.topic = "cl"}, {.topic = ""}}))
    EXPECT_TRUE(is_closed(r)) << r.status().to_string();
  EXPECT_TRUE(is_closed(q.reserve("cl", 0ms)));
  EXPECT_TRUE(is_closed(q.reserve("cl", kLong)));
  bool called = false;
  q.reserve_async({"cl"}, kLong, [&](Result<Delivery> r) {
    called = true;
    EXPECT_TRUE(r.is(Errc::closed)) << r.status().to_string();
  });
  EXPECT_TRUE(called) << "a refused reserve_async runs its callback on the calling thread";
  EXPECT_TRUE(is_closed(q.ack(held.token)));
  EXPECT_TRUE(is_closed(q.nack(held.token)));
  EXPECT_TRUE(is_closed(q.dead_letter(held.token)));
  EXPECT_TRUE(is_closed(q.touch(held.token)));
  EXPECT_TRUE(is_closed(q.cancel("cl-ready")));
  EXPECT_TRUE(is_closed(q.get("cl-ready")));
  EXPECT_TRUE(is_closed(q.reschedule("cl-delayed", now())));
  EXPECT_TRUE(is_closed(q.list_dead("cl", 10)));
  EXPECT_TRUE(is_closed(q.requeue_dead("cl-dead")));
  EXPECT_TRUE(is_closed(q.requeue_dead_topic("cl")));
  EXPECT_TRUE(is_closed(q.purge_dead("cl")));
  q.close();  // idempotent
  // stats() still answers (checked below, after the reopen that a known difference would skip).
  const Stats st = q.stats();

  // Jobs stay where they were: a backend that keeps them has them at the next open. (The store
  // lets go of its directory when the queue is destroyed, not at close(): open() does both.)
  if (this->keeps_jobs()) {
    ASSERT_NO_FATAL_FAILURE(this->open());
    for (const char* s : {"delayed", "ready", "reserved", "dead"})
      EXPECT_EQ(this->state(std::string("cl-") + s), std::string(s));
  }

  EXPECT_EQ(st.pushed, 4u);
  ASSERT_EQ(st.topics.count("cl"), 1u);
  EXPECT_EQ(st.topics.at("cl"), (TopicStats{.delayed = 1, .ready = 1, .reserved = 1, .dead = 1}));
}

// ---- fork() ----

// Runs `child` in a process forked from this one (threads, locks and all), which writes what it
// saw to a pipe and ends with _exit; returns what it wrote, or what went wrong. A child that does
// not end within kLong is killed: a queue that hangs in a forked child fails here.
std::string run_forked(const std::function<std::string()>& child) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    ::close(fds[0]);
    const std::string said = child();
    (void)!::write(fds[1], said.data(), said.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string said;
  const auto deadline = std::chrono::steady_clock::now() + kLong;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{.fd = fds[0], .events = POLLIN, .revents = 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      said += "\n(the child hung: killed)";
      ::kill(pid, SIGKILL);
      break;
    }
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    said.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) said += "\n(the child did not exit 0)";
  return said;
}

// A queue used in a child forked after it was opened refuses every call with `closed`, naming
// fork (never an ok that would be lost: the parent's threads and store are not the child's),
// and closing or destroying it there hangs on nothing and leaves the parent's queue as it was.
// Seen to fail before the fork guard: the child's push and cancel returned ok.
TEST_P(Conformance, AQueueUsedInAForkedChildRefusesEveryCall) {
  Queue& q = *this->q_;
  Delivery held = this->every_state("fk");
  // A schedule and a topic's limits of the parent's, which the child's calls would change.
  ScheduleSpec sched;
  sched.id = "fk-schedule";
  sched.rule = "every 1h";
  sched.job = {.topic = "fk-scheduled"};
  ASSERT_TRUE(q.schedule(sched).ok());
  ASSERT_TRUE(q.set_topic_limits("fk-limited", {.max_in_flight = 3}).ok());
  const std::string said = run_forked([&] {
    std::string out;
    auto note = [&](const char* call, const Status& s) {
      const bool refused = s.is(Errc::closed) && s.message().find("forked") != std::string::npos;
      if (!refused) out += std::string(call) + ": " + s.to_string() + "\n";
    };
    note("push", q.push({.topic = "fk", .id = "fk-child"}).status());
    for (const Result<std::string>& r : q.push_batch({{.topic = "fk"}, {.topic = "fk"}}))
      note("push_batch", r.status());
    note("reserve", q.reserve("fk", 0ms).status());
    note("reserve (waiting)", q.reserve("fk", kLong).status());
    bool called = false;
    q.reserve_async({"fk"}, kLong, [&](Result<Delivery> r) {
      called = true;
      note("reserve_async", r.status());
    });
    if (!called) out += "reserve_async: its callback did not run on the calling thread\n";
    note("ack", q.ack(held.token));
    for (const Status& s : q.ack_batch(std::vector<Token>{held.token})) note("ack_batch", s);
    note("nack", q.nack(held.token));
    note("dead_letter", q.dead_letter(held.token));
    note("release", q.release(held.token));
    note("touch", q.touch(held.token).status());
    note("cancel", q.cancel("fk-ready"));
    note("get", q.get("fk-ready").status());
    note("reschedule", q.reschedule("fk-delayed", now()));
    note("list_dead", q.list_dead("fk", 10).status());
    note("requeue_dead", q.requeue_dead("fk-dead"));
    note("requeue_dead_topic", q.requeue_dead_topic("fk").status());
    note("purge_dead", q.purge_dead("fk").status());
    note("pause", q.pause("fk"));
    note("resume", q.resume("fk"));
    note("health", q.health());
    note("set_topic_limits", q.set_topic_limits("fk-limited", {.max_in_flight = 1}));
    note("set_topic_limits (new topic)", q.set_topic_limits("fk-other", {.max_in_flight = 1}));
    note("clear_topic_limits", q.clear_topic_limits("fk-limited"));
    note("list_jobs", q.list_jobs("fk", JobState::ready, 10).status());
    note("schedule", q.schedule(sched));
    ScheduleSpec other = sched;
    other.id = "fk-child-schedule";
    note("schedule (new id)", q.schedule(other));
    note("get_schedule", q.get_schedule("fk-schedule").status());
    note("list_schedules", q.list_schedules(10).status());
    note("pause_schedule", q.pause_schedule("fk-schedule"));
    note("resume_schedule", q.resume_schedule("fk-schedule"));
    note("unschedule", q.unschedule("fk-schedule"));
    const Stats st = q.stats();
    if (st.pushed != 0 || !st.topics.empty()) out += "stats: not empty in the child\n";
    q.close();
    this->q_.reset();  // the destructor, in the child
    return out + "end";
  });
  EXPECT_EQ(said, "end");
  // The parent's queue is as it was, and goes on.
  for (const char* s : {"delayed", "ready", "reserved", "dead"})
    EXPECT_EQ(this->state(std::string("fk-") + s), std::string(s));
  EXPECT_TRUE(q.get("fk-child").is(Errc::not_found));
  Result<ScheduleInfo> kept = q.get_schedule("fk-schedule");
  ASSERT_TRUE(kept.ok()) << kept.status().to_string();
  EXPECT_FALSE(kept->paused);
  EXPECT_TRUE(q.get_schedule("fk-child-schedule").is(Errc::not_found));
  EXPECT_TRUE(q.unschedule("fk-schedule").ok());
  const Stats parent = q.stats();
  ASSERT_TRUE(parent.flow.count("fk-limited"));
  EXPECT_EQ(parent.flow.at("fk-limited").limits.max_in_flight, 3u);
  EXPECT_FALSE(parent.flow.count("fk-other"));
  EXPECT_TRUE(q.ack(held.token).ok());
  this->push("fk", "fk-after");
  EXPECT_EQ(this->take("fk").id, "fk-ready");
}

// ---- reopening ----

TEST_P(Conformance, AReopenedQueueHasItsJobsTokensAndTotals) {
  if (!this->keeps_jobs()) {
    GTEST_SKIP() << "the memory engine's jobs end with the queue";
  } else {
    Queue* q = this->q_.get();
    const std::string body("bin\0ary\xff", this->text_only() ? 7 : 8);
    const TimePoint due = whole_us(now() + 20min);
    ASSERT_TRUE(this->push_r({.topic = "re",
                              .id = "later",
                              .due_at = due,
                              .ttr = 9s,
                              .body = body,
                              .retry = RetryPolicy::list({1s, 2s})})
                    .ok());
    this->push("re", "held", 0ms, RetryPolicy::fixed(0ms, 5), 400ms);
    const TimePoint taken = now();
    Delivery held = this->take("re");
    this->push("re", "dead", 0ms, RetryPolicy::fixed(0ms, 1));
    this->nack_next("re");
    this->push("re", "done");
    ASSERT_TRUE(q->ack(this->take("re").token).ok());
    const Stats before = q->stats();

    ASSERT_NO_FATAL_FAILURE(this->open());
    q = this->q_.get();
    JobInfo j = this->get("later");
    EXPECT_EQ(j.state, JobState::delayed);
    EXPECT_EQ(j.due, due);
    EXPECT_EQ(j.ttr, 9s);
    EXPECT_EQ(j.max_attempts, 3u);
    EXPECT_EQ(j.body, body);
    EXPECT_EQ(this->state("dead"), "dead");
    EXPECT_EQ(this->state("done"), "gone");
    EXPECT_TRUE(q->push({.topic = "re", .id = "later"}).is(Errc::duplicate_id));
    // The reservation comes back when its lease runs out, the attempt counted; its token is
    // still refused afterwards.
    this->expect_due("held", taken + 400ms);
    Delivery again = this->take("re");
    EXPECT_EQ(again.id, "held");
    EXPECT_EQ(again.attempt, 2u);
    EXPECT_GT(again.token.fence, held.token.fence);
    EXPECT_TRUE(q->ack(held.token).is(Errc::stale_token));
    ASSERT_TRUE(q->ack(again.token).ok());
    const Stats after = q->stats();
    testing::expect_totals(after, {{"pushed", before.pushed},
                                   {"delivered", before.delivered + 1},
                                   {"acked", before.acked + 1},
                                   {"dead_lettered", before.dead_lettered},
                                   {"leases_expired", before.leases_expired + 1}});
  }
}

// ---- giving a delivery back: release() and withdrawn waits ----

TEST_P(Conformance, ReleaseUndoesADeliveryAsIfItHadNeverBeenMade) {
  Queue& q = *this->q_;
  // One attempt only: a delivery that counted would leave it dead.
  this->push("rel", "a", 0ms, RetryPolicy::fixed(0ms, 1));
  this->push("rel", "b");
  this->push("rel", "c");
  const Stats before = q.stats();
  Delivery a = this->take("rel");
  ASSERT_EQ(a.id, "a");
  EXPECT_EQ(a.attempt, 1u);
  ASSERT_TRUE(q.release(a.token).ok());
  JobInfo j = this->get("a");
  EXPECT_EQ(j.state, JobState::ready);
  EXPECT_EQ(j.attempts, 0u);
  // The token is stale, whatever it is used for; an unknown job is not found.
  this->expect_stale(a.token);
  EXPECT_TRUE(q.release(Token{"no-such-job", a.token.fence}).is(Errc::not_found));
  // Back at the front of its line, where it was; delivered as a first attempt again.
  Delivery again = this->take("rel");
  EXPECT_EQ(again.id, "a");
  EXPECT_EQ(again.attempt, 1u);
  EXPECT_GT(again.token.fence, a.token.fence);
  ASSERT_TRUE(q.ack(again.token).ok());
  // Released one after the other, b and c come out in due order again: c goes behind b.
  Delivery b = this->take("rel");
  Delivery c = this->take("rel");
  ASSERT_EQ(b.id, "b");
  ASSERT_EQ(c.id, "c");
  ASSERT_TRUE(q.release(b.token).ok());
  ASSERT_TRUE(q.release(c.token).ok());
  EXPECT_EQ(this->take("rel").id, "b");
  EXPECT_EQ(this->take("rel").id, "c");
  const Stats after = q.stats();
  testing::expect_totals(after, {{"released", before.released + 3},
                                 {"retried", before.retried},
                                 {"dead_lettered", before.dead_lettered},
                                 {"leases_expired", before.leases_expired}});
  EXPECT_EQ(after.topics.at("rel"), (TopicStats{.reserved = 2}));
}

TEST_P(Conformance, AReleasedJobKeepsItsDueTimeAndItsPlaceAmongEqualDueTimes) {
  Queue& q = *this->q_;
  const TimePoint due = whole_us(now() + 100ms);
  for (const char* id : {"t1", "t2", "t3"}) {
    ASSERT_TRUE(q.push({.topic = "tie", .id = id, .due_at = due}).ok());
    this->expect_due(id, due);
  }
  std::map<std::string, Delivery> taken;
  for (int i = 0; i < 3; ++i) {
    Delivery d = this->take("tie");
    taken[d.id] = d;
  }
  ASSERT_EQ(taken.size(), 3u);
  // In an order that only push order among equal due times sorts out: neither always in
  // front of the equals nor always behind them.
  for (const char* id : {"t2", "t3", "t1"}) ASSERT_TRUE(q.release(taken[id].token).ok()) << id;
  for (const char* id : {"t1", "t2", "t3"}) {
    Delivery d = this->take("tie");
    EXPECT_EQ(d.id, id);
    EXPECT_EQ(d.due, due) << id;
    EXPECT_EQ(d.attempt, 1u) << id;
  }
}

TEST_P(Conformance, AReleaseSurvivesAReopen) {
  if (!this->keeps_jobs()) {
    GTEST_SKIP() << "the memory engine's jobs end with the queue";
  } else {
    Queue* q = this->q_.get();
    this->push("rr", "kept", 0ms, RetryPolicy::fixed(0ms, 1), 1h);
    Delivery d = this->take("rr");
    ASSERT_TRUE(q->release(d.token).ok());
    const Stats before = q->stats();
    ASSERT_NO_FATAL_FAILURE(this->open());
    q = this->q_.get();
    JobInfo j = this->get("kept");
    EXPECT_EQ(j.state, JobState::ready);
    EXPECT_EQ(j.attempts, 0u);
    EXPECT_EQ(q->stats().released, before.released);
    EXPECT_TRUE(q->ack(d.token).is(Errc::stale_token));
    Delivery again = this->take("rr");
    EXPECT_EQ(again.attempt, 1u);
    ASSERT_TRUE(q->ack(again.token).ok());
  }
}

TEST_P(Conformance, AWithdrawnReserveAsyncIsCancelledAndReservesNothing) {
  Queue& q = *this->q_;
  std::atomic<int> calls{0};
  std::promise<Status> ended;
  std::stop_source withdraw;
  q.reserve_async(
      {"wd"}, kLong,
      [&](Result<Delivery> r) {
        if (calls.fetch_add(1) == 0) ended.set_value(r.status());
      },
      withdraw.get_token());
  std::this_thread::sleep_for(50ms);  // usually waiting by now; either way it must end
  withdraw.request_stop();
  auto f = ended.get_future();
  ASSERT_EQ(f.wait_for(kLong), std::future_status::ready);
  Status s = f.get();
  EXPECT_TRUE(s.is(Errc::cancelled)) << s.to_string();
  // A job that comes afterwards is not taken by the withdrawn wait.
  this->push("wd", "after");
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(this->state("after"), "ready");
  EXPECT_EQ(this->get("after").attempts, 0u);
  EXPECT_EQ(calls.load(), 1);

  // Withdrawn before it was made: cancelled, and the ready job stays.
  std::promise<Status> at_once;
  std::stop_source early;
  early.request_stop();
  q.reserve_async(
      {"wd"}, kLong, [&](Result<Delivery> r) { at_once.set_value(r.status()); }, early.get_token());
  auto g = at_once.get_future();
  ASSERT_EQ(g.wait_for(kLong), std::future_status::ready);
  EXPECT_TRUE(g.get().is(Errc::cancelled));
  EXPECT_EQ(this->state("after"), "ready");
  EXPECT_EQ(this->take("wd").attempt, 1u);
}

// ---- pause and resume a topic ----

namespace pause_tests {
// reserve() of `topics` with a short wait, expected to find nothing (the topics are paused).
template <class Q>
void expect_nothing(Q& q, const std::vector<std::string>& topics) {
  Result<Delivery> r = q.reserve(topics, 100ms);
  EXPECT_TRUE(r.is(Errc::timeout)) << (r.ok() ? r->id + " was handed out" : r.status().to_string());
}
}  // namespace pause_tests

TEST_P(Conformance, APausedTopicHandsOutNothingWhileOtherTopicsRunOn) {
  Queue& q = *this->q_;
  ASSERT_TRUE(q.pause("held").ok());
  ASSERT_TRUE(q.pause("held").ok());      // pausing a paused topic changes nothing
  ASSERT_TRUE(q.resume("running").ok());  // nor does resuming a running one
  this->push("held", "h1");
  this->push("held", "h2", 0ms, std::nullopt, 0ms, "body");
  this->push("running", "r1");
  pause_tests::expect_nothing(q, {"held"});
  // Over several topics, the others are served.
  EXPECT_EQ(this->take(std::vector<std::string>{"held", "running"}).id, "r1");
  pause_tests::expect_nothing(q, {"held", "running"});
  // The paused topic's jobs are ready (they fell due) and every call but reserve works on them.
  EXPECT_EQ(this->state("h1"), "ready");
  EXPECT_EQ(this->get("h2").body, "body");
  EXPECT_TRUE(q.cancel("h2").ok());
  EXPECT_TRUE(q.reschedule("h1", now() + 30min).ok());
  EXPECT_EQ(this->state("h1"), "delayed");
  this->push("held", "h3", 0ms, RetryPolicy::fixed(0ms, 1));
  EXPECT_TRUE(q.push({.topic = "held", .id = "h3"}).is(Errc::duplicate_id));
  const TopicStats held = q.stats().topics["held"];
  EXPECT_TRUE(held.paused);
  EXPECT_EQ(held.delayed, 1u);
  EXPECT_EQ(held.ready, 1u);
  EXPECT_FALSE(q.stats().topics["running"].paused);
  // A topic is checked as push() checks it.
  EXPECT_TRUE(q.pause("").is(Errc::invalid_argument));
  EXPECT_TRUE(q.resume(std::string(kMaxTopicBytes + 1, 't')).is(Errc::invalid_argument));
  Status bad = q.pause(std::string("bad\xff", 4));
  EXPECT_TRUE(bad.is(Errc::invalid_argument));
  EXPECT_NE(bad.message().find("UTF-8"), std::string::npos) << bad.to_string();
  ASSERT_TRUE(q.resume("held").ok());
  EXPECT_EQ(this->take("held").id, "h3");
}

TEST_P(Conformance, OnResumeAPausedTopicsJobsComeOutInDueOrder) {
  Queue& q = *this->q_;
  ASSERT_TRUE(q.pause("order").ok());
    const std::vector<Ahead> jobs{
      {"order", "c", 60ms}, {"order", "a1", 0ms}, {"order", "b", 30ms}, {"order", "a2", 0ms}};
  const TimePoint t0 = this->push_ahead(jobs);
  ASSERT_NE(t0, TimePoint{});
  // All of them fall due while the topic is paused; then one is pushed due now.
  while (now() < t0 + 100ms) std::this_thread::sleep_for(10ms);
  pause_tests::expect_nothing(q, {"order"});
  this->push("order", "now");
  EXPECT_EQ(q.stats().topics["order"].ready, 5u);
  ASSERT_TRUE(q.resume("order").ok());
  std::vector<std::string> order;
  for (size_t i = 0; i < 5; ++i) {
    Delivery d = this->take("order");
    order.push_back(d.id);
    EXPECT_TRUE(q.ack(d.token).ok());
  }
  EXPECT_EQ(order, (std::vector<std::string>{"a1", "a2", "b", "c", "now"}));
}

TEST_P(Conformance, AConsumerWaitingOnAPausedTopicIsWokenByTheResume) {
  Queue& q = *this->q_;
  ASSERT_TRUE(q.pause("wake").ok());
  this->push("wake", "w1");
  auto waiting = std::async(std::launch::async, [&] { return q.reserve("wake", kLong); });
  std::promise<Result<Delivery>> async_result;
  q.reserve_async({"wake", "other"}, kLong,
                  [&](Result<Delivery> d) { async_result.set_value(std::move(d)); });
  EXPECT_EQ(waiting.wait_for(300ms), std::future_status::timeout) << "handed out while paused";
  this->push("wake", "w2");
  EXPECT_EQ(waiting.wait_for(100ms), std::future_status::timeout) << "handed out while paused";
  ASSERT_TRUE(q.resume("wake").ok());
  Result<Delivery> woken = waiting.get();
  ASSERT_TRUE(woken.ok()) << woken.status().to_string();
  Result<Delivery> async_woken = async_result.get_future().get();
  ASSERT_TRUE(async_woken.ok()) << async_woken.status().to_string();
  EXPECT_EQ(std::set<std::string>({woken->id, async_woken->id}),
            (std::set<std::string>{"w1", "w2"}));
}

TEST_P(Conformance, DeliveriesHandedOutBeforeAPauseKeepTheirLeases) {
  Queue& q = *this->q_;
  for (const char* id : {"a", "b", "c", "d"})
    this->push("lease", id, 0ms, RetryPolicy::fixed(0ms, 1));
  this->push("lease", "e", 0ms, std::nullopt, 300ms);
  const TimePoint e_taken = now();
  Delivery a = this->take("lease"), b = this->take("lease"), c = this->take("lease");
  Delivery d = this->take("lease"), e = this->take("lease");
  ASSERT_EQ(e.id, "e");
  ASSERT_TRUE(q.pause("lease").ok());
  EXPECT_TRUE(q.ack(a.token).ok());
  EXPECT_TRUE(q.touch(b.token).ok());
  EXPECT_TRUE(q.release(c.token).ok());  // back in its line: held
  EXPECT_TRUE(q.dead_letter(d.token).ok());
  EXPECT_EQ(this->state("d"), "dead");
  EXPECT_EQ(q.requeue_dead_topic("lease").value(), 1u);  // ready again: held too
  // e's lease runs out while paused: retried per its policy, and held once due.
  this->expect_due("e", e_taken + 300ms);
  EXPECT_TRUE(this->eventually([&] { return this->state("e") != "reserved"; }));
  pause_tests::expect_nothing(q, {"lease"});
  EXPECT_TRUE(q.ack(b.token).ok());
  ASSERT_TRUE(q.resume("lease").ok());
  std::set<std::string> after;
  for (int i = 0; i < 3; ++i) after.insert(this->take("lease").id);
  EXPECT_EQ(after, (std::set<std::string>{"c", "d", "e"}));
}

TEST_P(Conformance, APausedTopicIsListedInStatsEvenWithoutJobs) {
  Queue& q = *this->q_;
  ASSERT_TRUE(q.pause("empty").ok());
  Stats st = q.stats();
  ASSERT_EQ(st.topics.count("empty"), 1u);
  EXPECT_EQ(st.topics["empty"], (TopicStats{.paused = true}));
  ASSERT_TRUE(q.resume("empty").ok());
  EXPECT_EQ(q.stats().topics.count("empty"), 0u);
}

TEST_P(Conformance, APauseSurvivesAReopen) {
  if (!this->keeps_jobs()) {
    GTEST_SKIP() << "the memory engine keeps nothing across a reopen";
  } else {
    ASSERT_TRUE(this->q_->pause("kept").ok());
    ASSERT_TRUE(this->q_->pause("gone").ok());
    ASSERT_TRUE(this->q_->resume("gone").ok());
    this->push("kept", "k1");
    this->push("gone", "g1");
    ASSERT_NO_FATAL_FAILURE(this->open());
    Queue& q = *this->q_;
    pause_tests::expect_nothing(q, {"kept"});
    EXPECT_TRUE(q.stats().topics["kept"].paused);
    EXPECT_EQ(this->take("gone").id, "g1");
    ASSERT_TRUE(q.resume("kept").ok());
    ASSERT_NO_FATAL_FAILURE(this->open());
    EXPECT_FALSE(this->q_->stats().topics["kept"].paused);
    EXPECT_EQ(this->take("kept").id, "k1");
  }
}

// ---- lateness and what fires when (TopicTiming; docs/semantics.md) ----
//
// In real time, lateness is only bounded from below: a job ready for 30 ms before it is taken is
// late by 30 ms at least (the exact buckets are checked on a ManualClock in
// tests/unit/timing_stats_test.cc). Redis measures it on the server's clock, the others on theirs.

// The deliveries of `topic` counted in buckets whose bound is below `d`.
uint64_t counted_below(const Lateness& l, Duration d) {
  uint64_t n = 0;
  for (size_t i = 0; i < Lateness::kBounds.size() && Lateness::kBounds[i] < d; ++i)
    n += l.buckets[i];
  return n;
}

TEST_P(Conformance, LatenessIsMeasuredPerTopicWithRetriesApart) {
  this->push("late", "a", 0ms, RetryPolicy::fixed(1s, 3));
  std::this_thread::sleep_for(30ms);
  Delivery d = this->take("late");
  ASSERT_TRUE(this->q_->nack(d.token, 0ms).ok());
  std::this_thread::sleep_for(30ms);
  d = this->take("late");
  EXPECT_EQ(d.attempt, 2u);
  this->push("other", "b");
  const Stats st = this->q_->stats();
  ASSERT_EQ(st.timing.count("late"), 1u);
  const TopicTiming& t = st.timing.at("late");
  for (const Lateness* l : {&t.first, &t.retry}) {
    EXPECT_EQ(l->count, 1u);
    EXPECT_EQ(counted_below(*l, 30ms), 0u) << "ready for 30 ms before it was taken";
    EXPECT_GE(l->sum_seconds, 0.030 - 1e-6);
    EXPECT_EQ(l->clamped, 0u);
  }
  EXPECT_EQ(st.timing.at("other").first, Lateness{}) << "nothing handed out";
}

TEST_P(Conformance, DelayedJobsAreCountedByTheWindowTheyFallDueIn) {
  Limits l = test_limits();
  l.max_delay = 30 * 24h;
  ASSERT_NO_FATAL_FAILURE(this->open(l));
  // Each delay lies well inside its window, whenever the test runs (docs/semantics.md).
  int n = 0;
  for (Duration d : {Duration(30s), Duration(10min), Duration(2h), Duration(3 * 24h),
                     Duration(10 * 24h)})
    this->push("win", "w" + std::to_string(n++), d);
  this->push("win", "ready-now");
  const DueWindows got = this->q_->stats().timing["win"].due;
  if (this->backend_name().starts_with("Tiered"))
    EXPECT_EQ(got, DueWindows{.beyond = 5}) << "jobs on disk count as beyond";
  else
    EXPECT_EQ(got, (DueWindows{1, 1, 1, 1, 1}));
  ASSERT_TRUE(this->q_->cancel("w4").ok());
  ASSERT_TRUE(this->q_->reschedule("w0", now() + 4 * 24h).ok());
  const DueWindows after = this->q_->stats().timing["win"].due;
  if (this->backend_name().starts_with("Tiered"))
    EXPECT_EQ(after, DueWindows{.beyond = 4});
  else
    EXPECT_EQ(after, (DueWindows{0, 1, 1, 2, 0}));
}

TEST_P(Conformance, OldestReadyIsHowLongTheNextJobHasBeenDue) {
  EXPECT_EQ(this->q_->stats().timing["old"].oldest_ready, 0s);
  this->push("old", "first");
  std::this_thread::sleep_for(30ms);
  const Duration waited = this->q_->stats().timing.at("old").oldest_ready;
  EXPECT_GE(waited, 30ms);
  EXPECT_LT(waited, kLong + 30ms);
  EXPECT_EQ(this->take("old").id, "first");
  EXPECT_EQ(this->q_->stats().timing.at("old").oldest_ready, 0s);
}

}  // namespace conformance
}  // namespace delayq
