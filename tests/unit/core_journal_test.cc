// The core's change list is complete: replaying only the records it reported into a fresh core
// (what the durable store will do on open) gives a queue that is indistinguishable from the
// original: same jobs, states, attempts, due times, leases, bodies and counts.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <random>
#include <set>

#include "engine/core.h"
#include "reports.h"

namespace delayq::engine {
namespace {

using namespace std::chrono_literals;

const TimePoint kStart = TimePoint(std::chrono::sys_days(std::chrono::year{2026} / 3 / 1));

CoreOptions Recording() {
  CoreOptions o;
  o.record_changes = true;
  o.limits.default_ttr = 3s;
  o.idle_topics = 2;  // topics come and go (Mirror::any_topic)
  return o;
}

class Mirror {
 public:
  explicit Mirror(uint64_t seed) : rng_(seed), a_(Recording(), kStart), now_(kStart) {}

  void apply() {
    Effects e = a_.take_effects();
    add_totals(totals_, e.totals);
    for (Change& c : e.changes) {
      if (c.record) journal_[c.seq] = std::move(*c.record);
      else journal_.erase(c.seq);
    }
  }

  // Rebuilds a core from the journal and compares it with the original.
  void check() {
    a_.advance(now_);
    apply();
    Core b(Recording(), now_);
    for (const std::string& t : paused_) b.restore_paused(t);  // the engine journals pauses
    for (const auto& [seq, rec] : journal_) ASSERT_TRUE(b.restore(JobRecord(rec), now_).ok()) << seq;
    b.advance(now_);
    EXPECT_TRUE(b.take_effects().changes.empty()) << "restoring must not record changes";
    ASSERT_EQ(a_.jobs(), journal_.size());
    ASSERT_EQ(b.jobs(), journal_.size());
    for (const auto& [seq, rec] : journal_) {
      Result<JobInfo> x = a_.get(rec.id, now_), y = b.get(rec.id, now_);
      ASSERT_TRUE(x.ok() && y.ok()) << rec.id;
      SCOPED_TRACE("job " + rec.id);
      testing::expect_same_fields(*y, *x);
      if (x->state == JobState::reserved) EXPECT_EQ(x->lease_deadline, y->lease_deadline);
      else EXPECT_EQ(x->due, y->due);
    }
    Stats sa, sb;
    a_.add_stats(sa, now_);
    b.add_stats(sb, now_);
    EXPECT_EQ(sa.topics, sb.topics);
    EXPECT_EQ(sa.pushed, totals_.pushed) << "the totals journaled add up to the core's";
    EXPECT_EQ(sa.acked, totals_.acked);
    EXPECT_EQ(sa.purged, totals_.purged);
    // Topics that have gone keep no slot: at most those with a job or paused, and 2 idle ones,
    // at their peak.
    EXPECT_LE(a_.topic_slots(), peak_kept_);
    // What fires when comes back with the jobs (lateness does not: it counts since the open).
    for (const auto& [topic, t] : sa.timing) EXPECT_EQ(t.due, sb.timing[topic].due) << topic;
    apply();  // get() may have caught A up
  }

  void step() {
    const int r = static_cast<int>(rng_() % 100);
    if (r < 30) push();
    else if (r < 45) reserve();
    else if (r < 70) settle();
    else if (r < 75) cancel();
    else if (r < 80) reschedule();
    else if (r < 84) dead_ops();
    else if (r < 86) pause();
    else now_ += std::chrono::milliseconds(rng_() % (rng_() % 10 ? 2000 : 60000));
    apply();
    std::set<std::string> kept(paused_.begin(), paused_.end());
    for (const auto& [seq, rec] : journal_) kept.insert(rec.topic);
    peak_kept_ = std::max(peak_kept_, kept.size() + 2);
  }

  static constexpr const char* kTopics[] = {"orders", "sms", "callbacks"};

 private:
  std::string any_id() { return "j" + std::to_string(rng_() % (next_ + 1)); }
  // Mostly the three long-lived topics, else one of many that come and go.
  std::string any_topic() {
    if (rng_() % 10 < 7) return kTopics[rng_() % 3];
    return "churn" + std::to_string(rng_() % 200);
  }
  void pause() {
    const std::string t = any_topic();
    const bool p = rng_() % 2;
    a_.set_paused(t, p, now_);
    if (p) paused_.insert(t);
    else paused_.erase(t);
  }

