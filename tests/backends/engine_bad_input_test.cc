// Bad input to the in-memory Engine, through the public API only.
//
// Every refused call must return its specific Errc, a message that names the problem, and leave
// the queue exactly as it was: the per-topic counts, the totals and every stored job (checked
// with stats() and get() before and after each call). Time is a ManualClock, so nothing here
// depends on the real clock.
//
// Kept whole over ~400 lines: nearly every refusal is checked against the one Snapshot of the
// EngineBadInput fixture (counts, totals, every job), which a split would have to share.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "delayq/engine.h"

namespace {

using namespace delayq;
using namespace std::chrono_literals;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Checks a failed Status/Result: its Errc and that its message names each of `words`.
template <class R>
::testing::AssertionResult Fails(const R& r, Errc want, std::vector<std::string> words = {}) {
  const Status s = [&] {
    if constexpr (std::is_same_v<R, Status>) return r;
    else return r.status();
  }();
  if (s.ok()) return ::testing::AssertionFailure() << "the call succeeded; expected an error";
  if (!s.is(want))
    return ::testing::AssertionFailure()
           << "wrong error: " << s.to_string() << " (expected " << make_error_code(want).message()
           << ")";
  for (const std::string& w : words)
    if (!contains(s.message(), w))
      return ::testing::AssertionFailure()
             << "the message does not name '" << w << "': " << s.to_string();
  return ::testing::AssertionSuccess() << s.to_string();
}

std::string show(TimePoint t) { return std::to_string(t.time_since_epoch().count()) + "ns"; }

std::string show(const JobInfo& j) {
  std::ostringstream o;
  o << "{id=" << j.id << " topic=" << j.topic << " state=" << to_string(j.state)
    << " attempts=" << j.attempts << "/" << j.max_attempts << " due=" << show(j.due)
    << " lease=" << show(j.lease_deadline) << " ttr=" << j.ttr.count() << " body=" << j.body << "}";
  return o.str();
}

std::string show(const Stats& s) {
  std::ostringstream o;
  o << "{";
  for (const auto& [t, c] : s.topics)
    o << t << ":[d" << c.delayed << " r" << c.ready << " R" << c.reserved << " x" << c.dead << "] ";
  o << "pushed=" << s.pushed << " delivered=" << s.delivered << " acked=" << s.acked
    << " retried=" << s.retried << " dead_lettered=" << s.dead_lettered
    << " leases_expired=" << s.leases_expired << " cancelled=" << s.cancelled
    << " requeued=" << s.requeued << " purged=" << s.purged << "}";
  return o.str();
}

bool same(const JobInfo& a, const JobInfo& b) {
  return a.id == b.id && a.topic == b.topic && a.state == b.state && a.attempts == b.attempts &&
         a.max_attempts == b.max_attempts && a.due == b.due &&
         a.lease_deadline == b.lease_deadline && a.ttr == b.ttr && a.body == b.body;
}

bool same(const Stats& a, const Stats& b) {
  return a.topics == b.topics && a.pushed == b.pushed && a.delivered == b.delivered &&
         a.acked == b.acked && a.retried == b.retried && a.dead_lettered == b.dead_lettered &&
         a.leases_expired == b.leases_expired && a.cancelled == b.cancelled &&
         a.requeued == b.requeued && a.purged == b.purged;
}

// What the queue looks like from outside: stats() and get() of every id we know of.
struct Snapshot {
  Stats stats;
  std::map<std::string, std::optional<JobInfo>> jobs;
};

class EngineBadInput : public ::testing::Test {
 protected:
  static constexpr size_t kMaxBody = 64;

  void SetUp() override {
    EngineOptions o;
    o.clock = &clock_;
    o.limits.max_delay = 1h;
    o.limits.max_body_bytes = kMaxBody;
    o.limits.default_ttr = 30s;
    o.seed = 7;
    auto opened = Engine::open(o);
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    q_ = std::move(opened).value();

    // One job in each state, in three topics.
    ASSERT_TRUE(q_->push({.topic = "a", .id = "delayed-1", .delay = 10min, .body = "D"}).ok());
    ASSERT_TRUE(q_->push({.topic = "b", .id = "reserved-1", .body = "R"}).ok());
    auto d = q_->reserve("b", 0ms);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    reserved_ = d->token;
    ASSERT_TRUE(q_->push({.topic = "c",
                          .id = "dead-1",
                          .body = "X",
                          .retry = RetryPolicy::fixed(1s, 1)})
                    .ok());
    auto dd = q_->reserve("c", 0ms);
    ASSERT_TRUE(dd.ok()) << dd.status().to_string();
    ASSERT_TRUE(q_->nack(dd->token).ok());
    ASSERT_TRUE(q_->push({.topic = "a", .id = "ready-1", .body = "r"}).ok());
    clock_.advance(1s);
    known_ = {"delayed-1", "ready-1", "reserved-1", "dead-1"};

    // The fixture is what the tests think it is.
    ASSERT_EQ(q_->get("delayed-1")->state, JobState::delayed);
    ASSERT_EQ(q_->get("ready-1")->state, JobState::ready);
    ASSERT_EQ(q_->get("reserved-1")->state, JobState::reserved);
    ASSERT_EQ(q_->get("dead-1")->state, JobState::dead);
  }

