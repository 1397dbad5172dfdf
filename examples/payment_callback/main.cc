// Payment callbacks: tell the merchant that an order was paid, and keep trying - at once, then
// after 2 min, 10 min, 10 min, 1 h, 2 h, 6 h and 15 h - until the merchant answers. A merchant
// that never answers ends in the dead letters, where operations can look and requeue.
//
// One job per callback, with RetryPolicy::list: each failed attempt is retried after the next
// delay of the list, and the job is delivered at most 8 times. Two days run on a ManualClock: in
// milliseconds, with the same timeline every time. One file, built against an installed delayq
// (examples/README.md).
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

  const auto policy = delayq::RetryPolicy::list({2min, 10min, 10min, 1h, 2h, 6h, 15h});
  // How many attempts each merchant's endpoint fails before it answers (-1: never).
  const std::map<std::string, int> fails_before_answer = {
      {"shop-a", 0}, {"shop-b", 3}, {"shop-c", -1}};
  int answered = 0, attempts = 0;

  auto paid = [&](const std::string& payment, const std::string& merchant) {
    check(q.push({.topic = "payment-callback", .id = payment, .body = merchant, .retry = policy})
              .status(),
          "push");
    std::printf("%s  payment %s paid: callback to %s\n", stamp().c_str(), payment.c_str(),
                merchant.c_str());
  };
  // What happens when, from the start.
  std::multimap<Duration, std::function<void()>> events = {
      {0min, [&] { paid("P-1", "shop-a"); }},
      {0min, [&] { paid("P-2", "shop-b"); }},
      {0min, [&] { paid("P-3", "shop-c"); }},
  };

  std::printf("delayq example: payment callbacks retried at 0, 2m, 10m, 10m, 1h, 2h, 6h, 15h\n\n");
  for (Duration t = 0min; t <= days(2); t += 1min) {
    clock.set(start + t);
    for (auto e = events.begin(); e != events.end() && e->first <= t; e = events.erase(e))
      e->second();
    // The worker: every callback due by now. A nack retries it after the policy's next delay,
    // or moves it to the dead letters after its last attempt.
    while (auto d = q.reserve("payment-callback", 0ms)) {
      ++attempts;
      const int fails = fails_before_answer.at(d->body);
      if (fails >= 0 && static_cast<int>(d->attempt) > fails) {
        ++answered;
        std::printf("%s  %s attempt %u/%u: %s answered 200 OK\n", stamp().c_str(), d->id.c_str(),
                    d->attempt, d->max_attempts, d->body.c_str());
        check(q.ack(d->token), "ack");
        continue;
      }
      std::printf("%s  %s attempt %u/%u: %s did not answer%s\n", stamp().c_str(), d->id.c_str(),
                  d->attempt, d->max_attempts, d->body.c_str(),
                  d->attempt == d->max_attempts ? ": giving up (dead letter)" : "");
      check(q.nack(d->token), "nack");
    }
  }

  auto dead = q.list_dead("payment-callback", 10);
  check(dead.status(), "list_dead");
  std::printf("\n3 callbacks, %d attempts: %d answered, %zu in the dead letters:", attempts,
              answered, dead->size());
  for (const delayq::JobInfo& j : *dead)
    std::printf(" %s (%s, %u attempts, last at %s)", j.id.c_str(), j.body.c_str(), j.attempts,
                day_time(j.due - start).c_str());
  std::printf("\n");
  if (answered != 2 || dead->size() != 1 || attempts != 1 + 4 + 8) fail("unexpected outcome");
  return 0;
}