  void push() {
    JobSpec s;
    s.topic = any_topic();
    s.id = rng_() % 10 ? "j" + std::to_string(++next_) : any_id();  // some duplicates
    s.body = std::string(rng_() % 40, static_cast<char>('a' + rng_() % 26));
    s.delay = std::chrono::milliseconds(rng_() % 3 ? rng_() % 8000 : 0);
    s.ttr = std::chrono::milliseconds(rng_() % 2 ? 0 : 500 + rng_() % 4000);
    switch (rng_() % 5) {
      case 0: s.retry = RetryPolicy::list({1s, 2s, 5s}); break;
      case 1: s.retry = RetryPolicy::fixed(0ms, 2); break;
      case 2: s.retry = RetryPolicy::exponential(500ms, 2.0, 4s, 0.3, 4); break;
      case 3: s.retry = RetryPolicy::list({std::chrono::milliseconds(rng_() % 3000)}); break;
      default: break;
    }
    (void)a_.push(std::move(s), now_);
  }

  void reserve() {
    std::vector<std::string> topics{any_topic()};
    if (rng_() % 2) topics.push_back(any_topic());
    Result<Delivery> d = a_.reserve(topics, now_);
    if (d) held_.push_back(d->token);
  }

  void settle() {
    if (held_.empty()) return;
    const size_t k = rng_() % held_.size();
    const Token t = held_[k];
    switch (rng_() % 6) {
      case 0: (void)a_.ack(t, now_); break;
      case 1: (void)a_.nack(t, std::nullopt, now_); break;
      case 2: (void)a_.nack(t, std::chrono::milliseconds(rng_() % 3000), now_); break;
      case 3: (void)a_.touch(t, now_); break;
      case 4: (void)a_.release(t, now_); break;
      default: (void)a_.dead_letter(t, now_); break;
    }
    if (rng_() % 2) {
      held_[k] = held_.back();
      held_.pop_back();
    }
  }

  void cancel() { (void)a_.cancel(any_id(), now_); }
  void reschedule() {
    (void)a_.reschedule(any_id(), now_ + std::chrono::milliseconds(rng_() % 5000), now_);
  }
  void dead_ops() {
    const std::string t = any_topic();
    switch (rng_() % 3) {
      case 0: (void)a_.requeue_dead(any_id(), now_); break;
      case 1: (void)a_.requeue_dead_topic(t, now_); break;
      default: (void)a_.purge_dead(t, now_); break;
    }
  }