  Snapshot snap() {
    Snapshot s;
    s.stats = q_->stats();
    for (const std::string& id : known_) {
      auto j = q_->get(id);
      if (j.ok()) s.jobs[id] = *j;
      else s.jobs[id] = std::nullopt;
    }
    return s;
  }

  // Everything in `before` is still exactly so.
  ::testing::AssertionResult Unchanged(const Snapshot& before) {
    const Snapshot after = snap();
    if (!same(before.stats, after.stats))
      return ::testing::AssertionFailure()
             << "stats changed:\n  before " << show(before.stats) << "\n  after  "
             << show(after.stats);
    for (const auto& [id, b] : before.jobs) {
      const auto& a = after.jobs.at(id);
      if (b.has_value() != a.has_value())
        return ::testing::AssertionFailure()
               << "job '" << id << "' " << (b ? "disappeared" : "appeared");
      if (b && !same(*b, *a))
        return ::testing::AssertionFailure()
               << "job '" << id << "' changed:\n  before " << show(*b) << "\n  after  " << show(*a);
    }
    return ::testing::AssertionSuccess();
  }

  // Pushes `spec` expecting refusal with `want`; checks that nothing changed and that the id (if
  // any) was not taken.
  void ExpectPushRefused(JobSpec spec, Errc want, std::vector<std::string> words) {
    const Snapshot before = snap();
    const std::string id = spec.id;
    const bool fresh_id = !id.empty() && !before.jobs.count(id);
    auto r = q_->push(std::move(spec));
    EXPECT_TRUE(Fails(r, want, words));
    EXPECT_TRUE(Unchanged(before));
    if (fresh_id) {
      EXPECT_TRUE(Fails(q_->get(id), Errc::not_found)) << "a refused push kept its id";
    }
  }

  template <class F>
  void ExpectRefused(F&& call, Errc want, std::vector<std::string> words) {
    const Snapshot before = snap();
    auto r = call();
    EXPECT_TRUE(Fails(r, want, words));
    EXPECT_TRUE(Unchanged(before));
  }

  // Pushes and reserves one job in its own topic; returns the delivery.
  Delivery PushAndReserve(const std::string& id, JobSpec spec = {}) {
    spec.id = id;
    if (spec.topic.empty()) spec.topic = "own-" + id;
    const std::string topic = spec.topic;
    auto p = q_->push(std::move(spec));
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    auto d = q_->reserve(topic, 0ms);
    EXPECT_TRUE(d.ok()) << d.status().to_string();
    known_.push_back(id);
    return d.ok() ? *d : Delivery{};
  }

