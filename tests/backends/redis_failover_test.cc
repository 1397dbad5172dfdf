// The Redis backend through a Sentinel failover, on real processes: a primary, two replicas and
// three sentinels on loopback (tests/support/redis_sentinel_group.h). A client-side history
// records every answered push, delivery and ack while producers and consumers run and the
// primary is killed with SIGKILL; after the promotion the history is checked against what the
// queue holds. With replicas_to_ack = 1 nothing acknowledged may be lost; with 0 the loss is
// reported (it depends on how far the replicas lagged when the primary died). In both, no job
// may be delivered before its due time. Also: WAIT's refusal when too few replicas answer, and
// the options' checks, and the calls sent again after their connection broke once they were
// sent (a proxy that cuts the reply, tests/support/redis_cut_proxy.h). Nothing asserts how long anything took.
#include <gtest/gtest.h>

#include <cstdio>
#include <future>
#include <string>
#include <thread>

#include "delayq/redis.h"
#include "failover_load.h"
#include "redis_cut_proxy.h"
#include "redis_sentinel_group.h"
#include "redis_server.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using testing::FailoverLoad;
using testing::FailoverOutcome;
using testing::SentinelGroup;

RedisOptions sentinel_options(const SentinelGroup& g, uint32_t replicas_to_ack) {
  RedisOptions opt;
  opt.sentinels = g.sentinels();
  opt.sentinel_master = SentinelGroup::kMaster;
  opt.queue = "failover";
  opt.replicas_to_ack = replicas_to_ack;
  opt.replicas_timeout = 2s;
  // Longer than a failover (about 1 s to notice, a few to promote): a call that cannot reach a
  // primary waits for the new one.
  opt.call_timeout = 20s;
  opt.connect_timeout = 500ms;
  opt.reconnect_max = 200ms;
  return opt;
}

// One failover under load (tests/support/failover_load.h): the primary killed after some pushes
// and acks were answered; load goes on through the failover, then the queue is drained and the
// history checked.
FailoverOutcome run_failover(uint32_t replicas_to_ack) {
  SentinelGroup g(2, 3);
  if (!g.ok()) {
    ADD_FAILURE() << "the sentinel group did not start:\n" << g.logs();
    return {};
  }
  auto opened = open_redis(sentinel_options(g, replicas_to_ack));
  if (!opened) {
    ADD_FAILURE() << opened.status().to_string();
    return {};
  }
  std::unique_ptr<Queue> q = std::move(*opened);
  FailoverLoad load(*q, 0);
  // Load before the kill: some pushes answered and some acks answered.
  EXPECT_TRUE(SentinelGroup::poll(20s, [&] {
    auto [p, a] = load.count();
    return p >= 300 && a >= 100;
  }));
  const int old = g.kill_primary();
  EXPECT_TRUE(g.wait_failover(old, 1, 30s)) << g.logs();
  // Load after the promotion, through the client's own reconnection.
  load.after_promotion(200, 20s);
  return load.finish("replicas_to_ack=" + std::to_string(replicas_to_ack));
}

TEST(RedisFailover, ReplicasToAckOneLosesNothingAcknowledged) {
  testing::expect_nothing_lost(run_failover(1));
}

// Without WAIT, what the primary acknowledged but had not sent its replica when it died is gone:
// reported, not asserted.
TEST(RedisFailover, ReplicasToAckZeroReportsItsLoss) {
  testing::expect_rode_through(run_failover(0));
}

// SENTINEL FAILOVER: the old primary stays up and becomes a replica. Pushes made throughout are
// all answered, and those answered after the switch are on the new primary.
TEST(RedisFailover, FollowsAManualFailover) {
  SentinelGroup g(1, 1);
  ASSERT_TRUE(g.ok()) << g.logs();
  auto q = open_redis(sentinel_options(g, 0)).value();
  ASSERT_TRUE(q->push({.topic = "t", .id = "before", .delay = 1h}).ok());
  const int old = g.primary_port();
  // "before" on the replica too (its offset caught up), so that the switch cannot lose it.
  ASSERT_TRUE(SentinelGroup::poll(10s, [&] {
    const redis::Reply role = SentinelGroup::cmd(old, {"ROLE"});
    return role.elements.size() >= 3 && role.elements[2].elements.size() == 1 &&
           role.elements[2].elements[0].elements.size() >= 3 &&
           role.elements[2].elements[0].elements[2].as_int(-1) == role.elements[1].as_int(-2);
  }));
  const redis::Reply r =
      SentinelGroup::cmd(g.sentinel_port(), {"SENTINEL", "FAILOVER", SentinelGroup::kMaster});
  ASSERT_EQ(r.str, "OK") << r.str;
  int n = 0, errors = 0;
  const auto push = [&] {
    auto p = q->push({.topic = "t", .id = "j" + std::to_string(n++), .delay = 1h});
    if (!p) ++errors, std::printf("  %s\n", p.status().to_string().c_str());
  };
  EXPECT_TRUE(SentinelGroup::poll(30s, [&] {
    push();
    return g.wait_failover(old, 0, 0ms);
  })) << g.logs();
  const int switched = n;
  for (int k = 0; k < 50; ++k) push();
  EXPECT_EQ(errors, 0);
  EXPECT_NE(g.primary_port(), old);
  EXPECT_TRUE(q->get("before").ok());
  for (int k = switched; k < n; ++k)
    EXPECT_TRUE(q->get("j" + std::to_string(k)).ok()) << "j" << k;
}

