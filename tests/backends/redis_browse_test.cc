// Browsing on the Redis backend (Queue::list_jobs, lua/list_jobs.lua; docs/redis.md, "Browsing"),
// on a test clock (RedisOptions::clock): each state in its order a page at a time, where Redis
// keeps it in its own way (ties of a due time or lease deadline, which the zsets sort by id, in
// push order; ready jobs across the q and r zsets); pages while jobs move, the cursor's own job
// included; the dead order and dead_since; the cursors refused; four shards merged.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/cursor.h"
#include "delayq/redis.h"
#include "redis_server.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using testing::RedisServer;
using Ids = std::vector<std::string>;

// 2026-01-01T00:00:00Z: months behind the server's clock, so that a script reading TIME instead
// of the test clock would find every job due.
const TimePoint kStart = TimePoint(1767225600s);

class RedisBrowse : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.started()) << server_.log(); }

  Queue& open(uint32_t shards = 1) {
    RedisOptions o;
    o.url = server_.url();
    o.queue = "b" + std::to_string(shards);
    o.shards = shards;
    o.seed = 7;
    o.clock = &clock_;
    auto q = open_redis(o);
    EXPECT_TRUE(q.ok()) << q.status().to_string();
    if (q.ok()) q_ = std::move(q).value();
    return *q_;
  }

  void push(JobSpec spec) {
    auto r = q_->push(std::move(spec));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
  }
  Delivery take(const std::string& topic) {
    auto d = q_->reserve(topic, 0ms);
    EXPECT_TRUE(d.ok()) << d.status().to_string();
    return d.ok() ? *d : Delivery{};
  }

  // One page: its jobs and cursor.
  JobPage page(const std::string& topic, JobState state, const std::string& cursor, size_t limit = 3) {
    auto p = q_->list_jobs(topic, state, limit, cursor);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    if (!p.ok()) return {};
    EXPECT_LE(p->jobs.size(), limit);
    for (const JobInfo& j : p->jobs) {
      EXPECT_EQ(j.state, state) << j.id;
      EXPECT_EQ(j.topic, topic) << j.id;
    }
    return *p;
  }
  static Ids ids_of(const std::vector<JobInfo>& jobs) {
    Ids ids;
    for (const JobInfo& j : jobs) ids.push_back(j.id);
    return ids;
  }
  // Every job from `cursor` on, a page of `limit` at a time; `pages` counts them.
  std::vector<JobInfo> rest(const std::string& topic, JobState state, std::string cursor,
                            size_t limit = 3, int* pages = nullptr) {
    std::vector<JobInfo> all;
    for (int n = 1; n < 1000; ++n) {
      JobPage p = page(topic, state, cursor, limit);
      if (pages) *pages = n;
      all.insert(all.end(), p.jobs.begin(), p.jobs.end());
      if (p.cursor.empty()) return all;
      EXPECT_FALSE(p.jobs.empty()) << "a page with a cursor and no job";
      cursor = p.cursor;
    }
    ADD_FAILURE() << "no end";
    return all;
  }
  Ids all(const std::string& topic, JobState state, size_t limit = 3) {
    return ids_of(rest(topic, state, "", limit));
  }
  std::string refusal(const std::string& topic, JobState state, size_t limit, const std::string& cursor) {
    auto p = q_->list_jobs(topic, state, limit, cursor);
    if (p.ok()) return "accepted";
    EXPECT_EQ(p.status().code(), Errc::invalid_argument) << p.status().to_string();
    return p.status().message();
  }

  RedisServer server_;
  ManualClock clock_{kStart};
  std::unique_ptr<Queue> q_;
};

// Due times with ties whose ids sort against their push order, a tie cut by a page's end, and a
// job of another topic and a ready one that stay out.
TEST_F(RedisBrowse, DelayedJobsComeByDueTimeThenPushOrder) {
  open();
  push({.topic = "t", .id = "late", .delay = 30s});
  for (const char* id : {"t5", "t4", "t3", "t2", "t1"}) push({.topic = "t", .id = id, .delay = 5s});
  push({.topic = "t", .id = "a6", .delay = 6s});
  push({.topic = "t", .id = "a5", .delay = 5s - 1us});
  push({.topic = "u", .id = "other", .delay = 5s});
  push({.topic = "t", .id = "now"});
  const Ids order{"a5", "t5", "t4", "t3", "t2", "t1", "a6", "late"};
  int pages = 0;
  std::vector<JobInfo> jobs = rest("t", JobState::delayed, "", 3, &pages);
  EXPECT_EQ(ids_of(jobs), order);
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(jobs.size(), order.size());
  EXPECT_EQ(jobs[1].due, kStart + 5s);
  for (size_t limit : {1u, 2u, 4u, 1000u}) EXPECT_EQ(all("t", JobState::delayed, limit), order) << limit;
}

