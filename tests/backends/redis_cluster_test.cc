// The Redis backend against a real Redis Cluster: three masters (redis-server processes on free
// loopback TCP ports, in a temporary directory) that the suite builds by hand with CLUSTER
// ADDSLOTSRANGE and CLUSTER MEET, and kills at the end.
//
// Checked: the client's slot function agrees with the server's; an 8-shard queue puts its keys
// on every node, each shard on the node that owns its slot; every call works across nodes,
// wake-ups included; topic limits hold on one shard and on eight spread over the nodes; browsing
// merges the shards' pages; and a slot moved by hand (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT
// NODE) in the middle of a workload is followed through ASK, TRYAGAIN and MOVED with no job lost.
// As in redis_test.cc, nothing asserts how long anything took.
//
// Kept whole over ~400 lines: half of it is the Cluster it builds by hand (three servers, slots,
// meets), which every test uses and a second file would have to share.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "delayq/redis.h"
#include "redis/connection.h"
#include "redis/keys.h"
#include "reports.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using redis::Reply;

constexpr Duration kLong = 30s;  // "surely by then"

TimePoint now_plus(Duration d) { return SystemClock::instance().now() + d; }

// True if nothing listens on 127.0.0.1:port (and the port can be bound now).
bool port_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// A cluster of `n` masters, no replicas, slots split evenly in order over the first `owners`
// (0: all; the others own none until a slot is moved to them). With a `password`, every node
// has it as requirepass and masterauth, and cmd() authenticates.
class Cluster {
 public:
  explicit Cluster(size_t n, std::string password = "", size_t owners = 0)
      : password_(std::move(password)), owners_(owners == 0 ? n : owners) {
    char tmpl[] = "/tmp/delayq-cluster-XXXXXX";
    if (const char* d = mkdtemp(tmpl)) dir_ = d;
    if (dir_.empty()) return;
    std::mt19937 rng(std::random_device{}());
    for (size_t i = 0; i < n; ++i) {
      bool up = false;
      // A port (and its cluster bus port, +10000) that is free now; another process may take
      // it before the server binds it, so a failed start picks another.
      for (int attempt = 0; attempt < 20 && !up; ++attempt) {
        const int port = std::uniform_int_distribution<int>(20000, 45000)(rng);
        if (!port_free(port) || !port_free(port + 10000)) continue;
        up = start(port);
      }
      if (!up) return;
    }
    ok_ = form();
  }
  ~Cluster() {
    for (pid_t p : pids_) {
      ::kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  bool ok() const { return ok_; }
  size_t size() const { return ports_.size(); }
  int port(size_t i) const { return ports_[i]; }
  std::string url(size_t i) const { return "redis://127.0.0.1:" + std::to_string(ports_[i]); }
  const std::string& id(size_t i) const { return ids_[i]; }
  std::string logs() const {
    std::string out;
    for (int p : ports_) {
      if (FILE* f = std::fopen((dir_ + "/" + std::to_string(p) + ".log").c_str(), "r")) {
        char buf[4096];
        size_t k;
        out += "---- node " + std::to_string(p) + "\n";
        while ((k = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, k);
        std::fclose(f);
      }
    }
    return out;
  }

  // One command to node i, on a fresh connection (any thread may call). A transport failure
  // comes back as an error reply.
  Reply cmd(size_t i, std::vector<std::string> argv) const {
    redis::Endpoint ep;
    ep.host = "127.0.0.1";
    ep.port = ports_[i];
    ep.url = url(i);
    ep.password = password_;
    auto c = redis::Connection::open(ep, 5s, 30s);
    if (!c) return Reply{Reply::Type::error, 0, c.status().to_string(), {}};
    std::vector<std::string_view> v(argv.begin(), argv.end());
    auto r = (*c)->call(v);
    if (!r) return Reply{Reply::Type::error, 0, r.status().to_string(), {}};
    return std::move(*r);
  }

  // The node that owns `slot` according to node 0's view (CLUSTER SLOTS).
  size_t owner(uint16_t slot) const {
    const Reply r = cmd(0, {"CLUSTER", "SLOTS"});
    for (const Reply& e : r.elements) {
      if (slot < e.elements[0].as_int() || slot > e.elements[1].as_int()) continue;
      const int64_t port = e.elements[2].elements[1].as_int();
      for (size_t i = 0; i < size(); ++i)
        if (ports_[i] == port) return i;
    }
    return size();
  }

  // Moves `slot` and its keys from node `from` to node `to` at once (IMPORTING, MIGRATING,
  // MIGRATE, NODE on every node); "" when done, else what failed.
  std::string move_slot(uint16_t slot, size_t from, size_t to) const {
    const std::string s = std::to_string(slot);
    for (const Reply& r : {cmd(to, {"CLUSTER", "SETSLOT", s, "IMPORTING", id(from)}),
                           cmd(from, {"CLUSTER", "SETSLOT", s, "MIGRATING", id(to)})})
      if (r.is_error()) return r.str;
    for (;;) {
      const Reply keys = cmd(from, {"CLUSTER", "GETKEYSINSLOT", s, "100"});
      if (keys.type != Reply::Type::array) return keys.str;
      if (keys.elements.empty()) break;
      std::vector<std::string> argv{"MIGRATE", "127.0.0.1", std::to_string(port(to)), "", "0",
                                    "10000"};
      if (!password_.empty()) argv.insert(argv.end(), {"AUTH", password_});
      argv.push_back("KEYS");
      for (const Reply& k : keys.elements) argv.push_back(k.str);
      if (const Reply m = cmd(from, argv); m.is_error()) return m.str;
    }
    for (size_t n = 0; n < size(); ++n)
      if (const Reply r = cmd(n, {"CLUSTER", "SETSLOT", s, "NODE", id(to)}); r.is_error())
        return r.str;
    return wait_ok() ? "" : "the nodes do not agree on the slot map";
  }

  // Every node reports cluster_state:ok and knows every node, and they agree on the owner of
  // every slot.
  bool wait_ok(Duration limit = 60s) const {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      bool all = true;
      std::string first;
      for (size_t i = 0; i < size() && all; ++i) {
        const std::string info = cmd(i, {"CLUSTER", "INFO"}).str;
        all = info.find("cluster_state:ok") != std::string::npos &&
              info.find("cluster_known_nodes:" + std::to_string(size())) != std::string::npos;
        std::string map;
        for (const Reply& e : cmd(i, {"CLUSTER", "SLOTS"}).elements)
          map += std::to_string(e.elements[0].as_int()) + "-" + std::to_string(e.elements[1].as_int()) +
                 "@" + std::to_string(e.elements[2].elements[1].as_int()) + " ";
        if (i == 0) first = map;
        all = all && map == first && !map.empty();
      }
      if (all) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

 private:
  bool start(int port) {
    const std::string d = dir_ + "/" + std::to_string(port);
    std::filesystem::create_directories(d);
    std::vector<std::string> args{"redis-server", "--port", std::to_string(port), "--bind",
                                  "127.0.0.1", "--cluster-enabled", "yes", "--cluster-config-file",
                                  "nodes.conf", "--cluster-node-timeout", "5000", "--dir", d,
                                  "--save", "", "--appendonly", "no", "--logfile", d + ".log",
                                  "--daemonize", "no"};
    if (!password_.empty())
      args.insert(args.end(), {"--requirepass", password_, "--masterauth", password_});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      execvp("redis-server", argv.data());
      _exit(127);
    }
    if (pid < 0) return false;
    ports_.push_back(port);
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < until) {
      const Reply r = cmd(ports_.size() - 1, {"CLUSTER", "MYID"});
      if (r.type == Reply::Type::string) {
        pids_.push_back(pid);
        ids_.push_back(r.str);
        return true;
      }
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) break;
      std::this_thread::sleep_for(20ms);
    }
    ::kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    ports_.pop_back();
    return false;
  }

  // What redis-cli --cluster create does, minus the replicas: distinct config epochs, even slot
  // ranges, and every node introduced to the first.
  bool form() {
    const size_t n = size(), k = std::min(owners_, n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t lo = 16384 * static_cast<int64_t>(i) / static_cast<int64_t>(k);
      const int64_t hi = 16384 * static_cast<int64_t>(i + 1) / static_cast<int64_t>(k) - 1;
      if (cmd(i, {"CLUSTER", "SET-CONFIG-EPOCH", std::to_string(i + 1)}).is_error()) return false;
      if (i >= k) continue;
      if (cmd(i, {"CLUSTER", "ADDSLOTSRANGE", std::to_string(lo), std::to_string(hi)}).is_error())
        return false;
    }
    for (size_t i = 1; i < n; ++i)
      if (cmd(0, {"CLUSTER", "MEET", "127.0.0.1", std::to_string(ports_[i])}).is_error()) return false;
    return wait_ok();
  }

  std::string password_;
  size_t owners_;
  std::string dir_;
  std::vector<int> ports_;
  std::vector<pid_t> pids_;
  std::vector<std::string> ids_;
  bool ok_ = false;
};

class RedisClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new Cluster(3); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(cluster_->ok()) << cluster_->logs(); }

  // A queue name whose `shards` shards have slots on every node, and the node of each shard.
  static std::string spread_name(const std::string& prefix, uint32_t shards,
                                 std::vector<size_t>* node_of = nullptr) {
    for (int k = 0;; ++k) {
      const std::string name = prefix + std::to_string(k);
      std::vector<size_t> nodes;
      std::set<size_t> seen;
      for (uint32_t s = 0; s < shards; ++s) {
        nodes.push_back(cluster_->owner(redis::key_slot(shard_tag(name, s))));
        seen.insert(nodes.back());
      }
      if (seen.size() == cluster_->size()) {
        if (node_of) *node_of = nodes;
        return name;
      }
    }
  }
  static std::string shard_tag(const std::string& queue, uint32_t s) {
    return "{dq:" + queue + ":" + std::to_string(s) + "}";
  }

  // Opens a queue through node `via` (any node will do: the client finds the others).
  static Result<std::unique_ptr<Queue>> open(const std::string& queue, uint32_t shards,
                                             size_t via = 0, Duration sweep = 1s) {
    RedisOptions o;
    o.url = cluster_->url(via);
    o.queue = queue;
    o.shards = shards;
    o.seed = 11;
    o.sweep = sweep;
    o.call_timeout = 20s;  // a call may wait out a whole slot migration
    return open_redis(o);
  }

  // The shard of an id, as the backend computes it (docs/redis.md: FNV-1a 32 modulo N).
  static uint32_t shard_of(std::string_view id, uint32_t shards) {
    uint32_t h = 2166136261u;
    for (unsigned char c : id) {
      h ^= c;
      h *= 16777619u;
    }
    return h % shards;
  }

  static Cluster* cluster_;
};

