// The per-second job lists of DueBins (src/engine/due_bins.h), which Core::browse walks to list a
// topic's delayed jobs in due order: under random adds and removes, each second's list holds
// exactly the jobs due in it, and next_second() visits the seconds that hold jobs in order,
// across gaps of hours and days and before 1970.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

#include "engine/due_bins.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;

struct FakeJob {
  uint32_t prev = engine::DueBins::kNoJob, next = engine::DueBins::kNoJob;
  TimePoint due{};
  bool in = false;
};

// Every second with jobs, from `from` on, with the set of its jobs, as DueBins lists them.
std::map<int64_t, std::set<uint32_t>> walk(const engine::DueBins& bins,
                                           const std::vector<FakeJob>& jobs, int64_t from) {
  std::map<int64_t, std::set<uint32_t>> out;
  for (std::optional<int64_t> s = bins.next_second(from); s; s = bins.next_second(*s + 1)) {
    std::set<uint32_t>& here = out[*s];
    uint32_t prev = engine::DueBins::kNoJob;
    for (uint32_t j = bins.first_in_second(*s); j != engine::DueBins::kNoJob; j = jobs[j].next) {
      EXPECT_EQ(jobs[j].prev, prev);
      EXPECT_TRUE(here.insert(j).second) << "job " << j << " twice";
      prev = j;
    }
    EXPECT_FALSE(here.empty()) << *s;
  }
  return out;
}

TEST(DueLists, HoldEachSecondsJobsUnderRandomAddsAndRemoves) {
  std::mt19937_64 rng(9);
  const TimePoint base = TimePoint(1767225600s);
  std::vector<FakeJob> jobs(400);
  engine::DueBins bins;
  for (int step = 0; step < 20000; ++step) {
    const auto j = static_cast<uint32_t>(rng() % jobs.size());
    FakeJob& job = jobs[j];
    if (job.in) {
      bins.remove(job.due, job, jobs);
      job.in = false;
      continue;
    }
    // Few seconds (long lists), spread over minutes, hours, a year, and before 1970.
    const int64_t pick = static_cast<int64_t>(rng() % 6);
    Duration d = std::chrono::milliseconds(rng() % 3000);
    if (pick == 1) d += std::chrono::minutes(rng() % 90);
    if (pick == 2) d += std::chrono::hours(rng() % (24 * 365));
    job.due = pick == 3 ? TimePoint(-std::chrono::seconds(1 + rng() % 5000)) - d : base + d;
    bins.add(job.due, j, jobs);
    job.in = true;
    if (step % 499 != 0) continue;
    std::map<int64_t, std::set<uint32_t>> want;
    for (uint32_t i = 0; i < jobs.size(); ++i)
      if (jobs[i].in) want[engine::DueBins::second_of(jobs[i].due)].insert(i);
    const int64_t from = want.empty() ? 0 : want.begin()->first;
    ASSERT_EQ(walk(bins, jobs, from), want) << step;
  }
}

TEST(DueLists, NextSecondJumpsEmptyTime) {
  std::vector<FakeJob> jobs(3);
  engine::DueBins bins;
  const TimePoint t0 = TimePoint(1767225600s);
  bins.add(t0 + 1500ms, 0, jobs);
  bins.add(t0 + 24h * 300 + 59min + 59s, 1, jobs);
  bins.add(t0 + 24h * 300 + 59min + 59s + 999ms, 2, jobs);
  const int64_t s0 = engine::DueBins::second_of(t0);
  EXPECT_EQ(bins.next_second(s0), s0 + 1);
  EXPECT_EQ(bins.next_second(s0 + 2), s0 + 300 * 86400 + 3599);
  EXPECT_EQ(bins.next_second(s0 + 300 * 86400 + 3600), std::nullopt);
  EXPECT_EQ(walk(bins, jobs, s0)[s0 + 300 * 86400 + 3599], (std::set<uint32_t>{1, 2}));
  bins.remove(t0 + 1500ms, jobs[0], jobs);
  EXPECT_EQ(bins.first_in_second(s0 + 1), engine::DueBins::kNoJob);
  EXPECT_EQ(bins.next_second(s0), s0 + 300 * 86400 + 3599);
}

}  // namespace
}  // namespace delayq