// Hand-out order over q's urgent part, r and q's rest; checked against reserve() itself.
TEST_F(RedisBrowse, ReadyJobsComeInHandOutOrderAcrossPriorities) {
  open();
  push({.topic = "t", .id = "p2000", .priority = 2000});
  push({.topic = "t", .id = "d1"});
  push({.topic = "t", .id = "p5a", .priority = 5});
  push({.topic = "t", .id = "d2"});
  push({.topic = "t", .id = "p1025", .priority = 1025});
  push({.topic = "t", .id = "p0", .priority = 0});
  push({.topic = "t", .id = "p5b", .priority = 5});
  push({.topic = "t", .id = "was-delayed", .delay = 1s, .priority = 5});
  push({.topic = "t", .id = "d3"});
  push({.topic = "t", .id = "p1023", .priority = 1023});
  clock_.advance(1s);
  const Ids order{"p0", "p5a", "p5b", "was-delayed", "p1023", "d1", "d2", "d3", "p1025", "p2000"};
  for (size_t limit : {1u, 2u, 3u, 4u, 1000u}) EXPECT_EQ(all("t", JobState::ready, limit), order) << limit;
  Ids handed;
  for (size_t i = 0; i < order.size(); ++i) handed.push_back(take("t").id);
  EXPECT_EQ(handed, order);
  EXPECT_TRUE(all("t", JobState::ready).empty());
}

// Lease deadlines with ties (ids sorting against push order).
TEST_F(RedisBrowse, ReservedJobsComeByLeaseDeadline) {
  open();
  for (auto [id, ttr] : std::vector<std::pair<const char*, Duration>>{
           {"x", 50s}, {"y", 10s}, {"z", 30s}, {"w", 10s}, {"v", 20s}})
    push({.topic = "t", .id = id, .ttr = ttr});
  push({.topic = "t", .id = "stays-ready"});
  for (int i = 0; i < 5; ++i) take("t");
  std::vector<JobInfo> jobs = rest("t", JobState::reserved, "");
  EXPECT_EQ(ids_of(jobs), (Ids{"y", "w", "v", "z", "x"}));
  ASSERT_EQ(jobs.size(), 5u);
  EXPECT_EQ(jobs[0].lease_deadline, kStart + 10s);
  EXPECT_EQ(all("t", JobState::reserved, 1), (Ids{"y", "w", "v", "z", "x"}));
}

// Dead in the order they died, with when: a dead letter, a last nack, a last lease running out
// (dead since the lease's end, not since the call that noticed it).
TEST_F(RedisBrowse, DeadJobsComeInTheOrderTheyDiedWithWhen) {
  open();
  const RetryPolicy once{.max_attempts = 1};
  for (const char* id : {"a", "b", "c", "d"}) push({.topic = "t", .id = id, .retry = once});
  push({.topic = "t", .id = "expires", .ttr = 10s, .retry = once});
  std::vector<Delivery> d;
  for (int i = 0; i < 5; ++i) d.push_back(take("t"));
  ASSERT_TRUE(q_->dead_letter(d[2].token).ok());  // c at +0
  clock_.advance(1s);
  ASSERT_TRUE(q_->nack(d[0].token).ok());  // a at +1 s: its last attempt
  clock_.advance(1s);
  ASSERT_TRUE(q_->dead_letter(d[3].token).ok());  // d at +2 s
  clock_.advance(20s);                             // expires' lease ran out at +10 s
  ASSERT_TRUE(q_->dead_letter(d[1].token).ok());  // b at +22 s, after expires was noticed
  std::vector<JobInfo> jobs = rest("t", JobState::dead, "", 2);
  EXPECT_EQ(ids_of(jobs), (Ids{"c", "a", "d", "expires", "b"}));
  ASSERT_EQ(jobs.size(), 5u);
  const std::vector<TimePoint> when{kStart, kStart + 1s, kStart + 2s, kStart + 10s, kStart + 22s};
  for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(jobs[i].dead_since, when[i]) << jobs[i].id;
  EXPECT_EQ(q_->get("a")->dead_since, kStart + 1s);
  push({.topic = "t", .id = "alive"});
  EXPECT_EQ(q_->get("alive")->dead_since, TimePoint{});
  // Requeued and dead again: listed at its new death, last.
  ASSERT_TRUE(q_->requeue_dead("c").ok());
  Delivery again = take("t");
  ASSERT_EQ(again.id, "alive");
  again = take("t");
  ASSERT_EQ(again.id, "c");
  ASSERT_TRUE(q_->dead_letter(again.token).ok());
  EXPECT_EQ(all("t", JobState::dead), (Ids{"a", "d", "expires", "b", "c"}));
  EXPECT_EQ(q_->list_dead("t", 10)->front().dead_since, kStart + 1s);
}