Cluster* RedisClusterTest::cluster_ = nullptr;

TEST_F(RedisClusterTest, KeySlotMatchesTheServers) {
  for (std::string key : {"", "a", "foo", "{dq:t:0}:jobs", "{dq:shop:17}:d:order-timeout", "{}x",
                          "x{}y", "{a}{b}", "a{b", "b}a{c}", "123456789"}) {
    const Reply r = cluster_->cmd(0, {"CLUSTER", "KEYSLOT", key});
    ASSERT_EQ(r.type, Reply::Type::integer) << r.str;
    EXPECT_EQ(redis::key_slot(key), r.integer) << key;
  }
}

TEST_F(RedisClusterTest, EightShardsPutTheirKeysOnEveryNode) {
  std::vector<size_t> node_of;
  const std::string name = spread_name("spread", 8, &node_of);
  auto q = open(name, 8, /*via=*/1).value();
  std::set<uint32_t> used;
  for (int i = 0; i < 200; ++i) {
    const std::string id = "job-" + std::to_string(i);
    ASSERT_TRUE(q->push({.topic = "t", .id = id, .delay = 1h}).ok());
    used.insert(shard_of(id, 8));
  }
  ASSERT_EQ(used.size(), 8u);
  // Each shard's keys on the node that owns its slot, and nowhere else.
  std::vector<int64_t> keys_on(cluster_->size(), 0);
  for (uint32_t s = 0; s < 8; ++s) {
    const std::string jobs = shard_tag(name, s) + ":jobs";
    for (size_t n = 0; n < cluster_->size(); ++n) {
      const Reply r = cluster_->cmd(n, {"CLUSTER", "COUNTKEYSINSLOT",
                                        std::to_string(redis::key_slot(jobs))});
      keys_on[n] += r.as_int();
      if (n == node_of[s]) {
        EXPECT_GT(r.as_int(), 0) << "shard " << s << " has no keys on its node";
      } else {
        EXPECT_EQ(r.as_int(), 0) << "shard " << s << " has keys on node " << n;
      }
    }
  }
  for (size_t n = 0; n < cluster_->size(); ++n) EXPECT_GT(keys_on[n], 0) << "node " << n;
  Stats st = q->stats();
  EXPECT_EQ(st.topics["t"].delayed, 200u);
  EXPECT_EQ(st.pushed, 200u);
}

