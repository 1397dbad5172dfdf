// The engine's index of schedules by next occurrence and its batched firing
// (src/engine/schedule_firing.cc), against a reference that looks at every schedule at every
// step: on a ManualClock, schedules are created, replaced, removed, paused and resumed in random
// order while the clock moves by random steps (some landing on occurrences, some jumping over
// them, so that the catch-up policies act), and after each call or step the jobs the queue
// pushed are exactly those the reference fired then, and the index holds each running schedule
// at its next occurrence (engine::schedule_index_damage). On the in-memory engine with one and three
// shards, the durable store and the store with a disk tier.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/test_hooks.h"
#include "schedule_fixture.h"

namespace delayq::schedule_test {
namespace {

// A schedule as the reference sees it: "every <every>" from `start`, never ending, overlap
// allow (the fixture's job template).
struct RefSchedule {
  Duration every{};
  TimePoint start{};
  ScheduleSpec::CatchUp catch_up = ScheduleSpec::CatchUp::one;
  bool paused = false;
  TimePoint next{};
  uint64_t fired = 0;
};

// The reference: at `now`, each running schedule whose next occurrence has come fires per the
// planner's rules (schedule/planner.h) with a tick of EngineOptions' default 1 ms: those at most
// a tick late fire, the missed ones by catch-up policy; the ids of the jobs go into `out`.
void ref_fire(const std::string& id, RefSchedule& r, TimePoint now, std::set<std::string>& out) {
  if (r.paused || r.next > now) return;
  constexpr Duration tick = std::chrono::milliseconds(1);
  std::vector<TimePoint> missed, on_time;
  for (TimePoint o = r.next; o <= now; o += r.every) (now - o > tick ? missed : on_time).push_back(o);
  r.next = missed.empty() && on_time.empty() ? r.next : (on_time.empty() ? missed.back() : on_time.back()) + r.every;
  std::vector<TimePoint> fire;
  if (r.catch_up == ScheduleSpec::CatchUp::one && !missed.empty()) fire.push_back(missed.back());
  if (r.catch_up == ScheduleSpec::CatchUp::all) fire = missed;  // fewer than catch_up_max here
  fire.insert(fire.end(), on_time.begin(), on_time.end());
  for (TimePoint o : fire) out.insert(occurrence_job_id(id, o));
  r.fired += fire.size();
}

class ScheduleIndex : public ScheduleEngine {
 protected:
  // The jobs pushed since the last look: every job in "t" is ready (due at its occurrence), each
  // taken and acknowledged.
  std::set<std::string> take_pushed() {
    std::set<std::string> out;
    for (;;) {
      auto d = q->reserve("t", 0s);
      if (!d) {
        EXPECT_TRUE(d.is(Errc::timeout)) << d.status().to_string();
        return out;
      }
      EXPECT_TRUE(out.insert(d->id).second) << "twice: " << d->id;
      EXPECT_TRUE(q->ack(d->token).ok());
    }
  }
};

TEST_P(ScheduleIndex, RandomCallsAndStepsFireWhatAFullScanFires) {
  std::mt19937_64 rng(23);
  auto pick = [&](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
  const ScheduleSpec::CatchUp policies[] = {ScheduleSpec::CatchUp::skip,
                                            ScheduleSpec::CatchUp::one,
                                            ScheduleSpec::CatchUp::all};
  std::map<std::string, RefSchedule> ref;
  int created = 0;
  size_t jobs = 0;
  // A spec and its reference for `id`, starting 0 to 3 s (in half seconds) from now, replacing
  // (from 0.5 s on: an occurrence at `now` may have fired before the replacement already).
  auto make = [&](const std::string& id, bool replacing) {
    RefSchedule r;
    r.every = std::chrono::milliseconds(500) * static_cast<int>(1 + pick(6));
    r.start = clock.now() + std::chrono::milliseconds(500) * static_cast<int>(pick(7) + replacing);
    r.catch_up = policies[pick(3)];
    r.next = r.start;
    ScheduleSpec s = spec(id, "every " + std::to_string(r.every / 1ms) + "ms");
    s.start = r.start;
    s.catch_up = r.catch_up;
    s.catch_up_max = 10'000;
    return std::pair{s, r};
  };
  for (int step = 0; step < 400 && !HasFailure(); ++step) {
    std::set<std::string> expected;
    const TimePoint now = clock.now();
    const uint64_t what = pick(10);
    auto some = ref.begin();
    if (!ref.empty()) std::advance(some, pick(ref.size()));
    const std::string context = "step " + std::to_string(step) + ", call " + std::to_string(what);
    if (what == 0 || ref.size() < 3) {  // a new schedule (never an id used before)
      const std::string id = "s" + std::to_string(created++);
      auto [s, r] = make(id, false);
      ASSERT_TRUE(q->schedule(s).ok()) << context;
      ref_fire(id, ref[id] = r, now, expected);
    } else if (what == 1) {  // replaced: the new rule from its start, paused or not as it was
      auto [s, r] = make(some->first, true);
      ASSERT_TRUE(q->schedule(s).ok()) << context;
      r.paused = some->second.paused;
      r.fired = some->second.fired;
      ref_fire(some->first, some->second = r, now, expected);
    } else if (what == 2) {
      ASSERT_TRUE(q->unschedule(some->first).ok()) << context;
      ref.erase(some);
    } else if (what == 3) {
      ASSERT_TRUE(q->pause_schedule(some->first).ok()) << context;
      some->second.paused = true;
    } else if (what == 4) {
      ASSERT_TRUE(q->resume_schedule(some->first).ok()) << context;
      if (some->second.paused) {
        some->second.paused = false;
        ref_fire(some->first, some->second, now, expected);
      }
    } else {  // the clock moves 0.25 to 2 s: onto occurrences or past them
      clock.set(now + std::chrono::milliseconds(250) * static_cast<int>(1 + pick(8)));
      for (auto& [id, r] : ref) ref_fire(id, r, clock.now(), expected);
    }
    EXPECT_EQ(take_pushed(), expected) << context;
    EXPECT_EQ(engine::schedule_index_damage(*q), "") << context;
    jobs += expected.size();
  }
  EXPECT_GT(jobs, 200u);  // the walk did fire occurrences (about 1.5 a step)
  // The counters and next occurrences agree too.
  for (const auto& [id, r] : ref) {
    const ScheduleInfo i = info(id);
    EXPECT_EQ(i.fired, r.fired) << id;
    EXPECT_EQ(i.paused, r.paused) << id;
    ASSERT_FALSE(i.next.empty()) << id;
    // A paused schedule shows the occurrence it waits at; a running one its next from now.
    EXPECT_EQ(i.next[0], r.next) << id;
  }
}

INSTANTIATE_TEST_SUITE_P(Engine, ScheduleIndex,
                         ::testing::Values(Backend{"Memory", false},
                                           Backend{.name = "Memory3Shards", .durable = false,
                                                   .engine_shards = 3},
                                           Backend{"Durable", true},
                                           Backend{"Tiered", true, true}),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace delayq::schedule_test