// Ready pages while jobs move: reserved, the cursor's own job cancelled (in r, then in q, where
// the page resumes at the rank the gone member would have), jobs pushed after the cursor's place
// (listed) and before it (not listed).
TEST_F(RedisBrowse, ReadyPagesStayConsistentWhileJobsMove) {
  open();
  for (int i = 0; i < 4; ++i) push({.topic = "t", .id = "q" + std::to_string(i), .priority = 7});
  for (int i = 0; i < 6; ++i) push({.topic = "t", .id = "r" + std::to_string(i)});
  JobPage p1 = page("t", JobState::ready, "");
  EXPECT_EQ(ids_of(p1.jobs), (Ids{"q0", "q1", "q2"}));
  EXPECT_EQ(take("t").id, "q0");
  ASSERT_TRUE(q_->cancel("q2").ok());                  // the cursor's job, in q
  push({.topic = "t", .id = "q-after", .priority = 7});   // after it in q
  push({.topic = "t", .id = "q-before", .priority = 6});  // before it: not listed
  JobPage p2 = page("t", JobState::ready, p1.cursor);
  EXPECT_EQ(ids_of(p2.jobs), (Ids{"q3", "q-after", "r0"}));
  ASSERT_TRUE(q_->cancel("r0").ok());  // the cursor's job, in r
  push({.topic = "t", .id = "r-new"});
  push({.topic = "t", .id = "low", .priority = 5000});
  EXPECT_EQ(ids_of(rest("t", JobState::ready, p2.cursor)),
            (Ids{"r1", "r2", "r3", "r4", "r5", "r-new", "low"}));
}

// Delayed and reserved pages while jobs move: the cursor's job gone, a tie of its due time
// pushed later (after it), a job before it (not listed), one rescheduled behind it (listed
// there), one falling due (gone from the delayed pages).
TEST_F(RedisBrowse, DelayedAndReservedPagesStayConsistentWhileJobsMove) {
  open();
  for (int i = 0; i < 9; ++i)
    push({.topic = "t", .id = "d" + std::to_string(i), .delay = 10s + std::chrono::seconds(i)});
  JobPage p1 = page("t", JobState::delayed, "");
  EXPECT_EQ(ids_of(p1.jobs), (Ids{"d0", "d1", "d2"}));
  ASSERT_TRUE(q_->cancel("d2").ok());
  push({.topic = "t", .id = "before", .delay = 11s + 500ms});
  push({.topic = "t", .id = "tie", .delay = 12s});
  push({.topic = "t", .id = "after", .delay = 15s + 1ms});
  ASSERT_TRUE(q_->reschedule("d4", kStart + 40s).ok());
  clock_.advance(11s + 600ms);  // d0, d1 and before fall due
  EXPECT_EQ(ids_of(rest("t", JobState::delayed, p1.cursor)),
            (Ids{"tie", "d3", "d5", "after", "d6", "d7", "d8", "d4"}));

  clock_.advance(2s);  // tie and d3 too
  std::vector<Delivery> d;
  for (int i = 0; i < 5; ++i) d.push_back(take("t"));  // leases alike: listed in push order
  EXPECT_EQ(all("t", JobState::reserved, 1), (Ids{"d0", "d1", "d3", "before", "tie"}));
  JobPage r1 = page("t", JobState::reserved, "", 2);
  EXPECT_EQ(ids_of(r1.jobs), (Ids{"d0", "d1"}));
  ASSERT_EQ(d[1].id, "d1");
  ASSERT_EQ(d[4].id, "d3");
  ASSERT_TRUE(q_->ack(d[1].token).ok());  // the cursor's job
  ASSERT_TRUE(q_->ack(d[4].token).ok());  // the next one
  EXPECT_EQ(ids_of(rest("t", JobState::reserved, r1.cursor, 2)), (Ids{"before", "tie"}));
}

