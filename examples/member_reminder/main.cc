// Member reminders: a member hears 15 days and again 3 days before the membership expires.
//
// Joining pushes two jobs due at expiry - 15 days and expiry - 3 days (a reminder whose moment
// has already passed is not pushed). Renewing moves both to the new expiry with reschedule();
// one that was already sent is pushed again. Cancelling a membership cancels what is left.
//
// Fifty days run on a ManualClock: in milliseconds, with the same timeline every time. One file,
// built against an installed delayq (examples/README.md).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>

#include <delayq/engine.h>

using namespace std::chrono_literals;
using delayq::Duration;
using days = std::chrono::days;

namespace {

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "example failed: %s\n", why.c_str());
  std::exit(1);
}
void check(const delayq::Status& s, const std::string& what) {
  if (!s.ok()) fail(what + ": " + s.to_string());
}

// "day 3 09:30": business time since the start, day 1 being the first.
std::string day_time(Duration since) {
  const long long m = std::chrono::duration_cast<std::chrono::minutes>(since).count();
  char buf[32];
  std::snprintf(buf, sizeof buf, "day %lld %02lld:%02lld", m / 1440 + 1, m % 1440 / 60, m % 60);
  return buf;
}

const Duration kBefore[] = {days(15), days(3)};

std::string reminder_id(const std::string& member, Duration before) {
  return "remind:" + member + ":" +
         std::to_string(std::chrono::duration_cast<days>(before).count()) + "d";
}

}  // namespace

int main() {
  delayq::ManualClock clock;
  delayq::EngineOptions options;
  options.clock = &clock;
  auto opened = delayq::Engine::open(options);
  check(opened.status(), "open");
  delayq::Engine& q = **opened;
  const delayq::TimePoint start = clock.now();
  const auto stamp = [&] { return day_time(clock.now() - start); };

  std::map<std::string, delayq::TimePoint> expires;
  int sent = 0, moved = 0, repushed = 0, dropped = 0;

  auto schedule = [&](const std::string& member, bool renewal) {
    for (Duration before : kBefore) {
      const delayq::TimePoint when = expires[member] - before;
      const std::string id = reminder_id(member, before);
      if (when <= clock.now()) continue;
      // Move the reminder if it is still waiting, else push it anew.
      const delayq::Status s = q.reschedule(id, when);
      if (s.ok()) {
        ++moved;
      } else if (s.is(delayq::Errc::not_found)) {
        const delayq::Result<std::string> pushed =
            q.push({.topic = "member-reminder", .id = id, .due_at = when, .body = member});
        check(pushed.status(), "push");
        if (renewal) ++repushed;
      } else {
        check(s, "reschedule");
      }
    }
  };
  auto join = [&](const std::string& member, Duration valid) {
    expires[member] = clock.now() + valid;
    schedule(member, false);
    std::printf("%s  %s joins, membership until %s\n", stamp().c_str(), member.c_str(),
                day_time(expires[member] - start).c_str());
  };
  auto renew = [&](const std::string& member, Duration more) {
    expires[member] += more;
    schedule(member, true);
    std::printf("%s  %s renews until %s: reminders set for the new date\n", stamp().c_str(),
                member.c_str(), day_time(expires[member] - start).c_str());
  };
  auto quit = [&](const std::string& member) {
    for (Duration before : kBefore)
      if (q.cancel(reminder_id(member, before)).ok()) ++dropped;
    std::printf("%s  %s cancels the membership: reminders dropped\n", stamp().c_str(),
                member.c_str());
  };

  // What happens when, from the start.
  std::multimap<Duration, std::function<void()>> events = {
      {9h, [&] { join("M-1", days(20)); }},       {10h, [&] { join("M-2", days(30)); }},
      {11h, [&] { join("M-3", days(10)); }},  // too close for the 15-day reminder
      {days(8), [&] { renew("M-1", days(30)); }}, {days(12), [&] { quit("M-2"); }},
  };

  std::printf("delayq example: reminders 15 and 3 days before a membership expires\n\n");
  for (Duration t = 0h; t <= days(50); t += 1h) {
    clock.set(start + t);
    for (auto e = events.begin(); e != events.end() && e->first <= t; e = events.erase(e))
      e->second();
    // The worker: every reminder due by now.
    while (auto d = q.reserve("member-reminder", 0ms)) {
      ++sent;
      const auto left =
          std::chrono::duration_cast<std::chrono::hours>(expires[d->body] - clock.now());
      std::printf("%s  reminder to %s: your membership ends in %lld days (%s)\n", stamp().c_str(),
                  d->body.c_str(), static_cast<long long>(left.count() / 24),
                  day_time(expires[d->body] - start).c_str());
      check(q.ack(d->token), "ack");
    }
  }

  std::printf(
      "\n3 members: %d reminders sent; a renewal moved %d and pushed %d again; a "
      "cancellation dropped %d; jobs left=%zu\n",
      sent, moved, repushed, dropped, q.stats().topics.size());
  if (sent != 4 || moved != 1 || repushed != 1 || dropped != 2) fail("unexpected outcome");
  return 0;
}