// push, reserve, ack of a job with id `id`; and a reserve waiting on an empty topic woken by the
// next push, which with an hour's sweep only the listener's subscription can do.
void push_reserve_ack_and_wake(Queue& q, const std::string& id) {
  SCOPED_TRACE(id);
  ASSERT_TRUE(q.push({.topic = "t", .id = id, .body = "x"}).ok());
  Result<Delivery> d = q.reserve("t", 10s);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, id);
  EXPECT_TRUE(q.ack(d->token).ok());
  std::promise<Result<Delivery>> got;
  std::thread waiter([&] { got.set_value(q.reserve("woken", 10s)); });
  std::this_thread::sleep_for(300ms);  // most likely waiting by now; correct either way
  const Status pushed = q.push({.topic = "woken", .id = id + "-w"}).status();
  waiter.join();  // before any assertion returns: a failed run must not leave it running
  ASSERT_TRUE(pushed.ok()) << pushed.to_string();
  Result<Delivery> w = got.get_future().get();
  ASSERT_TRUE(w.ok()) << "the wake-up did not come: " << w.status().to_string();
  EXPECT_EQ(w->id, id + "-w");
  EXPECT_TRUE(q.ack(w->token).ok());
}

// AUTH with Sentinel: the servers require a password, which the sentinels know (auth-pass) and
// RedisOptions::password carries. The primary the sentinels name is reached with it, before and
// after a SENTINEL FAILOVER; the old primary is then killed, so the listener must subscribe on
// the new one (with the password) for the wake-up to come. Without the password, or with a
// wrong one, open_redis fails with invalid_argument naming AUTH, the password not shown.
TEST(RedisFailover, AuthReachesThePrimaryTheSentinelsName) {
  const std::string pw = "sentinel-group-pw";
  SentinelGroup g(1, 1, pw);
  ASSERT_TRUE(g.ok()) << g.logs();
  RedisOptions o = sentinel_options(g, 0);
  o.queue = "sauth";
  o.sweep = 1h;  // a waiting reserve ends on a wake message only
  for (const std::string bad : {"", "wrong-pw"}) {
    RedisOptions b = o;
    b.password = bad;
    Result<std::unique_ptr<Queue>> q = open_redis(b);
    ASSERT_FALSE(q.ok()) << "password '" << bad << "'";
    const std::string m = q.status().message();
    EXPECT_TRUE(q.is(Errc::invalid_argument)) << q.status().to_string();
    EXPECT_NE(m.find("AUTH"), std::string::npos) << m;
    EXPECT_EQ(m.find(pw), std::string::npos) << "the message shows the password: " << m;
    EXPECT_EQ(m.find("wrong-pw"), std::string::npos) << "the message shows a password: " << m;
  }
  o.password = pw;
  Result<std::unique_ptr<Queue>> opened = open_redis(o);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  Queue& q = **opened;
  push_reserve_ack_and_wake(q, "before");
  const int old = g.primary_port();
  const redis::Reply r =
      SentinelGroup::cmd(g.sentinel_port(), {"SENTINEL", "FAILOVER", SentinelGroup::kMaster});
  ASSERT_EQ(r.str, "OK") << r.str;
  ASSERT_TRUE(g.wait_failover(old, 0, 30s)) << g.logs();
  // The old primary a replica now: the push finds it read-only and follows the sentinels.
  ASSERT_TRUE(SentinelGroup::poll(30s, [&] {
    const redis::Reply role = g.server_cmd(old, {"ROLE"});
    return !role.elements.empty() && role.elements[0].str == "slave";
  })) << g.logs();
  ASSERT_TRUE(q.push({.topic = "t", .id = "moved", .delay = 1h}).ok());
  g.kill_server(old);
  push_reserve_ack_and_wake(q, "after");
  EXPECT_TRUE(q.get("moved").ok());
}

// More replicas asked for than there are: a writing call answers unavailable, says that it may
// or may not have taken effect, and did (the primary ran it); a read-only call does not wait.
TEST(RedisFailover, TooFewReplicasAnswerMayOrMayNot) {
  SentinelGroup g(1, 1);
  ASSERT_TRUE(g.ok()) << g.logs();
  RedisOptions opt = sentinel_options(g, 2);
  opt.replicas_timeout = 200ms;
  auto q = open_redis(opt);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  auto r = (*q)->push({.topic = "t", .id = "j1", .delay = 1h});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::unavailable));
  EXPECT_NE(r.status().message().find("may or may not have taken effect"), std::string::npos)
      << r.status().message();
  auto info = (*q)->get("j1");
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->state, JobState::delayed);
  // One replica is enough for a queue that asks for one.
  opt.replicas_to_ack = 1;
  auto one = open_redis(opt);
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_TRUE((*one)->push({.topic = "t", .id = "j2", .delay = 1h}).ok());
  EXPECT_TRUE((*one)->cancel("j2").ok());
}