TEST_F(RedisClusterTest, EveryCallWorksAcrossTheNodes) {
  std::vector<size_t> node_of;
  const std::string name = spread_name("flow", 8, &node_of);
  // A sweep of an hour: a consumer that is woken must have been woken by a message.
  auto q = open(name, 8, /*via=*/2, /*sweep=*/1h).value();
  auto other = open(name, 8, /*via=*/0, /*sweep=*/1h).value();

  // One id per node; each is pushed while a consumer (of another client) waits on an empty
  // topic, so the wake-up must travel from that node to the listener's node.
  std::map<size_t, std::string> id_on;
  for (int i = 0; id_on.size() < cluster_->size(); ++i) {
    const std::string id = "w" + std::to_string(i);
    id_on.emplace(node_of[shard_of(id, 8)], id);
  }
  for (const auto& [node, id] : id_on) {
    std::promise<Result<Delivery>> got;
    std::thread waiter([&] { got.set_value(other->reserve("wake", kLong)); });
    std::this_thread::sleep_for(200ms);  // most likely asleep by now; correct either way
    ASSERT_TRUE(q->push({.topic = "wake", .id = id, .body = "b-" + id}).ok());
    waiter.join();
    Result<Delivery> d = got.get_future().get();
    ASSERT_TRUE(d.ok()) << "node " << node << ": " << d.status().to_string();
    EXPECT_EQ(d->id, id);
    EXPECT_EQ(d->body, "b-" + id);
    // The other client settles it: it has never seen the job's topic from this side.
    EXPECT_TRUE(q->ack(d->token).ok());
    EXPECT_TRUE(other->get(id).is(Errc::not_found));
  }

  // nack, dead letters, requeue, purge; cancel, get, reschedule, touch; over 40 ids (every shard).
  RetryPolicy once;
  once.max_attempts = 1;
  for (int i = 0; i < 40; ++i)
    ASSERT_TRUE(q->push({.topic = "f", .id = "f" + std::to_string(i), .retry = once}).ok());
  std::set<std::string> seen;
  for (int i = 0; i < 40; ++i) {
    Result<Delivery> d = other->reserve("f", kLong);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    seen.insert(d->id);
    ASSERT_TRUE(other->touch(d->token).ok());
    ASSERT_TRUE(other->nack(d->token).ok());  // the only attempt: dead
    EXPECT_TRUE(q->ack(d->token).is(Errc::stale_token));
  }
  EXPECT_EQ(seen.size(), 40u);
  Result<std::vector<JobInfo>> dead = q->list_dead("f", 100);
  ASSERT_TRUE(dead.ok());
  EXPECT_EQ(dead->size(), 40u);
  EXPECT_TRUE(q->requeue_dead("f0").ok());
  EXPECT_EQ(other->get("f0")->state, JobState::ready);
  EXPECT_EQ(q->requeue_dead_topic("f").value(), 39u);
  Result<Delivery> d = q->reserve("f", kLong);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(q->dead_letter(d->token).ok());
  EXPECT_EQ(q->purge_dead("f").value(), 1u);
  for (int i = 0; i < 40; ++i) {
    const std::string id = "f" + std::to_string(i);
    if (id == d->id) continue;
    EXPECT_TRUE(other->cancel(id).ok()) << id;
  }
  ASSERT_TRUE(q->push({.topic = "r", .id = "later", .delay = 1h}).ok());
  const TimePoint when = now_plus(100ms);
  EXPECT_TRUE(other->reschedule("later", when).ok());
  Result<Delivery> later = q->reserve("r", kLong);
  ASSERT_TRUE(later.ok());
  EXPECT_GE(now_plus(0ms), when) << "delivered before the time it was rescheduled to";
  EXPECT_EQ(later->id, "later");
  EXPECT_TRUE(q->ack(later->token).ok());
  EXPECT_TRUE(q->push({.topic = "r", .id = "dup"}).ok());
  EXPECT_TRUE(other->push({.topic = "r", .id = "dup"}).is(Errc::duplicate_id));
  EXPECT_TRUE(q->cancel("dup").ok());

  const Stats st = other->stats();
  EXPECT_TRUE(st.topics.empty());
  testing::expect_totals(st, {{"pushed", 3u + 40u + 2u}, {"purged", 1}});
}

