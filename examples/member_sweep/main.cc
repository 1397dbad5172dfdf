// Member reminders as schedules: every morning at 09:00 in each member's time zone, a sweep
// reminds the members of that zone whose membership ends in 15 or in 3 days.
//
// One schedule per zone in use (`0 9 * * *` read in that zone). Its job, once due, is the
// sweep: it looks the zone's members up in the member table and "sends" each reminder (prints
// it). Nothing is pushed per member, so joining, renewing or cancelling only edits the table.
//
// Fifty days of March and April 2027 run on a ManualClock, on the durable store, across both
// DST changes (New York on 14 March, Berlin on 28 March; Tokyo has none), with the store closed
// and opened again half-way. The program checks that each member got exactly its two reminders,
// at 09:00 local on the right days, and exits with status 1 otherwise. One file, built against
// an installed delayq (examples/README.md).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <delayq/store.h>

using delayq::TimePoint;
using days = std::chrono::days;
using namespace std::chrono_literals;

namespace {

// Ends the program with status 1 and "example failed: <why>" unless `ok`.
void expect(bool ok, const std::string& why) {
  if (ok) return;
  std::fprintf(stderr, "example failed: %s\n", why.c_str());
  std::exit(1);
}
void check(const delayq::Status& s, const std::string& what) {
  expect(s.ok(), what + ": " + s.to_string());
}

TimePoint utc(int y, unsigned mo, unsigned d, int h = 0) {
  return std::chrono::sys_days(std::chrono::year(y) / mo / d) + std::chrono::hours(h);
}

// "2027-03-21 08:00Z"
std::string stamp(TimePoint t) {
  const auto day = std::chrono::floor<days>(t);
  const std::chrono::year_month_day ymd(day);
  const auto m = std::chrono::duration_cast<std::chrono::minutes>(t - day).count();
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02lld:%02lldZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<long long>(m / 60), static_cast<long long>(m % 60));
  return buf;
}

// The member table: a membership runs until `ends`, the midnight (local) that starts the day it
// is no longer valid, kept as a UTC instant as a real table would keep it.
struct Member {
  std::string id, zone;
  TimePoint ends;
};
const std::vector<Member> kMembers = {
    {"M-1", "Europe/Berlin", utc(2027, 4, 4, 22)},     // 5 April 00:00 CEST
    {"M-2", "Europe/Berlin", utc(2027, 3, 19, 23)},    // 20 March 00:00 CET
    {"M-3", "America/New_York", utc(2027, 3, 25, 4)},  // 25 March 00:00 EDT
    {"M-4", "Asia/Tokyo", utc(2027, 3, 31, 15)},       // 1 April 00:00 JST
    {"M-5", "America/New_York", utc(2027, 4, 15, 4)},  // 15 April 00:00 EDT
};

// The reminders each member must get, at 09:00 local, worked out by hand: M-1's 15-day reminder
// is on 21 March, 09:00 CET (08:00Z), its 3-day one on 2 April, 09:00 CEST (07:00Z), and so on.
using Sent = std::tuple<std::string, long long, TimePoint>;  // member, days left, when
const std::set<Sent> kExpected = {
    {"M-1", 15, utc(2027, 3, 21, 8)},  {"M-1", 3, utc(2027, 4, 2, 7)},
    {"M-2", 15, utc(2027, 3, 5, 8)},   {"M-2", 3, utc(2027, 3, 17, 8)},
    {"M-3", 15, utc(2027, 3, 10, 14)}, {"M-3", 3, utc(2027, 3, 22, 13)},
    {"M-4", 15, utc(2027, 3, 17, 0)},  {"M-4", 3, utc(2027, 3, 29, 0)},
    {"M-5", 15, utc(2027, 3, 31, 13)}, {"M-5", 3, utc(2027, 4, 12, 13)},
};

// Whole days from a sweep at 09:00 local to the end of a membership: `ends` is a local midnight,
// so the span is N days less 9 hours, give or take the hour of a DST change in between; adding
// 12 hours before dividing gives N whatever the change.
long long days_left(TimePoint sweep, TimePoint ends) {
  return std::chrono::floor<days>(ends - sweep + 12h).count();
}

// Declares the sweep of every zone in use (a schedule() with the id of one that exists would
// replace it and keep its state, so an application may as well do this at each start).
void declare_sweeps(delayq::Engine& q) {
  std::set<std::string> zones;
  for (const Member& m : kMembers) zones.insert(m.zone);
  for (const std::string& zone : zones) {
    delayq::ScheduleSpec s;
    s.id = "member-sweep:" + zone;
    s.rule = "0 9 * * *";
    s.zone = zone;
    s.job.topic = "member-sweep";
    s.job.body = zone;
    check(q.schedule(s), "schedule " + s.id);
  }
}

}  // namespace

int main() {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("delayq-member-sweep-" + std::to_string(std::random_device{}()));
  std::filesystem::remove_all(dir);
  const TimePoint start = utc(2027, 3, 1), stop = utc(2027, 4, 20),
                  restart_at = utc(2027, 3, 14, 12);  // after New York's change, before its 09:00
  delayq::ManualClock clock(start);
  delayq::StoreOptions options;
  options.dir = dir.string();
  options.engine.clock = &clock;
  auto open = [&] {
    auto opened = delayq::open_store(options);
    check(opened.status(), "open_store");
    return std::move(opened).value();
  };
  std::unique_ptr<delayq::Engine> q = open();
  declare_sweeps(*q);

  std::printf(
      "delayq example: a sweep at 09:00 local in each zone reminds members 15 and 3 days "
      "before their membership ends\n\n");
  std::set<Sent> sent;
  int sweeps = 0, duplicates = 0;
  for (TimePoint t = start; t <= stop; t += 15min) {
    clock.set(t);
    if (t == restart_at) {
      q.reset();   // closes the store; what it holds is on disk
      q = open();  // the sweeps come back with it: the store keeps its schedules
      std::printf("%s  store closed and opened again\n", stamp(t).c_str());
    }
    // The worker: every sweep due by now. Its job is due at its occurrence (09:00 in its zone).
    while (auto d = q->reserve("member-sweep", 0ms)) {
      ++sweeps;
      expect(d->due == t,
             "a sweep of " + d->body + " ran at " + stamp(t) + ", due " + stamp(d->due));
      for (const Member& m : kMembers) {
        if (m.zone != d->body) continue;
        const long long left = days_left(d->due, m.ends);
        if (left != 15 && left != 3) continue;
        if (!sent.emplace(m.id, left, d->due).second) ++duplicates;
        std::printf("%s  %s sweep: reminder to %s, your membership ends in %lld days\n",
                    stamp(t).c_str(), m.zone.c_str(), m.id.c_str(), left);
      }
      check(q->ack(d->token), "ack");
    }
  }

  const size_t left = q->stats().topics.size();
  q.reset();
  std::filesystem::remove_all(dir);
  std::printf(
      "\n%zu members in 3 zones: %d sweeps, %zu reminders, each at 09:00 local on its "
      "day; jobs left=%zu\n",
      kMembers.size(), sweeps, sent.size(), left);
  expect(sent == kExpected && duplicates == 0, "the reminders sent are not the expected ones");
  // 1 March to 19 April in Berlin and New York, to 20 April in Tokyo (its 09:00 is 00:00Z).
  expect(sweeps == 50 + 50 + 51, "expected 151 sweeps, got " + std::to_string(sweeps));
  return 0;
}
