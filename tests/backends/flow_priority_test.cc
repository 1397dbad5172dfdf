// Priorities (JobSpec::priority) on every backend, on a ManualClock: among a topic's ready jobs
// the smallest priority is handed out first, then the earliest due time, then push order; jobs
// not yet due are not affected; retries keep their priority; reserve() over several topics takes
// the most urgent ready job among them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flow_fixture.h"
#include "flow_redis.h"

namespace delayq::flow {
namespace {

// Every ready job of `topic`, in the order reserve() hands them out.
std::vector<std::string> drain(Queue& q, const std::string& topic) {
  std::vector<std::string> ids;
  for (;;) {
    auto d = q.reserve(topic, 0ms);
    if (!d.ok()) break;
    ids.push_back(d->id);
  }
  return ids;
}

TEST_P(Flow, PriorityOrdersReadyJobsThenDueThenPushOrder) {
  // Due times: a, b, c at +1 s; d, e, f at +2 s.
  push({.topic = "t", .id = "a", .delay = 1s, .priority = 5});
  push({.topic = "t", .id = "b", .delay = 1s});
  push({.topic = "t", .id = "c", .delay = 1s, .priority = 5});
  push({.topic = "t", .id = "d", .delay = 2s, .priority = 0});
  push({.topic = "t", .id = "e", .delay = 2s});
  push({.topic = "t", .id = "f", .delay = 2s, .priority = 0});
  push({.topic = "t", .id = "g", .delay = 1s, .priority = 4'000'000'000u});
  push({.topic = "t", .id = "h", .delay = 2s, .priority = 1023});
  advance(2s);
  EXPECT_EQ(drain(q(), "t"), (std::vector<std::string>{"d", "f", "a", "c", "h", "b", "e", "g"}));
}

TEST_P(Flow, TheDefaultPriorityIs1024AndJobsReportTheirs) {
  push({.topic = "t", .id = "plain"});
  push({.topic = "t", .id = "urgent", .priority = 3});
  push({.topic = "t", .id = "last", .delay = 1h, .priority = 0xFFFFFFFFu});
  auto plain = q().get("plain");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->priority, kDefaultPriority);
  EXPECT_EQ(q().get("urgent")->priority, 3u);
  EXPECT_EQ(q().get("last")->priority, 0xFFFFFFFFu);
  auto d = q().reserve("t", 0ms);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->id, "urgent");
  EXPECT_EQ(d->priority, 3u);
  d = q().reserve("t", 0ms);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->priority, kDefaultPriority);
}

TEST_P(Flow, NotYetDueJobsAreUnaffectedByPriority) {
  push({.topic = "t", .id = "due", .priority = 9000});
  push({.topic = "t", .id = "urgent-later", .delay = 10s, .priority = 0});
  EXPECT_EQ(take("t"), "due");
  EXPECT_EQ(take("t"), "");
  advance(10s - 1us);
  EXPECT_EQ(take("t"), "");
  advance(1us);
  EXPECT_EQ(take("t"), "urgent-later");
}

TEST_P(Flow, RetriesKeepTheirPriorityAmongDueJobs) {
  push({.topic = "t", .id = "retry", .retry = RetryPolicy::fixed(5s, 5), .priority = 0});
  auto d = q().reserve("t", 0ms);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(q().nack(d->token).ok());  // due again at +5 s
  push({.topic = "t", .id = "fresh1", .delay = 1s, .priority = 2000});
  push({.topic = "t", .id = "fresh2", .delay = 5s, .priority = 2000});
  advance(5s);
  EXPECT_EQ(q().get("retry")->priority, 0u);
  // The retry is due last but most urgent.
  d = q().reserve("t", 0ms);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->id, "retry");
  EXPECT_EQ(d->attempt, 2u);
  // release(): back in its place, ahead of the others again.
  ASSERT_TRUE(q().release(d->token).ok());
  EXPECT_EQ(drain(q(), "t"), (std::vector<std::string>{"retry", "fresh1", "fresh2"}));
}

TEST_P(Flow, ALeaseThatRunsOutKeepsThePriority) {
  push({.topic = "t", .id = "slow", .ttr = 1s, .retry = RetryPolicy::fixed(1s, 5), .priority = 3});
  auto d = q().reserve("t", 0ms);
  ASSERT_TRUE(d.ok());
  push({.topic = "t", .id = "plain", .delay = 1s});
  advance(2s);  // the lease ran out at +1 s, the retry is due at +2 s, after "plain"
  d = q().reserve("t", 0ms);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->id, "slow");
  EXPECT_EQ(d->attempt, 2u);
  EXPECT_EQ(d->priority, 3u);
  EXPECT_EQ(take("t"), "plain");
}