// A pause reaches every shard on every node: one job per node is held (stats lists the topic as
// paused with all of them ready), another client's consumer waiting on the topic is woken by the
// resume (a sweep of an hour: only the wake message can), and then every job comes out.
TEST_F(RedisClusterTest, APauseHoldsTheTopicOnEveryNodeAndTheResumeWakesConsumers) {
  std::vector<size_t> node_of;
  const std::string name = spread_name("pause", 8, &node_of);
  auto q = open(name, 8, /*via=*/1, /*sweep=*/1h).value();
  auto other = open(name, 8, /*via=*/2, /*sweep=*/1h).value();
  ASSERT_TRUE(q->pause("held").ok());
  std::set<std::string> ids;
  std::set<size_t> nodes;
  for (int i = 0; nodes.size() < cluster_->size(); ++i) {
    const std::string id = "p" + std::to_string(i);
    if (!nodes.insert(node_of[shard_of(id, 8)]).second) continue;
    ASSERT_TRUE(q->push({.topic = "held", .id = id}).ok());
    ids.insert(id);
  }
  EXPECT_TRUE(other->reserve("held", 200ms).is(Errc::timeout));
  const TopicStats st = other->stats().topics["held"];
  EXPECT_TRUE(st.paused);
  EXPECT_EQ(st.ready, ids.size());
  std::promise<Result<Delivery>> got;
  std::thread waiter([&] { got.set_value(other->reserve("held", kLong)); });
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(q->resume("held").ok());
  Result<Delivery> first = got.get_future().get();
  waiter.join();
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  std::set<std::string> out{first->id};
  while (out.size() < ids.size()) {
    Result<Delivery> d = other->reserve("held", kLong);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    out.insert(d->id);
  }
  EXPECT_EQ(out, ids);
  EXPECT_FALSE(q->stats().topics["held"].paused);
}

