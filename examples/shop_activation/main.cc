// Shop activation: a shop that still has no products 3 days after it opened gets an SMS that
// shows how to add the first one.
//
// Opening a shop pushes one job due 3 days later; adding the first product cancels it. The
// worker checks the shop once more when the job fires (a product may have been added a moment
// ago) and sends the SMS only to a shop that is still empty.
//
// The week runs on a ManualClock: it takes milliseconds and prints the same timeline every time.
// One file, built against an installed delayq (examples/README.md).
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

  constexpr Duration kGrace = days(3);
  std::map<std::string, int> products;  // shop -> products listed
  int stocked_in_time = 0, reminded = 0, stocked_after_sms = 0;

  auto open_shop = [&](const std::string& shop) {
    products[shop] = 0;
    const delayq::Result<std::string> pushed = q.push(
        {.topic = "shop-activation", .id = "activate:" + shop, .delay = kGrace, .body = shop});
    check(pushed.status(), "push");
    std::printf("%s  shop %s opened (SMS at %s if it stays empty)\n", stamp().c_str(), shop.c_str(),
                day_time(clock.now() - start + kGrace).c_str());
  };
  auto add_product = [&](const std::string& shop) {
    if (products[shop]++ > 0) return;
    // The first product: the reminder is no longer needed. not_found means it was sent already.
    const delayq::Status s = q.cancel("activate:" + shop);
    if (s.ok()) {
      ++stocked_in_time;
      std::printf("%s  shop %s listed its first product: reminder cancelled\n", stamp().c_str(),
                  shop.c_str());
    } else if (s.is(delayq::Errc::not_found)) {
      ++stocked_after_sms;
      std::printf("%s  shop %s listed its first product after the SMS\n", stamp().c_str(),
                  shop.c_str());
    } else {
      check(s, "cancel");
    }
  };

  // What happens when, from the start of the week.
  std::multimap<Duration, std::function<void()>> events = {
      {10h, [&] { open_shop("S-1"); }},
      {15h, [&] { open_shop("S-2"); }},
      {days(1) + 9h, [&] { open_shop("S-3"); }},
      {days(1) + 11h, [&] { open_shop("S-4"); }},
      {days(1) + 16h, [&] { add_product("S-2"); }},
      {days(3) + 8h, [&] { add_product("S-4"); }},
      {days(5) + 12h, [&] { add_product("S-3"); }},  // after its SMS on day 5 at 09:00
  };

  std::printf("delayq example: an SMS to shops still empty 3 days after opening\n\n");
  for (Duration t = 0h; t <= days(7); t += 30min) {
    clock.set(start + t);
    for (auto e = events.begin(); e != events.end() && e->first <= t; e = events.erase(e))
      e->second();
    // The worker: every reminder that is due by now.
    while (auto d = q.reserve("shop-activation", 0ms)) {
      if (products[d->body] == 0) {
        ++reminded;
        std::printf(
            "%s  SMS to shop %s: \"Your shop is open but empty - add a product in 2 "
            "minutes: https://example.com/add\"\n",
            stamp().c_str(), d->body.c_str());
      }
      check(q.ack(d->token), "ack");
    }
  }

  std::printf(
      "\n4 shops: %d stocked before the reminder, %d reminded by SMS, %d of them "
      "stocked after it; jobs left=%zu\n",
      stocked_in_time, reminded, stocked_after_sms, q.stats().topics.size());
  if (stocked_in_time != 2 || reminded != 2 || stocked_after_sms != 1) fail("unexpected outcome");
  return 0;
}