  ManualClock clock_;  // declared before q_: outlives it
  std::unique_ptr<Engine> q_;
  Token reserved_;
  std::vector<std::string> known_;
};

// ---- push: topic, id ----

TEST_F(EngineBadInput, EmptyTopicIsRefused) {
  ExpectPushRefused({.topic = "", .id = "e1"}, Errc::invalid_argument, {"topic", "empty"});
  ExpectPushRefused({.topic = ""}, Errc::invalid_argument, {"topic"});  // generated id
}

TEST_F(EngineBadInput, TopicOf256BytesIsRefusedAnd255IsFine) {
  ExpectPushRefused({.topic = std::string(256, 't'), .id = "t256"}, Errc::invalid_argument,
                    {"topic", "256", "255"});
  ExpectPushRefused({.topic = std::string(100000, 't'), .id = "t100k"}, Errc::invalid_argument,
                    {"topic"});
  const std::string t255(255, 't');
  auto r = q_->push({.topic = t255, .id = "t255"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(q_->stats().topics[t255].ready, 1u);
  auto d = q_->reserve(t255, 0ms);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->topic, t255);
}

TEST_F(EngineBadInput, IdOf256BytesIsRefusedAnd255IsFine) {
  ExpectPushRefused({.topic = "a", .id = std::string(256, 'i')}, Errc::invalid_argument,
                    {"id", "256", "255"});
  const std::string id255(255, 'i');
  auto r = q_->push({.topic = "a", .id = id255});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(*r, id255);
  EXPECT_TRUE(q_->get(id255).ok());
}

// ---- push: time ----

TEST_F(EngineBadInput, NegativeDelayIsRefused) {
  ExpectPushRefused({.topic = "a", .id = "n1", .delay = -1ns}, Errc::invalid_argument,
                    {"delay", "negative"});
  ExpectPushRefused({.topic = "a", .id = "n2", .delay = -5min}, Errc::invalid_argument,
                    {"delay", "negative"});
  ExpectPushRefused({.topic = "a", .id = "n3", .delay = Duration::min()}, Errc::invalid_argument,
                    {"delay", "negative"});
}

TEST_F(EngineBadInput, DelayPastMaxDelayIsRefusedAndMaxDelayItselfIsFine) {
  ExpectPushRefused({.topic = "a", .id = "m1", .delay = 1h + 1ns}, Errc::invalid_argument,
                    {"max_delay"});
  ExpectPushRefused({.topic = "a", .id = "m2", .delay = 24h * 365}, Errc::invalid_argument,
                    {"max_delay"});
  ExpectPushRefused({.topic = "a", .id = "m3", .delay = Duration::max()}, Errc::invalid_argument,
                    {"max_delay"});
  auto r = q_->push({.topic = "a", .id = "m-ok", .delay = 1h});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(q_->get("m-ok")->due, clock_.now() + 1h);
}

TEST_F(EngineBadInput, DueAtBeyondMaxDelayIsRefused) {
  const TimePoint now = clock_.now();
  ExpectPushRefused({.topic = "a", .id = "u1", .due_at = now + 1h + 1ms}, Errc::invalid_argument,
                    {"due_at", "max_delay"});
  ExpectPushRefused({.topic = "a", .id = "u2", .due_at = TimePoint::max()},
                    Errc::invalid_argument, {"due_at", "max_delay"});
  auto r = q_->push({.topic = "a", .id = "u-ok", .due_at = now + 1h});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(q_->get("u-ok")->state, JobState::delayed);
}

// "A due_at in the past means now": however far in the past.
TEST_F(EngineBadInput, DueAtInThePastMeansNow) {
  const TimePoint now = clock_.now();
  for (auto [id, when] : std::vector<std::pair<std::string, TimePoint>>{
           {"past-1ms", now - 1ms},
           {"past-epoch", TimePoint{}},
           {"past-1700", TimePoint(-(24h * 365 * 270))},  // about the year 1700
           {"past-min", TimePoint::min()}}) {
    SCOPED_TRACE(id);
    auto r = q_->push({.topic = "past", .id = id, .due_at = when});
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (!r.ok()) continue;
    auto j = q_->get(id);
    ASSERT_TRUE(j.ok());
    EXPECT_EQ(j->state, JobState::ready);
    EXPECT_EQ(j->due, now);
  }
}

// The int64 nanosecond clock ends in April 2262. A ManualClock may start anywhere; an engine on
// it must not let now + delay wrap around into the past and fire a job decades early (nor
// refuse a due_at with a nonsensical message). Either refuse the options (max_delay reaches
// past the end of time) or refuse/keep such pushes -- never deliver them now. Run in a child
// process: the wrap-around is signed overflow, which UBSan turns into an abort.
std::string NearEndOfTimeScenario() {
  std::string why;
  ManualClock clock(TimePoint(std::chrono::sys_days(std::chrono::year{2200} / 1 / 1)));
  EngineOptions o;
  o.clock = &clock;
  o.limits.max_delay = 24h * 365 * 100;  // accepted by open(): "at most 100 years"
  auto opened = Engine::open(o);
  if (!opened.ok()) return "";  // refusing these options is a fine answer
  auto q = std::move(opened).value();
  auto p = q->push({.topic = "t", .id = "seventy-years", .delay = 24h * 365 * 70});
  if (p.ok()) {
    auto j = q->get("seventy-years");
    if (j.ok() && j->state != JobState::delayed)
      why += std::string("a job pushed 70 years out is ") + to_string(j->state) +
             " at once; due " + std::to_string(j->due.time_since_epoch().count()) + "ns\n";
    if (q->reserve("t", 0ms).ok()) why += "and it was delivered now\n";
  } else if (!p.is(Errc::invalid_argument)) {
    why += "push: " + p.status().to_string() + "\n";
  }
  auto d = q->push({.topic = "t", .id = "fifty", .due_at = clock.now() + 24h * 365 * 50});
  if (!d.ok() && !contains(d.status().message(), "2262"))
    why += "due_at 50 years out (within max_delay) refused with: " + d.status().to_string() +
           "\n";
  return why;
}

TEST(EngineEndOfTimeDeathTest, ANearEndOfTimeClockNeverFiresAJobEarly) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        alarm(30);
        const std::string why = NearEndOfTimeScenario();
        std::fprintf(stderr, "%s", why.c_str());
        std::fflush(stderr);
        std::_Exit(why.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(EngineBadInput, DelayAndDueAtTogetherAreRefused) {
  ExpectPushRefused({.topic = "a", .id = "b1", .delay = 1s, .due_at = clock_.now() + 1s},
                    Errc::invalid_argument, {"delay", "due_at"});
  ExpectPushRefused({.topic = "a", .id = "b2", .delay = 0s, .due_at = clock_.now()},
                    Errc::invalid_argument, {"delay", "due_at"});
}

TEST_F(EngineBadInput, NegativeOrExcessiveTtrIsRefused) {
  ExpectPushRefused({.topic = "a", .id = "r1", .ttr = -1ns}, Errc::invalid_argument,
                    {"ttr", "negative"});
  ExpectPushRefused({.topic = "a", .id = "r2", .ttr = Duration::min()}, Errc::invalid_argument,
                    {"ttr", "negative"});
  ExpectPushRefused({.topic = "a", .id = "r3", .ttr = 1h + 1s}, Errc::invalid_argument,
                    {"ttr", "max_delay"});
}

// ---- push: body ----

TEST_F(EngineBadInput, BodyOverMaxBodyBytesIsRefusedAndTheLimitIsFine) {
  ExpectPushRefused({.topic = "a", .id = "big", .body = std::string(kMaxBody + 1, 'x')},
                    Errc::invalid_argument, {"body", "bytes", std::to_string(kMaxBody + 1),
                                             std::to_string(kMaxBody)});
  ExpectPushRefused({.topic = "a", .id = "huge", .body = std::string(1 << 20, 'x')},
                    Errc::invalid_argument, {"body", "bytes"});
  const std::string exact(kMaxBody, 'y');
  ASSERT_TRUE(q_->push({.topic = "limit", .id = "exact", .body = exact}).ok());
  auto d = q_->reserve("limit", 0ms);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->body, exact);
}

// ---- push: retry policies ----

TEST_F(EngineBadInput, BadRetryPoliciesAreRefused) {
  struct Case {
    std::string id;
    RetryPolicy policy;
    std::vector<std::string> words;
  };
  RetryPolicy neg_list = RetryPolicy::list({1s, -1s, 2s});
  RetryPolicy zero_list_attempts = RetryPolicy::list({1s});
  zero_list_attempts.max_attempts = 0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Case> cases = {
      {"p-fixed-0", RetryPolicy::fixed(1s, 0), {"max_attempts"}},
      {"p-exp-0", RetryPolicy::exponential(1s, 2.0, 1h, 0.0, 0), {"max_attempts"}},
      {"p-list-0", zero_list_attempts, {"max_attempts"}},
      {"p-list-empty", RetryPolicy::list({}), {"list", "empty"}},
      {"p-list-neg", neg_list, {"negative"}},
      {"p-fixed-neg", RetryPolicy::fixed(-1s, 3), {"negative"}},
      {"p-exp-neg-base", RetryPolicy::exponential(-1s, 2.0, 1h, 0.0, 3), {"base"}},
      {"p-factor-lt1", RetryPolicy::exponential(1s, 0.5, 1h, 0.0, 3), {"factor"}},
      {"p-factor-0", RetryPolicy::exponential(1s, 0.0, 1h, 0.0, 3), {"factor"}},
      {"p-factor-nan", RetryPolicy::exponential(1s, nan, 1h, 0.0, 3), {"factor"}},
      {"p-jitter-gt1", RetryPolicy::exponential(1s, 2.0, 1h, 1.5, 3), {"jitter"}},
      {"p-jitter-neg", RetryPolicy::exponential(1s, 2.0, 1h, -0.1, 3), {"jitter"}},
      {"p-jitter-nan", RetryPolicy::exponential(1s, 2.0, 1h, nan, 3), {"jitter"}},
      {"p-cap-lt-base", RetryPolicy::exponential(10s, 2.0, 5s, 0.0, 3), {"cap"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.id);
    ExpectPushRefused({.topic = "a", .id = c.id, .retry = c.policy}, Errc::invalid_argument,
                      c.words);
  }
  // The boundaries are fine.
  EXPECT_TRUE(q_->push({.topic = "a", .id = "p-ok-1",
                        .retry = RetryPolicy::exponential(1s, 1.0, 1s, 1.0, 1)})
                  .ok());
  EXPECT_TRUE(q_->push({.topic = "a", .id = "p-ok-2", .retry = RetryPolicy::list({0s})}).ok());
  EXPECT_TRUE(q_->push({.topic = "a", .id = "p-ok-3", .retry = RetryPolicy::fixed(0s, 1)}).ok());
}

// ---- push: duplicates ----

TEST_F(EngineBadInput, DuplicateIdIsRefusedInEveryStateAndTheOriginalIsUntouched) {
  for (const std::string id : {"delayed-1", "ready-1", "reserved-1", "dead-1"}) {
    SCOPED_TRACE(id);
    ExpectPushRefused({.topic = "other", .id = id, .delay = 5s, .body = "impostor"},
                      Errc::duplicate_id, {id});
  }
  const auto j = q_->get("delayed-1");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->body, "D");
  EXPECT_EQ(j->topic, "a");
}

TEST_F(EngineBadInput, PushBatchRefusesEachBadSpecAloneAndKeepsTheGoodOnes) {
  const Stats before = q_->stats();
  std::vector<JobSpec> specs;
  specs.push_back({.topic = "batch", .id = "g1"});
  specs.push_back({.topic = "", .id = "bad-topic"});
  specs.push_back({.topic = "batch", .id = "g1", .body = "second"});  // duplicate within the batch
  specs.push_back({.topic = "batch", .id = "ready-1"});               // duplicate of a stored job
  specs.push_back({.topic = "batch", .id = "neg", .delay = -1s});
  specs.push_back({.topic = "batch", .id = "g2", .body = "two"});
  auto out = q_->push_batch(std::move(specs));
  ASSERT_EQ(out.size(), 6u);
  EXPECT_TRUE(out[0].ok());
  EXPECT_TRUE(Fails(out[1], Errc::invalid_argument, {"topic"}));
  EXPECT_TRUE(Fails(out[2], Errc::duplicate_id, {"g1"}));
  EXPECT_TRUE(Fails(out[3], Errc::duplicate_id, {"ready-1"}));
  EXPECT_TRUE(Fails(out[4], Errc::invalid_argument, {"negative"}));
  EXPECT_TRUE(out[5].ok());
  const Stats after = q_->stats();
  EXPECT_EQ(after.pushed, before.pushed + 2);
  EXPECT_EQ(after.topics.at("batch").ready, 2u);
  EXPECT_EQ(q_->get("g1")->body, "");
  EXPECT_EQ(q_->get("ready-1")->topic, "a");
  EXPECT_TRUE(Fails(q_->get("bad-topic"), Errc::not_found));
  EXPECT_TRUE(Fails(q_->get("neg"), Errc::not_found));
}

// ---- unknown ids ----

TEST_F(EngineBadInput, UnknownIdIsNotFound) {
  const std::string id = "no-such-job";
  ExpectRefused([&] { return q_->cancel(id); }, Errc::not_found, {id});
  ExpectRefused([&] { return q_->get(id); }, Errc::not_found, {id});
  ExpectRefused([&] { return q_->reschedule(id, clock_.now() + 1s); }, Errc::not_found, {id});
  ExpectRefused([&] { return q_->requeue_dead(id); }, Errc::not_found, {id});
  const Token t{id, reserved_.fence};
  ExpectRefused([&] { return q_->ack(t); }, Errc::not_found, {id});
  ExpectRefused([&] { return q_->nack(t); }, Errc::not_found, {id});
  ExpectRefused([&] { return q_->touch(t); }, Errc::not_found, {id});
  ExpectRefused([&] { return q_->dead_letter(t); }, Errc::not_found, {id});
  // The empty id is just another unknown id.
  ExpectRefused([&] { return q_->get(""); }, Errc::not_found, {});
  ExpectRefused([&] { return q_->cancel(""); }, Errc::not_found, {});
}

TEST_F(EngineBadInput, CancelledJobIsNotFoundAndItsTokenIsRefused) {
  const Delivery d = PushAndReserve("cx");
  ASSERT_TRUE(q_->cancel("cx").ok());
  ExpectRefused([&] { return q_->cancel("cx"); }, Errc::not_found, {"cx"});
  ExpectRefused([&] { return q_->ack(d.token); }, Errc::not_found, {"cx"});
  ExpectRefused([&] { return q_->touch(d.token); }, Errc::not_found, {"cx"});
}

// ---- stale tokens ----

// After an ack the job is gone: the documented error for "acknowledged" is not_found.
TEST_F(EngineBadInput, TokenAfterAckIsRefused) {
  const Delivery d = PushAndReserve("acked");
  ASSERT_TRUE(q_->ack(d.token).ok());
  ExpectRefused([&] { return q_->ack(d.token); }, Errc::not_found, {"acked"});
  ExpectRefused([&] { return q_->nack(d.token); }, Errc::not_found, {"acked"});
  ExpectRefused([&] { return q_->nack(d.token, 1s); }, Errc::not_found, {"acked"});
  ExpectRefused([&] { return q_->touch(d.token); }, Errc::not_found, {"acked"});
  ExpectRefused([&] { return q_->dead_letter(d.token); }, Errc::not_found, {"acked"});
}

// The id comes back as a new job: the old delivery's token must not settle the new job.
TEST_F(EngineBadInput, TokenOfAnEarlierJobWithTheSameIdIsStale) {
  const Delivery d = PushAndReserve("reused", {.topic = "reuse"});
  ASSERT_TRUE(q_->ack(d.token).ok());
  ASSERT_TRUE(q_->push({.topic = "reuse", .id = "reused", .body = "second life"}).ok());
  // The new job is ready, not reserved.
  ExpectRefused([&] { return q_->ack(d.token); }, Errc::stale_token, {"reused", "stale"});
  ExpectRefused([&] { return q_->dead_letter(d.token); }, Errc::stale_token, {"reused"});
  auto d2 = q_->reserve("reuse", 0ms);
  ASSERT_TRUE(d2.ok());
  EXPECT_EQ(d2->body, "second life");
  EXPECT_EQ(d2->attempt, 1u);
  EXPECT_NE(d2->token, d.token);
  // Now it is reserved by someone else.
  ExpectRefused([&] { return q_->ack(d.token); }, Errc::stale_token, {"reused"});
  ExpectRefused([&] { return q_->nack(d.token); }, Errc::stale_token, {"reused"});
  ExpectRefused([&] { return q_->touch(d.token); }, Errc::stale_token, {"reused"});
  EXPECT_TRUE(q_->ack(d2->token).ok());
}

TEST_F(EngineBadInput, TokenAfterLeaseExpiryAndRedeliveryIsStale) {
  const Delivery d1 =
      PushAndReserve("lease", {.topic = "lt", .ttr = 10s, .retry = RetryPolicy::fixed(1min, 5)});
  ASSERT_EQ(d1.attempt, 1u);
  EXPECT_EQ(d1.lease_deadline, clock_.now() + 10s);

  // The lease runs out: the job waits for its retry, the old token is refused.
  clock_.advance(10s);
  {
    auto j = q_->get("lease");
    ASSERT_TRUE(j.ok());
    EXPECT_EQ(j->state, JobState::delayed);
    EXPECT_EQ(q_->stats().leases_expired, 1u);
  }
  ExpectRefused([&] { return q_->ack(d1.token); }, Errc::stale_token, {"lease", "stale"});
  ExpectRefused([&] { return q_->nack(d1.token); }, Errc::stale_token, {"lease"});
  ExpectRefused([&] { return q_->touch(d1.token); }, Errc::stale_token, {"lease"});
  ExpectRefused([&] { return q_->dead_letter(d1.token); }, Errc::stale_token, {"lease"});

  // Redelivered: still refused, and the new holder is not disturbed.
  clock_.advance(1min);
  auto d2 = q_->reserve("lt", 0ms);
  ASSERT_TRUE(d2.ok()) << d2.status().to_string();
  EXPECT_EQ(d2->attempt, 2u);
  EXPECT_GT(d2->token.fence, d1.token.fence);
  ExpectRefused([&] { return q_->ack(d1.token); }, Errc::stale_token, {"lease", "stale"});
  ExpectRefused([&] { return q_->nack(d1.token, 0s); }, Errc::stale_token, {"lease"});
  ExpectRefused([&] { return q_->touch(d1.token); }, Errc::stale_token, {"lease"});
  ExpectRefused([&] { return q_->dead_letter(d1.token); }, Errc::stale_token, {"lease"});
  EXPECT_TRUE(q_->ack(d2->token).ok());
}

TEST_F(EngineBadInput, TokenWithTheWrongFenceIsStale) {
  for (uint64_t fence : {reserved_.fence + 1, reserved_.fence - 1, uint64_t{0},
                         std::numeric_limits<uint64_t>::max()}) {
    SCOPED_TRACE(fence);
    const Token t{reserved_.id, fence};
    ExpectRefused([&] { return q_->ack(t); }, Errc::stale_token, {"reserved-1", "stale"});
    ExpectRefused([&] { return q_->nack(t); }, Errc::stale_token, {"reserved-1"});
    ExpectRefused([&] { return q_->touch(t); }, Errc::stale_token, {"reserved-1"});
    ExpectRefused([&] { return q_->dead_letter(t); }, Errc::stale_token, {"reserved-1"});
  }
  // The right token of another job does not fit this one.
  const Delivery other = PushAndReserve("other-job");
  ExpectRefused([&] { return q_->ack(Token{reserved_.id, other.token.fence}); }, Errc::stale_token,
                {"reserved-1"});
  // The holder's own token still works.
  EXPECT_TRUE(q_->touch(reserved_).ok());
  EXPECT_TRUE(q_->ack(reserved_).ok());
}

TEST_F(EngineBadInput, StaleTokenOfADeadJobIsRefused) {
  // dead-1 was nacked on its only attempt; re-derive its token from the dead listing.
  auto dead = q_->list_dead("c", 10);
  ASSERT_TRUE(dead.ok());
  ASSERT_EQ(dead->size(), 1u);
  for (uint64_t fence = 0; fence < 8; ++fence) {
    const Token t{"dead-1", fence};
    ExpectRefused([&] { return q_->ack(t); }, Errc::stale_token, {"dead-1"});
    ExpectRefused([&] { return q_->touch(t); }, Errc::stale_token, {"dead-1"});
  }
}

// ---- reserve ----

TEST_F(EngineBadInput, ReserveWithNoTopicsIsRefused) {
  ExpectRefused([&] { return q_->reserve(std::span<const std::string>(), 0ms); },
                Errc::invalid_argument, {"topic"});
  ExpectRefused([&] { return q_->reserve(std::span<const std::string>(), 10s); },
                Errc::invalid_argument, {"topic"});

  const Snapshot before = snap();
  int calls = 0;
  Status got;
  q_->reserve_async({}, 10s, [&](Result<Delivery> r) {
    ++calls;
    got = r.status();
  });
  // The refusal needs no waiting; give a queue thread a bounded moment if it answers there.
  for (int i = 0; i < 2000 && calls == 0; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(Fails(got, Errc::invalid_argument, {"topic"}));
  EXPECT_TRUE(Unchanged(before));
}

TEST_F(EngineBadInput, ReserveOfAnEmptyTopicTimesOutAndChangesNothing) {
  ExpectRefused([&] { return q_->reserve("nothing-here", 0ms); }, Errc::timeout, {});
  // "c" holds only a dead job, "a" only a delayed one once ready-1 is cancelled.
  ExpectRefused([&] { return q_->reserve("c", 2ms); }, Errc::timeout, {});
  ASSERT_TRUE(q_->cancel("ready-1").ok());
  ExpectRefused([&] { return q_->reserve("a", 2ms); }, Errc::timeout, {});
}

// ---- nack ----

TEST_F(EngineBadInput, NackWithNegativeOrExcessiveDelayIsRefused) {
  ExpectRefused([&] { return q_->nack(reserved_, -1ns); }, Errc::invalid_argument, {"negative"});
  ExpectRefused([&] { return q_->nack(reserved_, Duration::min()); }, Errc::invalid_argument,
                {"negative"});
  ExpectRefused([&] { return q_->nack(reserved_, 1h + 1s); }, Errc::invalid_argument,
                {"max_delay"});
  // Still held: the token works.
  auto t = q_->touch(reserved_);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  ASSERT_TRUE(q_->nack(reserved_, 1s).ok());
  EXPECT_EQ(q_->get("reserved-1")->state, JobState::delayed);
}

// ---- reschedule ----

TEST_F(EngineBadInput, RescheduleOfReservedOrDeadJobIsInvalidState) {
  ExpectRefused([&] { return q_->reschedule("reserved-1", clock_.now() + 1min); },
                Errc::invalid_state, {"reserved-1", "reserved"});
  ExpectRefused([&] { return q_->reschedule("dead-1", clock_.now() + 1min); },
                Errc::invalid_state, {"dead-1", "dead"});
  ExpectRefused([&] { return q_->reschedule("dead-1", clock_.now()); }, Errc::invalid_state,
                {"dead-1"});
}

TEST_F(EngineBadInput, RescheduleBeyondMaxDelayIsRefused) {
  ExpectRefused([&] { return q_->reschedule("delayed-1", clock_.now() + 1h + 1ms); },
                Errc::invalid_argument, {"max_delay"});
  ExpectRefused([&] { return q_->reschedule("ready-1", TimePoint::max()); },
                Errc::invalid_argument, {"max_delay"});
}

// "the past means now", however far in the past.
TEST_F(EngineBadInput, RescheduleIntoThePastMeansNow) {
  ASSERT_TRUE(q_->reschedule("delayed-1", clock_.now() - 1h).ok());
  EXPECT_EQ(q_->get("delayed-1")->state, JobState::ready);
  ASSERT_TRUE(q_->push({.topic = "a", .id = "far", .delay = 30min}).ok());
  const Status s = q_->reschedule("far", TimePoint::min());
  EXPECT_TRUE(s.ok()) << s.to_string();
  auto j = q_->get("far");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->state, JobState::ready);
}

// ---- dead letters ----

TEST_F(EngineBadInput, RequeueOfAJobThatIsNotDeadIsInvalidState) {
  for (const std::string id : {"delayed-1", "ready-1", "reserved-1"}) {
    SCOPED_TRACE(id);
    ExpectRefused([&] { return q_->requeue_dead(id); }, Errc::invalid_state, {id, "not dead"});
  }
  // The dead one can be requeued, once.
  ASSERT_TRUE(q_->requeue_dead("dead-1").ok());
  ExpectRefused([&] { return q_->requeue_dead("dead-1"); }, Errc::invalid_state, {"dead-1"});
}

TEST_F(EngineBadInput, DeadLetterOpsOnUnknownTopicsAreHarmless) {
  const Snapshot before = snap();
  auto l = q_->list_dead("nope", 10);
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->empty());
  auto r = q_->requeue_dead_topic("nope");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 0u);
  auto p = q_->purge_dead("nope");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, 0u);
  auto z = q_->list_dead("c", 0);
  ASSERT_TRUE(z.ok());
  EXPECT_TRUE(z->empty());
  EXPECT_TRUE(Unchanged(before));
}