TEST_P(Flow, ARequeuedDeadLetterKeepsItsPriority) {
  push({.topic = "t", .id = "x", .retry = RetryPolicy::fixed(1s, 1), .priority = 7});
  auto d = q().reserve("t", 0ms);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(q().dead_letter(d->token).ok());
  push({.topic = "t", .id = "y", .priority = 8});
  ASSERT_TRUE(q().requeue_dead("x").ok());
  EXPECT_EQ(q().get("x")->priority, 7u);
  EXPECT_EQ(drain(q(), "t"), (std::vector<std::string>{"x", "y"}));
}

TEST_P(Flow, ReserveOverSeveralTopicsTakesTheMostUrgent) {
  push({.topic = "a", .id = "a-early", .priority = 100});
  advance(1s);
  push({.topic = "b", .id = "b-late", .priority = 10});
  push({.topic = "c", .id = "c-tie", .priority = 10});
  // Priority beats due time across topics; equal priority and due time: the first listed topic.
  EXPECT_EQ(take(std::vector<std::string>{"a", "c", "b"}), "c-tie");
  EXPECT_EQ(take(std::vector<std::string>{"a", "b"}), "b-late");
  EXPECT_EQ(take(std::vector<std::string>{"a", "b"}), "a-early");
}

TEST_P(Flow, PrioritiesSurviveARestart) {
  if (!backend_->keeps_jobs()) GTEST_SKIP() << "the memory engine starts empty";
  push({.topic = "t", .id = "late", .delay = 2h, .priority = 1});
  push({.topic = "t", .id = "plain", .delay = 1s});
  push({.topic = "t", .id = "low", .delay = 1s, .priority = 70000});
  push({.topic = "t", .id = "high", .delay = 1s, .priority = 2});
  reopen();
  advance(2h);
  EXPECT_EQ(q().get("late")->priority, 1u);
  EXPECT_EQ(drain(q(), "t"), (std::vector<std::string>{"late", "high", "plain", "low"}));
}

// list_jobs() lists ready jobs in the order reserve() hands them out, priority lines included, a
// page at a time, also when a page's last job and its whole priority line go between pages.
TEST_P(Flow, ReadyPagesFollowThePriorityOrder) {
  const uint32_t prio[] = {2000, 5, kDefaultPriority, 0, 5, 70000, kDefaultPriority, 0, 2000, 5};
  for (int i = 0; i < 10; ++i)
    push({.topic = "t", .id = "j" + std::to_string(i), .delay = Duration(1s) * (10 - i),
          .priority = prio[i]});
  advance(10s);
  auto list = [&](size_t limit) {
    std::vector<std::string> ids;
    std::string cursor;
    for (int pages = 0; pages < 100; ++pages) {
      auto page = q().list_jobs("t", JobState::ready, limit, cursor);
      EXPECT_TRUE(page.ok()) << page.status().to_string();
      if (!page.ok()) break;
      for (const JobInfo& j : page->jobs) ids.push_back(j.id);
      if (page->cursor.empty()) break;
      cursor = page->cursor;
    }
    return ids;
  };
  const std::vector<std::string> listed = list(3);
  EXPECT_EQ(listed, (std::vector<std::string>{"j7", "j3", "j9", "j4", "j1", "j6", "j2", "j8",
                                              "j0", "j5"}));
  EXPECT_EQ(list(1), listed);
  // The first page ends with the last priority-0 job; both priority-0 jobs go before the next.
  auto first = q().list_jobs("t", JobState::ready, 2, "");
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->jobs.size(), 2u);
  ASSERT_TRUE(q().cancel("j7").ok());
  ASSERT_TRUE(q().cancel("j3").ok());
  std::vector<std::string> rest;
  for (std::string cursor = first->cursor; !cursor.empty();) {
    auto page = q().list_jobs("t", JobState::ready, 2, cursor);
    ASSERT_TRUE(page.ok()) << page.status().to_string();
    for (const JobInfo& j : page->jobs) rest.push_back(j.id);
    cursor = page->cursor;
  }
  EXPECT_EQ(rest, std::vector<std::string>(listed.begin() + 2, listed.end()));
  EXPECT_EQ(drain(q(), "t"), rest);
}

INSTANTIATE_TEST_SUITE_P(Backends, Flow, ::testing::ValuesIn(with_redis(backends())),
                         backend_name);

}  // namespace
}  // namespace delayq::flow