// Topic limits in a cluster: a queue of one shard (one slot, one node) keeps them for clients
// opened through any node, and a freed place wakes a waiter of another client (a sweep of an
// hour: only the published wake-up can).
TEST_F(RedisClusterTest, LimitsHoldForClientsOfEveryNodeOnOneShard) {
  auto a = open("limited", 1, /*via=*/0, /*sweep=*/1h).value();
  auto b = open("limited", 1, /*via=*/2, /*sweep=*/1h).value();
  ASSERT_TRUE(a->set_topic_limits("t", TopicLimits{.max_in_flight = 1}).ok());
  for (const char* id : {"x", "y"}) ASSERT_TRUE(a->push({.topic = "t", .id = id}).ok());
  Result<Delivery> first = b->reserve("t", 0ms);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  std::promise<Result<Delivery>> got;
  auto fut = got.get_future();
  std::thread waiter([&] { got.set_value(a->reserve("t", kLong)); });
  EXPECT_EQ(fut.wait_for(300ms), std::future_status::timeout) << "past the cap";
  EXPECT_EQ(a->stats().flow["t"].in_flight, 1u);
  ASSERT_TRUE(b->ack(first->token).ok());
  ASSERT_EQ(fut.wait_for(5s), std::future_status::ready) << "the ack did not wake the waiter";
  waiter.join();
  Result<Delivery> second = fut.get();
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_EQ(second->id, "y");
}

