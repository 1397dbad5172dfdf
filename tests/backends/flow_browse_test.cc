// Browsing (Queue::list_jobs) on every backend, on a ManualClock: each state in its order a page at
// a time; pages that stay consistent while jobs move; cursors of another topic or state, damaged
// or forged, refused; the dead letters' order across a restart; a tiered store's disk jobs listed
// after its memory jobs; several shards merged.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "flow_redis.h"

namespace delayq::flow {
namespace {

struct Listing {
  std::vector<std::string> ids;
  std::vector<JobInfo> jobs;
  int pages = 0;
};

// Every page of `topic`'s jobs in `state`, `limit` at a time, until a page without a cursor
// (every page before it holds jobs).
Listing list_all(Queue& q, const std::string& topic, JobState state, size_t limit = 3) {
  Listing out;
  std::string cursor;
  for (;;) {
    auto page = q.list_jobs(topic, state, limit, cursor);
    EXPECT_TRUE(page.ok()) << page.status().to_string();
    if (!page.ok()) return out;
    ++out.pages;
    EXPECT_LE(page->jobs.size(), limit);
    for (JobInfo& j : page->jobs) {
      EXPECT_EQ(j.state, state) << j.id;
      EXPECT_EQ(j.topic, topic) << j.id;
      out.ids.push_back(j.id);
      out.jobs.push_back(std::move(j));
    }
    if (page->cursor.empty()) return out;
    EXPECT_FALSE(page->jobs.empty());
    if (out.pages > 1000) {
      ADD_FAILURE() << "no end";
      return out;
    }
    cursor = page->cursor;
  }
}

using Ids = std::vector<std::string>;

// One page: its ids and its cursor.
std::pair<Ids, std::string> page_of(Queue& q, const std::string& topic, JobState state,
                                    const std::string& cursor, size_t limit = 3) {
  auto page = q.list_jobs(topic, state, limit, cursor);
  EXPECT_TRUE(page.ok()) << page.status().to_string();
  if (!page.ok()) return {};
  Ids ids;
  for (const JobInfo& j : page->jobs) ids.push_back(j.id);
  return {ids, page->cursor};
}

// The rest of the pages from `cursor` on.
Ids rest_of(Queue& q, const std::string& topic, JobState state, std::string cursor) {
  Ids ids;
  while (!cursor.empty()) {
    auto [part, next] = page_of(q, topic, state, cursor);
    ids.insert(ids.end(), part.begin(), part.end());
    cursor = next;
  }
  return ids;
}

std::string refusal(Queue& q, const std::string& topic, JobState state, size_t limit,
                    const std::string& cursor) {
  auto page = q.list_jobs(topic, state, limit, cursor);
  if (page.ok()) return "accepted";
  EXPECT_EQ(page.status().code(), Errc::invalid_argument) << page.status().to_string();
  return page.status().message();
}

std::string name(const char* prefix, int i) {
  return prefix + std::string(i < 10 ? "0" : "") + std::to_string(i);
}

TEST_P(Flow, DelayedJobsAreListedByDueTimeThenPushOrder) {
  // Within the tiered store's horizon (1 min), so that every backend holds them in memory.
  push({.topic = "t", .id = "c", .delay = 30s});
  push({.topic = "t", .id = "a", .delay = 5s});
  push({.topic = "t", .id = "b", .delay = 5s});  // same instant as a: push order
  push({.topic = "t", .id = "e", .delay = 50s});
  push({.topic = "t", .id = "d", .delay = 5s + 1ns});  // the same second as a and b, later
                                                       // (Redis: 5 s + 1 µs, still later)
  push({.topic = "t", .id = "f", .delay = 5s + 999ms});
  push({.topic = "t", .id = "g", .delay = 6s});
  push({.topic = "other", .id = "x", .delay = 7s});
  push({.topic = "t", .id = "ready-now"});
  const Listing l = list_all(q(), "t", JobState::delayed);
  EXPECT_EQ(l.ids, (Ids{"a", "b", "d", "f", "g", "c", "e"}));
  EXPECT_EQ(l.pages, 3);
  ASSERT_EQ(l.jobs.size(), 7u);
  EXPECT_EQ(l.jobs[0].due, start_time() + 5s);
  EXPECT_EQ(l.jobs[2].due, start_time() + as_kept(5s + 1ns));
}

TEST_P(Flow, DelayedJobsFarApartAreListedInOrder) {
  const std::vector<std::pair<std::string, Duration>> jobs = {
      {"3d", 72h}, {"2h", 2h}, {"30m", 30min}, {"5s", 5s}, {"300d", 24h * 300},
      {"2h+1s", 2h + 1s}, {"59m59s", 59min + 59s}, {"1h", 1h}, {"3d-1ns", 72h - 1ns}};
  for (const auto& [id, delay] : jobs) push({.topic = "t", .id = id, .delay = delay});
  Ids want{"5s", "30m", "59m59s", "1h", "2h", "2h+1s", "3d-1ns", "3d", "300d"};
  // Kept in whole µs (Redis), 3d-1ns is due with 3d, pushed before it: push order.
  if (as_kept(72h - 1ns) == as_kept(72h)) std::swap(want[6], want[7]);
  const Listing l = list_all(q(), "t", JobState::delayed, 2);
  EXPECT_EQ(l.ids, want);
  // A page of one, across empty days.
  EXPECT_EQ(list_all(q(), "t", JobState::delayed, 1).ids, l.ids);
}

TEST_P(Flow, ReadyJobsAreListedInHandOutOrder) {
  push({.topic = "t", .id = "a", .delay = 3s});
  push({.topic = "t", .id = "b", .delay = 1s});
  push({.topic = "t", .id = "c"});
  push({.topic = "t", .id = "d", .delay = 1s});
  push({.topic = "t", .id = "e", .delay = 2s});
  for (int i = 0; i < 5; ++i) push({.topic = "t", .id = name("z", i), .delay = 2s});
  advance(3s);
  const Listing l = list_all(q(), "t", JobState::ready);
  EXPECT_EQ(l.ids, (Ids{"c", "b", "d", "e", "z00", "z01", "z02", "z03", "z04", "a"}));
  EXPECT_EQ(l.pages, 4);
  Ids handed;
  for (std::string id = take("t"); !id.empty(); id = take("t")) handed.push_back(id);
  EXPECT_EQ(handed, l.ids);
}

TEST_P(Flow, ReservedJobsAreListedByLeaseDeadline) {
  const std::vector<std::pair<std::string, Duration>> ttrs = {
      {"x", 50s}, {"y", 10s}, {"z", 30s}, {"w", 10s}, {"v", 20s}};
  for (const auto& [id, ttr] : ttrs) push({.topic = "t", .id = id, .ttr = ttr});
  push({.topic = "t", .id = "still-ready"});
  for (size_t i = 0; i < ttrs.size(); ++i) EXPECT_EQ(take("t"), ttrs[i].first);
  const Listing l = list_all(q(), "t", JobState::reserved);
  EXPECT_EQ(l.ids, (Ids{"y", "w", "v", "z", "x"}));
  ASSERT_EQ(l.jobs.size(), 5u);
  EXPECT_EQ(l.jobs[0].lease_deadline, start_time() + 10s);
}

TEST_P(Flow, DeadJobsAreListedInTheOrderTheyDiedWithWhen) {
  for (int i = 0; i < 7; ++i) push({.topic = "t", .id = name("j", i)});
  std::vector<Delivery> d;
  for (int i = 0; i < 7; ++i) d.push_back(*q().reserve("t", 0ms));
  // Death order: j04, j01, j06, j00, j03, j05, j02 (not push order).
  for (int i : {4, 1, 6, 0, 3, 5, 2}) {
    ASSERT_TRUE(q().dead_letter(d[static_cast<size_t>(i)].token).ok());
    advance(1s);
  }
  const Listing l = list_all(q(), "t", JobState::dead);
  EXPECT_EQ(l.ids, (Ids{"j04", "j01", "j06", "j00", "j03", "j05", "j02"}));
  ASSERT_EQ(l.jobs.size(), 7u);
  for (size_t i = 0; i < l.jobs.size(); ++i)
    EXPECT_EQ(l.jobs[i].dead_since, start_time() + std::chrono::seconds(i)) << i;
  EXPECT_EQ(q().get("j04")->dead_since, start_time());
  push({.topic = "t", .id = "alive"});
  EXPECT_EQ(q().get("alive")->dead_since, TimePoint{});
}

TEST_P(Flow, AJobWhoseLastAttemptFailsIsDeadSinceThatFailure) {
  const RetryPolicy once{.max_attempts = 1};
  push({.topic = "t", .id = "nacked", .retry = once});
  push({.topic = "t", .id = "expired", .ttr = 10s, .retry = once});
  auto n = q().reserve("t", 0ms);
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(n->id, "nacked");
  ASSERT_TRUE(q().reserve("t", 0ms).ok());  // "expired": its lease runs out at +10 s
  advance(3s);
  ASSERT_TRUE(q().nack(n->token).ok());
  advance(20s);
  const Listing l = list_all(q(), "t", JobState::dead);
  EXPECT_EQ(l.ids, (Ids{"nacked", "expired"}));
  ASSERT_EQ(l.jobs.size(), 2u);
  EXPECT_EQ(l.jobs[0].dead_since, start_time() + 3s);
  EXPECT_EQ(l.jobs[1].dead_since, start_time() + 10s);  // when the lease ran out
}

TEST_P(Flow, DeadOrderSurvivesARestart) {
  if (!backend_->keeps_jobs()) GTEST_SKIP() << "the in-memory engine keeps nothing";
  for (int i = 0; i < 5; ++i) push({.topic = "t", .id = name("j", i)});
  std::vector<Delivery> d;
  for (int i = 0; i < 5; ++i) d.push_back(*q().reserve("t", 0ms));
  for (int i : {3, 0, 4, 1, 2}) {
    ASSERT_TRUE(q().dead_letter(d[static_cast<size_t>(i)].token).ok());
    advance(2s);
  }
  const Ids order{"j03", "j00", "j04", "j01", "j02"};
  EXPECT_EQ(list_all(q(), "t", JobState::dead).ids, order);
  reopen();
  const Listing l = list_all(q(), "t", JobState::dead);
  EXPECT_EQ(l.ids, order);
  ASSERT_EQ(l.jobs.size(), 5u);
  EXPECT_EQ(l.jobs[4].dead_since, start_time() + 8s);
}

TEST_P(Flow, ReadyPagesStayConsistentWhileJobsMove) {
  for (int i = 0; i < 15; ++i) push({.topic = "t", .id = name("r", i)});
  auto [p1, c1] = page_of(q(), "t", JobState::ready, "");
  EXPECT_EQ(p1, (Ids{"r00", "r01", "r02"}));
  // Jobs of the page leave: two are reserved, the cursor's own job is cancelled. The next page
  // starts at the job that followed the page.
  EXPECT_EQ(take("t"), "r00");
  EXPECT_EQ(take("t"), "r01");
  ASSERT_TRUE(q().cancel("r02").ok());
  push({.topic = "t", .id = "new-1"});  // joins the line's end, after the cursor
  auto [p2, c2] = page_of(q(), "t", JobState::ready, c1);
  EXPECT_EQ(p2, (Ids{"r03", "r04", "r05"}));
  // The cursor's job and the one after it leave, the one before it stays: the next page starts
  // after that one, past what was listed.
  ASSERT_TRUE(q().cancel("r05").ok());
  ASSERT_TRUE(q().cancel("r06").ok());
  push({.topic = "t", .id = "new-2"});
  auto [p3, c3] = page_of(q(), "t", JobState::ready, c2);
  EXPECT_EQ(p3, (Ids{"r07", "r08", "r09"}));
  // The whole page and the job after it leave: the next page finds its place by key.
  for (const char* id : {"r07", "r08", "r09", "r10"}) ASSERT_TRUE(q().cancel(id).ok());
  EXPECT_EQ(rest_of(q(), "t", JobState::ready, c3),
            (Ids{"r11", "r12", "r13", "r14", "new-1", "new-2"}));
  EXPECT_EQ(list_all(q(), "t", JobState::ready).ids,
            (Ids{"r03", "r04", "r11", "r12", "r13", "r14", "new-1", "new-2"}));
}

TEST_P(Flow, DelayedPagesStayConsistentWhileJobsMove) {
  for (int i = 0; i < 12; ++i)
    push({.topic = "t", .id = name("d", i), .delay = 10s + std::chrono::seconds(i)});
  auto [p1, c1] = page_of(q(), "t", JobState::delayed, "");
  EXPECT_EQ(p1, (Ids{"d00", "d01", "d02"}));
  ASSERT_TRUE(q().cancel("d02").ok());                     // the cursor's job
  push({.topic = "t", .id = "before", .delay = 11s + 500ms});  // before the cursor: not listed
  push({.topic = "t", .id = "tie", .delay = 12s});         // d02's due time, pushed later
  push({.topic = "t", .id = "after", .delay = 15s + 1ms});  // between d05 and d06
  advance(10s);  // d00 falls due: it leaves delayed
  auto [p2, c2] = page_of(q(), "t", JobState::delayed, c1);
  EXPECT_EQ(p2, (Ids{"tie", "d03", "d04"}));
  ASSERT_TRUE(q().reschedule("d06", start_time() + 40s).ok());  // moves behind the cursor
  EXPECT_EQ(rest_of(q(), "t", JobState::delayed, c2),
            (Ids{"d05", "after", "d07", "d08", "d09", "d10", "d11", "d06"}));
}

TEST_P(Flow, ReservedAndDeadPagesStayConsistentWhileJobsMove) {
  for (int i = 0; i < 8; ++i)
    push({.topic = "t", .id = name("j", i), .ttr = 10s + std::chrono::seconds(i)});
  std::vector<Delivery> d;
  for (int i = 0; i < 8; ++i) d.push_back(*q().reserve("t", 0ms));
  auto [r1, rc] = page_of(q(), "t", JobState::reserved, "");
  EXPECT_EQ(r1, (Ids{"j00", "j01", "j02"}));
  ASSERT_TRUE(q().ack(d[2].token).ok());  // the cursor's job
  ASSERT_TRUE(q().ack(d[3].token).ok());  // the next one
  EXPECT_EQ(rest_of(q(), "t", JobState::reserved, rc), (Ids{"j04", "j05", "j06", "j07"}));

  for (int i : {7, 6, 5, 4, 1, 0}) {
    ASSERT_TRUE(q().dead_letter(d[static_cast<size_t>(i)].token).ok());
    advance(1s);
  }
  auto [x1, xc] = page_of(q(), "t", JobState::dead, "");
  EXPECT_EQ(x1, (Ids{"j07", "j06", "j05"}));
  ASSERT_TRUE(q().requeue_dead("j05").ok());  // the cursor's job comes back to life
  ASSERT_TRUE(q().requeue_dead("j06").ok());
  ASSERT_TRUE(q().requeue_dead("j07").ok());  // the whole page: resumed at the job after it
  auto [x2, xc2] = page_of(q(), "t", JobState::dead, xc, 1);
  EXPECT_EQ(x2, (Ids{"j04"}));
  ASSERT_TRUE(q().requeue_dead("j04").ok());
  ASSERT_TRUE(q().requeue_dead("j01").ok());  // the page and the job after it: by key
  EXPECT_EQ(rest_of(q(), "t", JobState::dead, xc2), (Ids{"j00"}));
}

TEST_P(Flow, CursorsHoldTheLongestIds) {
  Ids ids;
  for (char c : {'a', 'b', 'c', 'd', 'e'}) {
    ids.push_back(std::string(kMaxIdBytes, c));
    push({.topic = "t", .id = ids.back()});
  }
  EXPECT_EQ(list_all(q(), "t", JobState::ready, 1).ids, ids);
  EXPECT_EQ(list_all(q(), "t", JobState::ready, 2).ids, ids);
}

TEST_P(Flow, BadCursorsAndLimitsAreRefusedByName) {
  for (int i = 0; i < 5; ++i) push({.topic = "t", .id = name("r", i)});
  push({.topic = "u", .id = "u0"});
  push({.topic = "u", .id = "u1"});
  auto [ids, cursor] = page_of(q(), "t", JobState::ready, "", 2);
  ASSERT_EQ(ids.size(), 2u);
  ASSERT_FALSE(cursor.empty());
  EXPECT_NE(refusal(q(), "u", JobState::ready, 2, cursor).find("cursor belongs to another topic"),
            std::string::npos);
  EXPECT_EQ(refusal(q(), "t", JobState::dead, 2, cursor), "cursor is for state ready, not dead");
  std::string flipped = cursor;
  flipped[cursor.size() / 2] = flipped[cursor.size() / 2] == 'A' ? 'B' : 'A';
  EXPECT_NE(refusal(q(), "t", JobState::ready, 2, flipped).find("cursor is damaged"),
            std::string::npos);
  EXPECT_NE(refusal(q(), "t", JobState::ready, 2, "x1" + cursor.substr(2))
                .find("not a delayq cursor"),
            std::string::npos);
  EXPECT_NE(refusal(q(), "t", JobState::ready, 0, "").find("limit must be between 1 and 1000"),
            std::string::npos);
  EXPECT_NE(refusal(q(), "t", JobState::ready, 1001, "").find("limit must be between 1 and 1000"),
            std::string::npos);
  EXPECT_NE(refusal(q(), "", JobState::ready, 3, ""), "accepted");
  // The good cursor still works after all that.
  EXPECT_EQ(rest_of(q(), "t", JobState::ready, cursor), (Ids{"r02", "r03", "r04"}));
  // A topic that holds nothing: one empty page.
  auto none = q().list_jobs("nothing-here", JobState::dead, 10);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->jobs.empty());
  EXPECT_TRUE(none->cursor.empty());
}

TEST_P(Flow, DelayedJobsOnDiskAreListedInDueOrder) {
  // The tiered store keeps jobs due beyond its horizon (1 min) on disk only: the pages go on
  // from the memory jobs to the disk jobs. The other backends hold them all in memory.
  push({.topic = "t", .id = "soon", .delay = 10s});
  push({.topic = "t", .id = "later", .delay = 2h});
  push({.topic = "t", .id = "now"});
  push({.topic = "t", .id = "mid", .delay = 30min});
  push({.topic = "t", .id = "later2", .delay = 2h});  // later's due time: push order
  push({.topic = "t", .id = "edge", .delay = 59s});
  push({.topic = "t", .id = "beyond", .delay = 61s});
  push({.topic = "u", .id = "other", .delay = 90min});
  EXPECT_EQ(list_all(q(), "t", JobState::delayed, 2).ids,
            (Ids{"soon", "edge", "beyond", "mid", "later", "later2"}));
  EXPECT_EQ(list_all(q(), "t", JobState::delayed, 1000).ids,
            (Ids{"soon", "edge", "beyond", "mid", "later", "later2"}));
  EXPECT_EQ(list_all(q(), "t", JobState::ready).ids, (Ids{"now"}));
  // A cursor taken before a refill brings jobs from disk into memory still works after it.
  auto [first, cursor] = page_of(q(), "t", JobState::delayed, "", 2);
  EXPECT_EQ(first, (Ids{"soon", "edge"}));
  advance(30min - 30s);  // soon, edge and beyond fall due; mid comes within the horizon
  EXPECT_EQ(rest_of(q(), "t", JobState::delayed, cursor), (Ids{"mid", "later", "later2"}));
  ASSERT_TRUE(q().cancel("later").ok());  // a disk job
  ASSERT_TRUE(q().reschedule("mid", now() + 24h * 10).ok());  // from memory to disk
  EXPECT_EQ(list_all(q(), "t", JobState::delayed, 2).ids, (Ids{"later2", "mid"}));
}

TEST_P(Flow, ATopicsFewDiskJobsAmongManyOthersAreAllListed) {
  // 6000 jobs of another topic first in due order: the tiered store reads the topic's disk jobs
  // through its per-topic index, so its pages are as full as the others'.
  for (int i = 0; i < 6000; ++i)
    push({.topic = "o", .id = "o" + std::to_string(i), .delay = 1h + std::chrono::milliseconds(i)});
  push({.topic = "t", .id = "late", .delay = 2h});
  push({.topic = "t", .id = "among", .delay = 1h + 5500ms});
  push({.topic = "t", .id = "tie", .delay = 1h + 5500ms});
  const Listing l = list_all(q(), "t", JobState::delayed, 2);
  EXPECT_EQ(l.ids, (Ids{"among", "tie", "late"}));
  EXPECT_EQ(l.pages, 2);
  EXPECT_EQ(list_all(q(), "o", JobState::delayed, 1000).ids.size(), 6000u);
}

INSTANTIATE_TEST_SUITE_P(Backends, Flow, ::testing::ValuesIn(with_redis(backends())),
                         backend_name);

// Several shards (the fixture's backends have one): each shard lists its part, and the pages
// merge them by the state's key.
TEST(BrowseShards, PagesMergeEveryShardInKeyOrder) {
  ManualClock clock(start_time());
  EngineOptions o;
  o.clock = &clock;
  o.limits = flow_limits();
  o.shards = 4;
  auto opened = Engine::open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  Queue& q = **opened;
  std::vector<std::string> all;
  for (int i = 0; i < 40; ++i) {
    all.push_back(name("j", i));
    ASSERT_TRUE(q.push({.topic = "t", .id = all.back(), .delay = std::chrono::seconds(1 + i % 7)}).ok());
  }
  const Listing delayed = list_all(q, "t", JobState::delayed, 3);
  ASSERT_EQ(delayed.jobs.size(), all.size());
  EXPECT_TRUE(std::is_sorted(delayed.jobs.begin(), delayed.jobs.end(),
                             [](const JobInfo& a, const JobInfo& b) { return a.due < b.due; }));
  EXPECT_EQ(std::set<std::string>(delayed.ids.begin(), delayed.ids.end()),
            std::set<std::string>(all.begin(), all.end()));
  clock.advance(8s);
  for (size_t limit : {1u, 3u, 7u, 1000u}) {
    const Listing ready = list_all(q, "t", JobState::ready, limit);
    ASSERT_EQ(ready.jobs.size(), all.size()) << limit;
    EXPECT_TRUE(std::is_sorted(ready.jobs.begin(), ready.jobs.end(),
                               [](const JobInfo& a, const JobInfo& b) { return a.due < b.due; }));
    EXPECT_EQ(std::set<std::string>(ready.ids.begin(), ready.ids.end()),
              std::set<std::string>(all.begin(), all.end()))
        << limit;
  }
  // Reserve a few from the middle of a listing; the rest of the pages hold each job left once.
  auto page = q.list_jobs("t", JobState::ready, 5);
  ASSERT_TRUE(page.ok());
  std::set<std::string> seen;
  for (const JobInfo& j : page->jobs) seen.insert(j.id);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(q.reserve("t", 0ms).ok());
  for (const std::string& id : rest_of(q, "t", JobState::ready, page->cursor))
    EXPECT_TRUE(seen.insert(id).second) << id << " listed twice";
  const Listing reserved = list_all(q, "t", JobState::reserved, 2);
  EXPECT_EQ(reserved.jobs.size(), 8u);

  // Dead letters in the order they died, over the shards, here and in list_dead().
  std::vector<Delivery> held;
  while (auto d = q.reserve("t", 0ms)) held.push_back(*d);
  for (size_t i = 0; i < 6; ++i) {
    ASSERT_TRUE(q.dead_letter(held[held.size() - 1 - i].token).ok());
    clock.advance(1s);
  }
  Ids order;
  for (size_t i = 0; i < 6; ++i) order.push_back(held[held.size() - 1 - i].id);
  EXPECT_EQ(list_all(q, "t", JobState::dead, 4).ids, order);
  auto dead = q.list_dead("t", 100);
  ASSERT_TRUE(dead.ok());
  Ids listed;
  for (const JobInfo& j : *dead) listed.push_back(j.id);
  EXPECT_EQ(listed, order);
}

}  // namespace
}  // namespace delayq::flow