// ---- after close ----

// "later calls fail with `closed`".
TEST_F(EngineBadInput, CallsAfterCloseFailWithClosed) {
  q_->close();
  const Snapshot before = snap();
  EXPECT_TRUE(Fails(q_->push({.topic = "a", .id = "late"}), Errc::closed));
  for (auto& r : q_->push_batch({{.topic = "a", .id = "late2"}}))
    EXPECT_TRUE(Fails(r, Errc::closed));
  EXPECT_TRUE(Fails(q_->reserve("a", 0ms), Errc::closed));
  EXPECT_TRUE(Fails(q_->reserve("a", 10s), Errc::closed));
  int calls = 0;
  Status got;
  q_->reserve_async({"a"}, 10s, [&](Result<Delivery> r) {
    ++calls;
    got = r.status();
  });
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(Fails(got, Errc::closed));
  EXPECT_TRUE(Fails(q_->ack(reserved_), Errc::closed));
  EXPECT_TRUE(Fails(q_->nack(reserved_), Errc::closed));
  EXPECT_TRUE(Fails(q_->touch(reserved_), Errc::closed));
  EXPECT_TRUE(Fails(q_->dead_letter(reserved_), Errc::closed));
  EXPECT_TRUE(Fails(q_->cancel("ready-1"), Errc::closed));
  EXPECT_TRUE(Fails(q_->reschedule("delayed-1", clock_.now()), Errc::closed));
  EXPECT_TRUE(Fails(q_->requeue_dead("dead-1"), Errc::closed));
  EXPECT_TRUE(Unchanged(before));
  q_->close();  // idempotent
}

