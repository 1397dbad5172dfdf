// Member reminders: a member hears 15 days and again 3 days before the membership expires.
//
// Joining pushes two jobs due at expiry - 15 days and expiry - 3 days (a reminder whose moment
// has already passed is not pushed). Renewing moves both to the new expiry with reschedule();
// one that was already sent is pushed again. Cancelling a membership cancels what is left.
#include <cstdio>
#include <map>

#include "../common/timeline.h"

using namespace example;

namespace {

const Duration kBefore[] = {days(15), days(3)};

std::string reminder_id(const std::string& member, Duration before) {
  return "remind:" + member + ":" +
         std::to_string(std::chrono::duration_cast<days>(before).count()) + "d";
}

}  // namespace

int main() {
  Timeline tl;
  delayq::Engine& q = tl.queue();
  std::map<std::string, delayq::TimePoint> expires;
  int sent = 0, moved = 0, repushed = 0, dropped = 0;

  auto schedule = [&](const std::string& member, bool renewal) {
    for (Duration before : kBefore) {
      const delayq::TimePoint when = expires[member] - before;
      const std::string id = reminder_id(member, before);
      if (when <= tl.now()) continue;
      // Move the reminder if it is still waiting, else push it anew.
      const delayq::Status s = q.reschedule(id, when);
      if (s.ok()) {
        ++moved;
      } else if (s.is(delayq::Errc::not_found)) {
        Timeline::check(
            q.push({.topic = "member-reminder", .id = id, .due_at = when, .body = member}).status(),
            "push");
        if (renewal) ++repushed;
      } else {
        Timeline::check(s, "reschedule");
      }
    }
  };
  auto join = [&](const std::string& member, Duration valid) {
    expires[member] = tl.now() + valid;
    schedule(member, false);
    std::printf("%s  %s joins, membership until %s\n", tl.stamp().c_str(), member.c_str(),
                Timeline::stamp_of(expires[member] - tl.start()).c_str());
  };
  auto renew = [&](const std::string& member, Duration more) {
    expires[member] += more;
    schedule(member, true);
    std::printf("%s  %s renews until %s: reminders set for the new date\n", tl.stamp().c_str(), member.c_str(),
                Timeline::stamp_of(expires[member] - tl.start()).c_str());
  };
  auto quit = [&](const std::string& member) {
    for (Duration before : kBefore)
      if (q.cancel(reminder_id(member, before)).ok()) ++dropped;
    std::printf("%s  %s cancels the membership: reminders dropped\n", tl.stamp().c_str(),
                member.c_str());
  };

  tl.at(9h, [&] { join("M-1", days(20)); });
  tl.at(10h, [&] { join("M-2", days(30)); });
  tl.at(11h, [&] { join("M-3", days(10)); });  // too close for the 15-day reminder
  tl.at(days(8), [&] { renew("M-1", days(30)); });
  tl.at(days(12), [&] { quit("M-2"); });

  std::printf("delayq example: reminders 15 and 3 days before a membership expires\n\n");
  tl.run(days(50), 1h, {"member-reminder"}, [&](const delayq::Delivery& d) {
    ++sent;
    const auto left = std::chrono::duration_cast<std::chrono::hours>(expires[d.body] - tl.now());
    std::printf("%s  reminder to %s: your membership ends in %lld days (%s)\n", tl.stamp().c_str(),
                d.body.c_str(), static_cast<long long>(left.count() / 24),
                Timeline::stamp_of(expires[d.body] - tl.start()).c_str());
    return delayq::HandlerResult::ack();
  });

  std::printf("\n3 members: %d reminders sent; a renewal moved %d and pushed %d again; a "
              "cancellation dropped %d; jobs left=%zu\n",
              sent, moved, repushed, dropped, q.stats().topics.size());
  if (sent != 4 || moved != 1 || repushed != 1 || dropped != 2)
    Timeline::fail("unexpected outcome");
  return 0;
}
