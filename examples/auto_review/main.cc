// Automatic review: 5 days after an order is delivered, a customer who has not reviewed it
// gets a default positive review posted for them.
//
// Delivery pushes a job due 5 days later; a review written by the customer cancels it, and so
// does a return. A customer who writes a review after the automatic one edits it instead (the
// cancel finds no job: not_found).
//
// Nine days run on a ManualClock: in milliseconds, with the same timeline every time. One file,
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

  constexpr Duration kWait = days(5);
  std::map<std::string, std::string> review;  // order -> review text
  int by_customer = 0, automatic = 0, edited = 0, returned = 0;

  auto delivered = [&](const std::string& order) {
    check(q.push({.topic = "auto-review", .id = "review:" + order, .delay = kWait, .body = order})
              .status(),
          "push");
    std::printf("%s  order %s delivered\n", stamp().c_str(), order.c_str());
  };
  auto customer_reviews = [&](const std::string& order, const std::string& text) {
    const delayq::Status s = q.cancel("review:" + order);
    if (s.ok()) {
      ++by_customer;
      std::printf("%s  order %s reviewed by the customer: \"%s\"\n", stamp().c_str(), order.c_str(),
                  text.c_str());
    } else if (s.is(delayq::Errc::not_found)) {
      ++edited;
      std::printf("%s  order %s: the customer replaces the automatic review: \"%s\"\n",
                  stamp().c_str(), order.c_str(), text.c_str());
    } else {
      check(s, "cancel");
    }
    review[order] = text;
  };
  auto returned_order = [&](const std::string& order) {
    check(q.cancel("review:" + order), "cancel");
    ++returned;
    std::printf("%s  order %s returned: no review will be posted\n", stamp().c_str(),
                order.c_str());
  };

  // What happens when, from the start.
  std::multimap<Duration, std::function<void()>> events = {
      {9h, [&] { delivered("O-100"); }},
      {14h, [&] { delivered("O-101"); }},
      {days(1) + 10h, [&] { delivered("O-102"); }},
      {days(1) + 18h, [&] { delivered("O-103"); }},
      {days(2) + 20h, [&] { customer_reviews("O-101", "Great, fast shipping"); }},
      {days(3) + 11h, [&] { returned_order("O-103"); }},
      {days(7) + 8h, [&] { customer_reviews("O-100", "Broke after a week"); }},
  };

  std::printf("delayq example: a default review 5 days after delivery\n\n");
  for (Duration t = 0h; t <= days(9); t += 1h) {
    clock.set(start + t);
    for (auto e = events.begin(); e != events.end() && e->first <= t; e = events.erase(e))
      e->second();
    // The worker: every order whose 5 days are up by now.
    while (auto d = q.reserve("auto-review", 0ms)) {
      ++automatic;
      review[d->body] = "5 stars (automatic review)";
      std::printf("%s  order %s: no review after 5 days, posted \"%s\"\n", stamp().c_str(),
                  d->body.c_str(), review[d->body].c_str());
      check(q.ack(d->token), "ack");
    }
  }

  std::printf(
      "\n4 orders: %d reviewed by the customer, %d reviewed automatically (%d later "
      "replaced), %d returned; jobs left=%zu\n",
      by_customer, automatic, edited, returned, q.stats().topics.size());
  if (by_customer != 1 || automatic != 2 || edited != 1 || returned != 1)
    fail("unexpected outcome");
  return 0;
}