// ---- engine options ----

TEST(EngineOptionsTest, BadOptionsAreRefusedNamingTheOption) {
  ManualClock clock;
  struct Case {
    std::string name;
    EngineOptions o;
    std::vector<std::string> words;
  };
  auto with = [&](auto&& f) {
    EngineOptions o;
    o.clock = &clock;
    f(o);
    return o;
  };
  std::vector<Case> cases = {
      {"tick 0", with([](EngineOptions& o) { o.tick = 0ms; }), {"tick"}},
      {"tick negative", with([](EngineOptions& o) { o.tick = -1ms; }), {"tick"}},
      {"tick 999us", with([](EngineOptions& o) { o.tick = 999us; }), {"tick"}},
      {"tick 2s", with([](EngineOptions& o) { o.tick = 2s; }), {"tick"}},
      {"tick 1s+1ns", with([](EngineOptions& o) { o.tick = 1s + 1ns; }), {"tick"}},
      {"shards 0", with([](EngineOptions& o) { o.shards = 0; }), {"shards"}},
      {"shards huge", with([](EngineOptions& o) { o.shards = size_t{1} << 40; }), {"shards"}},
      {"expected_jobs huge",
       with([](EngineOptions& o) { o.expected_jobs = EngineOptions::kMaxExpectedJobs + 1; }),
       {"expected_jobs", "100000000"}},
      {"max_body_bytes 0", with([](EngineOptions& o) { o.limits.max_body_bytes = 0; }),
       {"max_body_bytes"}},
      {"max_delay 0", with([](EngineOptions& o) { o.limits.max_delay = 0s; }), {"max_delay"}},
      {"max_delay negative", with([](EngineOptions& o) { o.limits.max_delay = -1h; }), {"max_delay"}},
      {"default_ttr 0", with([](EngineOptions& o) { o.limits.default_ttr = 0s; }), {"default_ttr"}},
      {"default_ttr negative", with([](EngineOptions& o) { o.limits.default_ttr = -1s; }),
       {"default_ttr"}},
      {"default_retry", with([](EngineOptions& o) { o.limits.default_retry = RetryPolicy::fixed(1s, 0); }),
       {"default_retry", "max_attempts"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = Engine::open(c.o);
    EXPECT_TRUE(Fails(r, Errc::invalid_argument, c.words));
  }
  // The boundaries open.
  for (Duration tick : {Duration(1ms), Duration(1s)}) {
    auto r = Engine::open(with([&](EngineOptions& o) { o.tick = tick; }));
    EXPECT_TRUE(r.ok()) << r.status().to_string();
  }
  auto one = Engine::open(with([](EngineOptions& o) {
    o.shards = 1;
    o.limits.max_body_bytes = 1;
  }));
  EXPECT_TRUE(one.ok()) << one.status().to_string();
}

// ---- tokens as text ----

TEST(TokenParseTest, MalformedTextIsRefused) {
  for (const std::string text :
       {"", ":", "abc", "42", ":id", "42:", "x:id", "-1:id", "+1:id", " 1:id", "1 :id", "1x:id",
        "0x10:id", "1.5:id", "99999999999999999999:id", "18446744073709551616:id"}) {
    SCOPED_TRACE("'" + text + "'");
    auto t = Token::parse(text);
    EXPECT_TRUE(Fails(t, Errc::invalid_argument, {"token"}));
  }
}

TEST(TokenParseTest, WellFormedTextRoundTrips) {
  auto t = Token::parse("42:order:7");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->fence, 42u);
  EXPECT_EQ(t->id, "order:7");
  const Token big{std::string(255, 'z'), std::numeric_limits<uint64_t>::max()};
  auto back = Token::parse(big.to_string());
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, big);
}