TEST_F(RedisBrowse, DeadPagesResumeByDeathWhenTheCursorsJobIsRequeued) {
  open();
  std::vector<Delivery> d;
  for (int i = 0; i < 6; ++i) push({.topic = "t", .id = "j" + std::to_string(i)});
  for (int i = 0; i < 6; ++i) d.push_back(take("t"));
  for (int i : {5, 4, 3, 2, 1, 0}) ASSERT_TRUE(q_->dead_letter(d[static_cast<size_t>(i)].token).ok());
  JobPage p1 = page("t", JobState::dead, "");
  EXPECT_EQ(ids_of(p1.jobs), (Ids{"j5", "j4", "j3"}));
  ASSERT_TRUE(q_->requeue_dead("j3").ok());
  ASSERT_TRUE(q_->requeue_dead("j4").ok());
  EXPECT_EQ(ids_of(rest("t", JobState::dead, p1.cursor)), (Ids{"j2", "j1", "j0"}));
}

TEST_F(RedisBrowse, BadCursorsAndLimitsAreRefusedByName) {
  open();
  for (int i = 0; i < 5; ++i) push({.topic = "t", .id = "r" + std::to_string(i)});
  push({.topic = "u", .id = "u0"});
  const std::string cursor = page("t", JobState::ready, "", 2).cursor;
  ASSERT_FALSE(cursor.empty());
  EXPECT_NE(refusal("u", JobState::ready, 2, cursor).find("cursor belongs to another topic"),
            std::string::npos);
  EXPECT_EQ(refusal("t", JobState::dead, 2, cursor), "cursor is for state ready, not dead");
  std::string flipped = cursor;
  char& c = flipped[cursor.size() / 2];
  c = c == 'A' ? 'B' : 'A';
  EXPECT_NE(refusal("t", JobState::ready, 2, flipped).find("cursor is damaged"), std::string::npos);
  EXPECT_NE(refusal("t", JobState::ready, 2, "c2" + cursor.substr(2)).find("not a delayq cursor"),
            std::string::npos);
  for (size_t bad : {0u, 1001u})
    EXPECT_NE(refusal("t", JobState::ready, bad, "").find("limit must be between 1 and 1000"),
              std::string::npos)
        << bad;
  EXPECT_NE(refusal("", JobState::ready, 3, ""), "accepted");
  // Forged: the checksum holds, a shard position does not read as the script's.
  for (const auto& [state, position] : std::vector<std::pair<JobState, Ids>>{
           {JobState::ready, {"q", "x", ""}},
           {JobState::ready, {"q", "7", "short"}},
           {JobState::ready, {"z", "1", ""}},
           {JobState::delayed, {"12", "", ""}},
           {JobState::dead, {"1", "2", ""}},
           {JobState::reserved, {"1e9", "1", ""}}}) {
    cursor::Cursor forged{.state = state, .topic_fp = cursor::topic_fingerprint("t")};
    forged.shards = {cursor::pack(position)};
    EXPECT_EQ(refusal("t", state, 2, cursor::encode(forged)),
              "cursor is damaged (a shard position does not read)")
        << position[0] << " " << position[1];
  }
  EXPECT_EQ(ids_of(rest("t", JobState::ready, cursor)), (Ids{"r2", "r3", "r4"}));  // still good
  JobPage none = page("nothing", JobState::delayed, "", 10);
  EXPECT_TRUE(none.jobs.empty());
  EXPECT_TRUE(none.cursor.empty());
}

// Four shards: each lists its part, the pages merge them by the state's key, and a cursor of a
// queue with another shard count is refused.
TEST_F(RedisBrowse, FourShardsMergeInKeyOrder) {
  open(4);
  Ids ids;
  for (int i = 0; i < 40; ++i) {
    ids.push_back("j" + std::to_string(i));
    push({.topic = "t", .id = ids.back(), .delay = std::chrono::seconds(1 + (i * 7) % 11),
          .ttr = std::chrono::seconds(100 - i), .priority = static_cast<uint32_t>(1022 + i % 4)});
  }
  const auto by = [](auto field) {
    return [field](const JobInfo& a, const JobInfo& b) { return field(a) < field(b); };
  };
  const std::set<std::string> every(ids.begin(), ids.end());
  for (size_t limit : {1u, 3u, 7u, 1000u}) {
    std::vector<JobInfo> delayed = rest("t", JobState::delayed, "", limit);
    const Ids listed = ids_of(delayed);
    EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()), every) << limit;
    EXPECT_EQ(delayed.size(), ids.size());
    EXPECT_TRUE(std::is_sorted(delayed.begin(), delayed.end(), by([](const JobInfo& j) { return j.due; })));
  }
  clock_.advance(12s);
  std::vector<JobInfo> ready = rest("t", JobState::ready, "", 3);
  ASSERT_EQ(ready.size(), ids.size());
  EXPECT_TRUE(std::is_sorted(ready.begin(), ready.end(), by([](const JobInfo& j) {
    return std::pair(j.priority, j.due);
  })));
  // Jobs reserved between pages: the rest holds each job left once, none listed twice.
  JobPage first = page("t", JobState::ready, "", 5);
  std::set<std::string> seen;
  for (const JobInfo& j : first.jobs) seen.insert(j.id);
  for (int i = 0; i < 8; ++i) take("t");
  for (const JobInfo& j : rest("t", JobState::ready, first.cursor)) EXPECT_TRUE(seen.insert(j.id).second) << j.id;
  for (const std::string& id : ids)
    if (q_->get(id)->state == JobState::ready) {
      EXPECT_TRUE(seen.count(id)) << id << " skipped";
    }
  std::vector<JobInfo> reserved = rest("t", JobState::reserved, "", 2);
  EXPECT_EQ(reserved.size(), 8u);
  EXPECT_TRUE(std::is_sorted(reserved.begin(), reserved.end(),
                             by([](const JobInfo& j) { return j.lease_deadline; })));
  RedisOptions o;
  o.url = server_.url();
  o.queue = "b1";
  o.clock = &clock_;
  auto one = open_redis(o);
  ASSERT_TRUE(one.ok());
  auto other = (*one)->list_jobs("t", JobState::ready, 3, first.cursor);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("4 shard positions, the queue has 1"), std::string::npos)
      << other.status().to_string();
}