// Topic limits on eight shards spread over the three nodes: the home shard (shard 0, on one node)
// keeps one bucket and one cap for the jobs of every node and the clients of every node; an ack
// on another node frees its place there and wakes a waiter of another client (a sweep of an
// hour: only the published wake-up can).
TEST_F(RedisClusterTest, LimitsHoldAcrossTheNodesOfEightShards) {
  const std::string name = spread_name("limited-sharded", 8);
  auto a = open(name, 8, /*via=*/0, /*sweep=*/1h).value();
  auto b = open(name, 8, /*via=*/2, /*sweep=*/1h).value();
  ASSERT_TRUE(a->set_topic_limits("t", TopicLimits{.rate = TopicLimits::Rate{.count = 4,
                                                                             .per = 24h,
                                                                             .burst = 4},
                                                   .max_in_flight = 2})
                  .ok());
  for (int i = 0; i < 40; ++i)
    ASSERT_TRUE(a->push({.topic = "t", .id = "lim" + std::to_string(i), .ttr = 1h}).ok());
  std::vector<Delivery> held;
  for (int i = 0; i < 16; ++i)
    if (Result<Delivery> d = (i % 2 ? a : b)->reserve("t", 0ms); d.ok()) held.push_back(*d);
  ASSERT_EQ(held.size(), 2u) << "the cap is one for every shard and client";
  EXPECT_EQ(b->stats().flow["t"].in_flight, 2u);
  std::promise<Result<Delivery>> got;
  auto fut = got.get_future();
  std::thread waiter([&] { got.set_value(a->reserve("t", kLong)); });
  EXPECT_EQ(fut.wait_for(300ms), std::future_status::timeout) << "past the cap";
  ASSERT_TRUE(b->ack(held[0].token).ok());
  ASSERT_EQ(fut.wait_for(5s), std::future_status::ready) << "the ack did not wake the waiter";
  waiter.join();
  Result<Delivery> third = fut.get();
  ASSERT_TRUE(third.ok()) << third.status().to_string();
  ASSERT_TRUE(a->ack(held[1].token).ok());
  ASSERT_TRUE(b->ack(third->token).ok());
  int more = 0;
  for (int i = 0; i < 16; ++i) more += (i % 2 ? a : b)->reserve("t", 0ms).ok() ? 1 : 0;
  EXPECT_EQ(more, 1) << "4 tokens a day in all";
  const TopicFlow f = a->stats().flow["t"];
  EXPECT_EQ(f.tokens, 0u);
  EXPECT_EQ(f.in_flight, 1u);
}