// ---- error codes as text ----

TEST(ErrcNameTest, EveryCodeRoundTripsThroughItsName) {
  for (int v = 0; v <= static_cast<int>(Errc::cancelled); ++v) {
    const auto e = static_cast<Errc>(v);
    SCOPED_TRACE(to_string(e));
    auto back = parse_errc(to_string(e));
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(*back, e);
  }
  EXPECT_STREQ(to_string(Errc::io_error), "io_error");
  EXPECT_STREQ(to_string(static_cast<Errc>(99)), "error");
  // The name is the word the daemon and the CLI carry; a Status still shows the phrase.
  EXPECT_EQ(Status(Errc::io_error, "disk").to_string(), "I/O error: disk");
}

TEST(ErrcNameTest, UnknownNamesAreRefusedNamingTheAcceptedOnes) {
  for (const std::string text : {"", "IO_ERROR", "io error", "error", "timeout "}) {
    SCOPED_TRACE("'" + text + "'");
    EXPECT_TRUE(Fails(parse_errc(text), Errc::invalid_argument, {"stale_token", "cancelled"}));
  }
}

// A parsed token that names nothing is refused by the queue like any other.
TEST_F(EngineBadInput, ParsedTokensAreCheckedLikeAnyOther) {
  auto good = Token::parse(reserved_.to_string());
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, reserved_);
  auto wrong = Token::parse(std::to_string(reserved_.fence + 100) + ":" + reserved_.id);
  ASSERT_TRUE(wrong.ok());
  ExpectRefused([&] { return q_->ack(*wrong); }, Errc::stale_token, {"reserved-1"});
  EXPECT_TRUE(q_->ack(*good).ok());
}

}  // namespace