// Due times closer than a microsecond fall on one microsecond (rounded up, docs/redis.md "Time"),
// and are then listed in push order.
TEST_F(RedisBrowse, DueTimesWithinAMicrosecondAreListedInPushOrder) {
  open();
  push({.topic = "t", .id = "first", .delay = 7s});
  push({.topic = "t", .id = "second", .delay = 7s - 1ns});
  push({.topic = "t", .id = "earlier", .delay = 7s - 1us});
  EXPECT_EQ(all("t", JobState::delayed, 1), (Ids{"earlier", "first", "second"}));
}

// The shard of an id, as the backend computes it (docs/redis.md: FNV-1a 32 modulo the shards).
uint32_t shard_of(std::string_view id, uint32_t shards) {
  uint32_t h = 2166136261u;
  for (unsigned char c : id) {
    h ^= c;
    h *= 16777619u;
  }
  return h % shards;
}

// A shard no page took a job from yet resumes after the cursor's boundary: a job it gets before
// the boundary is not listed, one after it is (delayed: from the boundary's score; ready: its
// first jobs passed until one is after the boundary).
TEST_F(RedisBrowse, AShardNotListedYetResumesAfterTheBoundary) {
  open(4);
  std::vector<std::vector<std::string>> by_shard(4);
  for (int i = 0; i < 64; ++i) {
    const std::string id = "s" + std::to_string(i);
    by_shard[shard_of(id, 4)].push_back(id);
  }
  const std::vector<std::string>& x = by_shard[0];
  const std::vector<std::string>& y = by_shard[1];
  ASSERT_GE(x.size(), 3u);
  ASSERT_GE(y.size(), 9u);
  for (int i = 0; i < 3; ++i) push({.topic = "t", .id = x[i], .delay = std::chrono::seconds(1 + i)});
  push({.topic = "t", .id = y[0], .delay = 10s});
  JobPage p1 = page("t", JobState::delayed, "");
  EXPECT_EQ(ids_of(p1.jobs), (Ids{x[0], x[1], x[2]}));
  push({.topic = "t", .id = y[1], .delay = 2s + 500ms});  // before the boundary (x[2], 3 s)
  push({.topic = "t", .id = y[2], .delay = 5s});
  EXPECT_EQ(ids_of(rest("t", JobState::delayed, p1.cursor)), (Ids{y[2], y[0]}));

  // Ready: x's three listed; y gets a job more urgent than the boundary (not listed), and more
  // of them than a shard's read (4 per call with a page of 3) before the one after it.
  clock_.advance(11s);
  for (const std::string& id : {y[0], y[1], y[2]}) ASSERT_TRUE(q_->cancel(id).ok());
  JobPage r1 = page("t", JobState::ready, "");
  EXPECT_EQ(ids_of(r1.jobs), (Ids{x[0], x[1], x[2]}));
  EXPECT_TRUE(r1.cursor.empty());
  push({.topic = "t", .id = y[2], .priority = 2000});
  r1 = page("t", JobState::ready, "");
  ASSERT_FALSE(r1.cursor.empty());
  for (size_t i = 3; i < y.size() && i < 9; ++i) push({.topic = "t", .id = y[i], .priority = 5});
  push({.topic = "t", .id = y[0], .priority = 1500});
  EXPECT_EQ(ids_of(rest("t", JobState::ready, r1.cursor)), (Ids{y[0], y[2]}));
}

}  // namespace
}  // namespace delayq