TEST_F(RedisClusterTest, ASlotMovedMidWorkloadIsFollowedAndNothingIsLost) {
  std::vector<size_t> node_of;
  const std::string name = spread_name("move", 8, &node_of);
  auto q = open(name, 8).value();
  constexpr int kJobs = 3000;
  std::mutex mu;
  std::set<std::string> acked;
  std::map<std::string, TimePoint> due;  // push time + delay, read before the push
  std::atomic<int> duplicates{0}, early{0};
  Consumer consumer = q->consume(
      "w",
      [&](const Delivery& d) {
        const TimePoint at = now_plus(0ms);
        std::lock_guard lock(mu);
        if (!acked.insert(d.id).second) duplicates.fetch_add(1);
        const auto it = due.find(d.id);
        if (it == due.end() || at < it->second) early.fetch_add(1);
        return HandlerResult::ack();
      },
      2);

  // The slot of shard 0 moves from its owner to the next node while jobs are pushed.
  const uint16_t slot = redis::key_slot(shard_tag(name, 0));
  const size_t from = node_of[0], to = (from + 1) % cluster_->size();
  std::atomic<int> pushed{0};
  std::atomic<bool> push_failed{false};
  std::thread pusher([&] {
    for (int i = 0; i < kJobs; ++i) {
      const std::string id = "m" + std::to_string(i);
      const Duration delay = std::chrono::milliseconds(i % 200);
      {
        std::lock_guard lock(mu);
        due[id] = now_plus(delay);
      }
      Result<std::string> r = q->push({.topic = "w", .id = id, .delay = delay});
      if (!r) {
        ADD_FAILURE() << "push " << i << ": " << r.status().to_string();
        push_failed = true;
        return;
      }
      pushed.fetch_add(1);
      if (i % 10 == 0) std::this_thread::sleep_for(1ms);  // spread the pushes over the move
    }
  });
  while (pushed.load() < kJobs / 4 && !push_failed.load()) std::this_thread::sleep_for(1ms);

  const std::string s = std::to_string(slot);
  ASSERT_FALSE(cluster_->cmd(to, {"CLUSTER", "SETSLOT", s, "IMPORTING", cluster_->id(from)}).is_error());
  ASSERT_FALSE(cluster_->cmd(from, {"CLUSTER", "SETSLOT", s, "MIGRATING", cluster_->id(to)}).is_error());
  int moved_keys = 0;
  for (;;) {
    // A few keys at a time, with pauses, so that calls meet the slot half moved.
    const Reply keys = cluster_->cmd(from, {"CLUSTER", "GETKEYSINSLOT", s, "3"});
    ASSERT_EQ(keys.type, Reply::Type::array) << keys.str;
    if (keys.elements.empty()) break;
    std::vector<std::string> argv{"MIGRATE", "127.0.0.1", std::to_string(cluster_->port(to)), "",
                                  "0", "10000", "KEYS"};
    for (const Reply& k : keys.elements) argv.push_back(k.str);
    const Reply m = cluster_->cmd(from, argv);
    ASSERT_FALSE(m.is_error()) << m.str;
    moved_keys += static_cast<int>(keys.elements.size());
    std::this_thread::sleep_for(20ms);
  }
  std::this_thread::sleep_for(100ms);  // every key moved, slot still migrating: ASK
  for (size_t n : {to, from, 3 - to - from})
    ASSERT_FALSE(cluster_->cmd(n, {"CLUSTER", "SETSLOT", s, "NODE", cluster_->id(to)}).is_error());
  EXPECT_GT(moved_keys, 0);

  pusher.join();
  ASSERT_FALSE(push_failed.load());
  const auto until = std::chrono::steady_clock::now() + 60s;
  for (;;) {
    {
      std::lock_guard lock(mu);
      if (acked.size() == static_cast<size_t>(kJobs)) break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "jobs lost: " << kJobs - acked.size();
    std::this_thread::sleep_for(10ms);
  }
  consumer.stop();
  EXPECT_EQ(duplicates.load(), 0);
  EXPECT_EQ(early.load(), 0) << "jobs delivered before the due time the test computed";
  // The shard now lives on the new node only, and the queue is empty.
  const std::string seq = shard_tag(name, 0) + ":seq";
  EXPECT_EQ(cluster_->cmd(to, {"EXISTS", seq}).as_int(), 1);
  EXPECT_TRUE(cluster_->cmd(from, {"EXISTS", seq}).str.starts_with("MOVED"));
  const Stats st = q->stats();
  EXPECT_TRUE(st.topics.empty());
  EXPECT_EQ(st.acked, static_cast<uint64_t>(kJobs));
  ASSERT_TRUE(cluster_->wait_ok());
}


// Browsing (issue 22): list_jobs calls each shard on the node of its slot and merges the pages.
TEST_F(RedisClusterTest, BrowsingListsEveryShardOnItsNodeInOrder) {
  const std::string name = spread_name("browse", 8);
  auto q = open(name, 8, /*via=*/2).value();
  std::vector<std::string> ids;
  for (int i = 0; i < 40; ++i) {
    ids.push_back("b-" + std::to_string(i));
    ASSERT_TRUE(q->push({.topic = "t", .id = ids.back(), .delay = 1h + std::chrono::seconds(40 - i)}).ok());
  }
  std::vector<std::string> listed;
  std::string cursor;
  do {
    auto page = q->list_jobs("t", JobState::delayed, 7, cursor);
    ASSERT_TRUE(page.ok()) << page.status().to_string();
    for (const JobInfo& j : page->jobs) listed.push_back(j.id);
    cursor = page->cursor;
  } while (!cursor.empty());
  std::reverse(ids.begin(), ids.end());  // the last pushed is due first
  EXPECT_EQ(listed, ids);
}

// AUTH in a cluster: every node has requirepass and masterauth. A client without the password is
// refused naming AUTH; with it (percent-encoded in the url, or in the options), every call and
// every wake-up work, also on a node the client first hears of from a MOVED reply: node 2 owns
// no slot when the clients open the queue, then the queue's slot moves to it.
TEST(RedisClusterAuth, EveryNodeAuthenticatesAlsoANodeFirstNamedByMoved) {
  const std::string password = "cluster pw";
  Cluster c(3, password, /*owners=*/2);
  ASSERT_TRUE(c.ok()) << c.logs();
  RedisOptions o;
  o.url = c.url(0);
  o.queue = "guarded";
  o.sweep = 1h;  // a waiting reserve ends on a wake message only
  o.call_timeout = 20s;
  Result<std::unique_ptr<Queue>> none = open_redis(o);
  ASSERT_TRUE(none.is(Errc::invalid_argument)) << none.status().to_string();
  EXPECT_NE(none.status().message().find("NOAUTH"), std::string::npos) << none.status().message();
  o.url = "redis://:cluster%20pw@127.0.0.1:" + std::to_string(c.port(0));
  auto q = open_redis(o).value();
  o.url = c.url(1);
  o.password = password;
  auto other = open_redis(o).value();

  const uint16_t slot = redis::key_slot("{dq:guarded:0}");
  const size_t from = c.owner(slot);
  ASSERT_LT(from, 2u);
  ASSERT_TRUE(q->push({.topic = "t", .id = "before"}).ok());
  ASSERT_EQ(c.move_slot(slot, from, 2), "") << c.logs();
  for (const char* id : {"after", "woken"}) {
    std::promise<Result<Delivery>> got;
    std::thread waiter([&] { got.set_value(other->reserve(id, kLong)); });
    std::this_thread::sleep_for(200ms);  // most likely waiting by now; correct either way
    const Status pushed = q->push({.topic = id, .id = id}).status();  // MOVED to node 2, first for q
    waiter.join();  // before any assertion returns
    ASSERT_TRUE(pushed.ok()) << pushed.to_string();
    Result<Delivery> d = got.get_future().get();
    ASSERT_TRUE(d.ok()) << id << ": " << d.status().to_string();
    EXPECT_EQ(d->id, id);
    EXPECT_TRUE(q->ack(d->token).ok());
  }
  Result<Delivery> d = other->reserve("t", kLong);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->id, "before");
  EXPECT_TRUE(other->ack(d->token).ok());
  EXPECT_EQ(c.cmd(2, {"EXISTS", "{dq:guarded:0}:seq"}).as_int(), 1);
  EXPECT_EQ(other->stats().acked, 3u);
}

}  // namespace
}  // namespace delayq