  std::mt19937_64 rng_;
  Core a_;
  TimePoint now_;
  std::map<uint64_t, JobRecord> journal_;
  std::vector<Token> held_;
  uint64_t next_ = 0;
  std::set<std::string> paused_;
  Stats totals_;  // what the effects' totals added up to
  size_t peak_kept_ = 0;
};

TEST(CoreJournal, ReplayingTheReportedChangesRebuildsTheSameQueue) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Mirror m(seed);
    for (int i = 0; i < 3000; ++i) {
      m.step();
      if (i % 250 == 249) {
        m.check();
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

TEST(CoreJournal, EveryKindOfTransitionIsReported) {
  Core c(Recording(), kStart);
  ASSERT_TRUE(c.push({.topic = "t", .id = "a", .body = "x"}, kStart).ok());
  auto ch = c.take_effects().changes;
  ASSERT_EQ(ch.size(), 1u);
  ASSERT_TRUE(ch[0].record);
  EXPECT_EQ(ch[0].record->id, "a");
  EXPECT_EQ(ch[0].record->body, "x");
  const uint64_t seq = ch[0].seq;

  Result<Delivery> d = c.reserve(std::vector<std::string>{"t"}, kStart);
  ASSERT_TRUE(d.ok());
  ch = c.take_effects().changes;
  ASSERT_EQ(ch.size(), 1u) << "the attempt must be journaled before the job is handed out";
  EXPECT_EQ(ch[0].record->state, JobState::reserved);
  EXPECT_EQ(ch[0].record->attempts, 1u);
  EXPECT_EQ(ch[0].record->fence, d->token.fence);

  // The lease runs out: a failed attempt, retried later.
  c.advance(kStart + 1h);
  ch = c.take_effects().changes;
  ASSERT_EQ(ch.size(), 1u);
  EXPECT_NE(ch[0].record->state, JobState::reserved);
  EXPECT_EQ(ch[0].record->attempts, 1u);

  ASSERT_TRUE(c.cancel("a", kStart + 1h).ok());
  ch = c.take_effects().changes;
  ASSERT_EQ(ch.size(), 1u);
  EXPECT_EQ(ch[0].seq, seq);
  EXPECT_FALSE(ch[0].record) << "a cancel erases the record";

  // A refused call changes nothing.
  EXPECT_FALSE(c.push({.topic = "", .id = "b"}, kStart + 1h).ok());
  EXPECT_TRUE(c.take_effects().changes.empty());
}

// One effects value after each call: what the driver journals, whom it wakes, when it re-arms.
TEST(CoreJournal, EffectsSayWhatToJournalWakeAndArm) {
  Core c(Recording(), kStart);
  ASSERT_TRUE(c.push({.topic = "t", .id = "later", .delay = 10s}, kStart).ok());
  Effects e = c.take_effects();
  EXPECT_EQ(e.changes.size(), 1u);
  EXPECT_EQ(e.totals.pushed, 1u) << "the totals travel with the changes that made them";
  EXPECT_FALSE(e.made_ready);
  ASSERT_TRUE(e.earliest_scheduled);
  EXPECT_EQ(*e.earliest_scheduled, kStart + 10s);

  ASSERT_TRUE(c.push({.topic = "t", .id = "now"}, kStart).ok());
  e = c.take_effects();
  EXPECT_TRUE(e.made_ready);
  EXPECT_FALSE(e.earliest_scheduled) << "a job due at once needs no timer";

  // A job falling due is no change to journal (it follows from its due time), but it wakes.
  c.advance(kStart + 10s);
  e = c.take_effects();
  EXPECT_TRUE(e.changes.empty());
  EXPECT_EQ(e.totals.pushed, 0u);
  EXPECT_TRUE(e.made_ready);
  e = c.take_effects();
  EXPECT_FALSE(e.made_ready) << "taken once";

  // Without record_changes there is nothing to journal, and no totals to carry.
  Core memory(CoreOptions{}, kStart);
  ASSERT_TRUE(memory.push({.topic = "t", .id = "a"}, kStart).ok());
  e = memory.take_effects();
  EXPECT_TRUE(e.changes.empty());
  EXPECT_EQ(e.totals.pushed, 0u);
  EXPECT_TRUE(e.made_ready);
}

TEST(CoreJournal, OverdueJobsComeBackInDueOrderAndLeasesRunOut) {
  Core c(Recording(), kStart);
  const TimePoint later = kStart + 1h;
  JobRecord r1{.seq = 1, .id = "late", .topic = "t", .due = kStart + 30min, .ttr = 5s};
  JobRecord r2{.seq = 2, .id = "early", .topic = "t", .due = kStart + 10min, .ttr = 5s};
  JobRecord r3{.seq = 3, .id = "held", .topic = "t", .state = JobState::reserved,
               .due = kStart, .lease_deadline = kStart + 20min, .ttr = 5s, .attempts = 1,
               .fence = 41, .retry = RetryPolicy::fixed(0ms, 3)};
  for (const JobRecord& r : {r1, r2, r3}) ASSERT_TRUE(c.restore(JobRecord(r), later).ok());
  EXPECT_TRUE(c.restore(JobRecord(r1), later).is(Errc::corrupt));
  const std::vector<std::string> t{"t"};
  Result<Delivery> a = c.reserve(t, later), b = c.reserve(t, later), h = c.reserve(t, later);
  ASSERT_TRUE(a.ok() && b.ok() && h.ok());
  EXPECT_EQ(a->id, "early");
  EXPECT_EQ(b->id, "held") << "its lease ran out at +20 min, and its retry (wait 0) came then";
  EXPECT_EQ(h->id, "late");
  EXPECT_EQ(b->attempt, 2u);
  EXPECT_GT(b->token.fence, 41u) << "fences continue above the restored ones";
}

// Times at the far ends of the clock: a call made with `now` at the earliest instant (a clock
// far off; the journal fuzzer replays a record's own times as `now`) can set a due time there,
// and the job's place among what fires when, its lateness and its age as a ready job are then
// computed without overflow (the fuzzer found `-ns` and `now - due` overflowing) and saturate.
TEST(CoreJournal, ADueTimeAtTheEarliestInstantsIsCountedAndItsLatenessSaturates) {
  Core c(Recording(), kStart);
  JobRecord r{.seq = 1, .id = "a", .topic = "t", .due = kStart + 1h, .ttr = 5s};
  ASSERT_TRUE(c.restore(std::move(r), kStart).ok());
  const TimePoint earliest = TimePoint::min();
  ASSERT_TRUE(c.reschedule("a", earliest + 1s, earliest).ok());
  Stats then;
  c.add_stats(then, earliest);
  EXPECT_EQ(then.timing.at("t").due.next_minute, 1u);
  c.advance(kStart);
  Stats now;
  c.add_stats(now, kStart);
  EXPECT_EQ(now.timing.at("t").oldest_ready, Duration::max()) << "saturated, not wrapped";
  const std::vector<std::string> t{"t"};
  Result<Delivery> d = c.reserve(t, kStart);
  ASSERT_TRUE(d.ok());
  Stats after;
  c.add_stats(after, kStart);
  const Lateness& l = after.timing.at("t").first;
  EXPECT_EQ(l.count, 1u);
  EXPECT_EQ(l.buckets.back(), 1u) << "beyond every bound";
  EXPECT_EQ(l.clamped, 0u) << "a wrapped difference would be negative";
}

// A record no call could have written is refused as corrupt, naming the record and what is
// wrong, and changes nothing: the store's tolerant option relies on that to skip it.
TEST(CoreJournal, RecordsNoCallCouldWriteAreRefusedAsCorruptAndChangeNothing) {
  const JobRecord good{
      .seq = 7, .id = "g", .topic = "t", .due = kStart + 1h, .ttr = 5s, .fence = 3};
  const auto years = [](int n) { return std::chrono::hours(24 * 365 * n); };
  const std::vector<std::pair<std::string, std::function<void(JobRecord&)>>> cases = {
      {"unknown state 9", [](JobRecord& r) { r.state = static_cast<JobState>(9); }},
      {"id of 0 bytes", [](JobRecord& r) { r.id.clear(); }},
      {"id of 256 bytes", [](JobRecord& r) { r.id.assign(256, 'i'); }},
      {"topic of 0 bytes", [](JobRecord& r) { r.topic.clear(); }},
      {"topic of 300 bytes", [](JobRecord& r) { r.topic.assign(300, 't'); }},
      {"max_attempts must be at least 1", [](JobRecord& r) { r.retry.max_attempts = 0; }},
      {"ttr of 0", [](JobRecord& r) { r.ttr = 0s; }},
      {"ttr of", [&](JobRecord& r) { r.ttr = years(101); }},
      {"due time -1 ns", [](JobRecord& r) { r.due = TimePoint(Duration(-1)); }},
      {"due time", [&](JobRecord& r) { r.due = kStart + years(101); }},
      {"lease deadline",
       [&](JobRecord& r) {
         r.state = JobState::reserved;
         r.attempts = 1;
         r.lease_deadline = kStart + years(101);
       }},
      {"lease deadline -5 ns",
       [](JobRecord& r) {
         r.state = JobState::reserved;
         r.attempts = 1;
         r.lease_deadline = TimePoint(Duration(-5));
       }},
      {"seq 0 is out of range", [](JobRecord& r) { r.seq = 0; }},
      {"seq 9223372036854775808", [](JobRecord& r) { r.seq = uint64_t{1} << 63; }},
      {"fence 9223372036854775808", [](JobRecord& r) { r.fence = uint64_t{1} << 63; }},
  };
  for (const auto& [expected, damage] : cases) {
    Core c(Recording(), kStart);
    JobRecord r = good;
    damage(r);
    const Status st = c.restore(JobRecord(r), kStart);
    EXPECT_TRUE(st.is(Errc::corrupt)) << expected << ": " << st.to_string();
    EXPECT_NE(st.message().find("record seq " + std::to_string(r.seq)), std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find(expected), std::string::npos) << st.message();
    EXPECT_EQ(c.jobs(), 0u) << expected << ": nothing restored";
    ASSERT_TRUE(c.restore(JobRecord(good), kStart).ok()) << expected << ": the core still works";
  }
  // The limits themselves are restorable: overdue, and due in 99 years.
  Core c(Recording(), kStart);
  JobRecord overdue = good, far = good;
  overdue.due = TimePoint{};
  far.seq = 8;
  far.id = "far";
  far.due = kStart + years(99);
  EXPECT_TRUE(c.restore(std::move(overdue), kStart).ok());
  EXPECT_TRUE(c.restore(std::move(far), kStart).ok());
  // A second record with an id already restored: the first one stays.
  JobRecord twin = good;
  twin.seq = 9;
  twin.body = "twin";
  const Status st = c.restore(std::move(twin), kStart);
  EXPECT_TRUE(st.is(Errc::corrupt)) << st.to_string();
  EXPECT_NE(st.message().find("restored already"), std::string::npos) << st.message();
  EXPECT_EQ(c.jobs(), 2u);
  EXPECT_EQ(c.get("g", kStart)->body, "") << "the first record of the id stays";
}

}  // namespace
}  // namespace delayq::engine