// The server ran the call, and the connection closed before its reply: only the calls that are
// safe to repeat are sent again, and their answer tells whether the first had run.
TEST(RedisUnknownOutcome, OnlyPushesWithTheirOwnIdAndAcksAreSentAgain) {
  testing::RedisServer server;
  ASSERT_TRUE(server.started());
  testing::CuttingProxy proxy(server.socket());
  ASSERT_TRUE(proxy.started());
  RedisOptions o;
  o.url = proxy.url();
  o.queue = "cut";
  o.reconnect_min = 20ms;
  o.reconnect_max = 200ms;
  auto q = open_redis(o).value();
  const auto cut = [&](const char* function) {
    // "<tag>_push" and not "<tag>_push_many": the name ends the RESP bulk string.
    proxy.cut_next(std::string(function) + "\r\n", /*total=*/1, /*pass=*/0);
  };
  // A push with its own id: stored by the first send, and the resend's duplicate_id (same topic
  // and body) counts as stored.
  cut("_push");
  auto mine = q->push({.topic = "t", .id = "mine", .delay = 1h, .body = "b"});
  ASSERT_TRUE(proxy.cut_done());
  ASSERT_TRUE(mine.ok()) << mine.status().to_string();
  EXPECT_EQ(*mine, "mine");
  auto info = q->get("mine");
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->body, "b");
  // The id was another job's already (another body): the resend's duplicate_id stands.
  ASSERT_TRUE(q->push({.topic = "t", .id = "theirs", .delay = 1h, .body = "first"}).ok());
  cut("_push");
  auto dup = q->push({.topic = "t", .id = "theirs", .delay = 1h, .body = "second"});
  ASSERT_TRUE(proxy.cut_done());
  EXPECT_TRUE(dup.status().is(Errc::duplicate_id)) << dup.status().to_string();
  // A generated id: not sent again (a second send would store a second job).
  cut("_push");
  auto gen = q->push({.topic = "t", .delay = 1h});
  ASSERT_TRUE(proxy.cut_done());
  EXPECT_TRUE(gen.status().is(Errc::unavailable)) << gen.status().to_string();
  EXPECT_NE(gen.status().message().find("may or may not have taken effect"), std::string::npos);
  // An ack by token: the resend finds the job gone (not_found), which counts as acknowledged.
  // The node waits reconnect_min after a broken connection; calls meanwhile fail fast.
  ASSERT_TRUE(SentinelGroup::poll(5s, [&] { return q->push({.topic = "a", .id = "a1"}).ok(); }));
  const std::string topics[] = {"a"};
  auto d = q->reserve(topics, 5s);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  cut("_ack");
  const Status acked = q->ack(d->token);
  ASSERT_TRUE(proxy.cut_done());
  EXPECT_TRUE(acked.ok()) << acked.to_string();
  EXPECT_TRUE(q->get("a1").status().is(Errc::not_found));
  // A cancel is not sent again: its outcome stays unknown (it did run).
  cut("_cancel");
  const Status cancelled = q->cancel("mine");
  ASSERT_TRUE(proxy.cut_done());
  EXPECT_TRUE(cancelled.is(Errc::unavailable)) << cancelled.to_string();
  EXPECT_TRUE(SentinelGroup::poll(5s, [&] { return q->get("mine").status().is(Errc::not_found); }));
}

TEST(RedisFailover, OptionsAreChecked) {
  const auto refused = [](RedisOptions opt, const char* names) {
    auto q = open_redis(opt);
    ASSERT_FALSE(q.ok());
    EXPECT_TRUE(q.status().is(Errc::invalid_argument)) << q.status().to_string();
    EXPECT_NE(q.status().message().find(names), std::string::npos) << q.status().message();
  };
  refused({.url = "redis-sentinel://127.0.0.1:26379/"}, "master's name is missing");
  refused({.url = "redis-sentinel:///m"}, "no sentinel");
  refused({.url = "redis-sentinel://h:0/m"}, "port");
  // A password in the url: refused (it goes in RedisOptions::password), and not shown.
  refused({.url = "redis-sentinel://:s3cret@127.0.0.1:26379/m"}, "passwords are not supported");
  refused({.url = "redis-sentinel://u:s3cret@127.0.0.1:26379,h:1/m"}, "redis-sentinel://***@");
  EXPECT_EQ(open_redis({.url = "redis-sentinel://:s3cret@h:1/m"}).status().message().find("s3cret"),
            std::string::npos);
  refused({.url = "redis://127.0.0.1:1", .sentinels = {"127.0.0.1:26379"}, .sentinel_master = "m"},
          "both given");
  refused({.sentinels = {"127.0.0.1:26379"}}, "go together");
  refused({.url = "redis://127.0.0.1:1", .replicas_to_ack = 17}, "replicas_to_ack");
  refused({.url = "redis://127.0.0.1:1", .replicas_timeout = 5s}, "replicas_timeout");
  refused({.url = "redis://127.0.0.1:1", .replicas_timeout = 0s}, "replicas_timeout");
}

}  // namespace
}  // namespace delayq
