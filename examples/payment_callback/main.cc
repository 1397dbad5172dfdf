// Payment callbacks: tell the merchant that an order was paid, and keep trying - at once, then
// after 2 min, 10 min, 10 min, 1 h, 2 h, 6 h and 15 h - until the merchant answers. A merchant
// that never answers ends in the dead letters, where operations can look and requeue.
//
// One job per callback, with RetryPolicy::list: each failed attempt is retried after the next
// delay of the list, and the job is delivered at most 8 times.
#include <cstdio>
#include <map>

#include "../common/timeline.h"

using namespace example;

int main() {
  Timeline tl;
  delayq::Engine& q = tl.queue();
  const auto policy = delayq::RetryPolicy::list({2min, 10min, 10min, 1h, 2h, 6h, 15h});
  // How many attempts each merchant's endpoint fails before it answers (-1: never).
  const std::map<std::string, int> fails_before_answer = {{"shop-a", 0}, {"shop-b", 3},
                                                          {"shop-c", -1}};
  int answered = 0, attempts = 0;

  auto paid = [&](const std::string& payment, const std::string& merchant) {
    Timeline::check(q.push({.topic = "payment-callback", .id = payment, .body = merchant,
                            .retry = policy})
                        .status(),
                    "push");
    std::printf("%s  payment %s paid: callback to %s\n", tl.stamp().c_str(), payment.c_str(),
                merchant.c_str());
  };
  tl.at(0min, [&] { paid("P-1", "shop-a"); });
  tl.at(0min, [&] { paid("P-2", "shop-b"); });
  tl.at(0min, [&] { paid("P-3", "shop-c"); });

  std::printf("delayq example: payment callbacks retried at 0, 2m, 10m, 10m, 1h, 2h, 6h, 15h\n\n");
  tl.run(days(2), 1min, {"payment-callback"}, [&](const delayq::Delivery& d) {
    ++attempts;
    const int fails = fails_before_answer.at(d.body);
    if (fails >= 0 && static_cast<int>(d.attempt) > fails) {
      ++answered;
      std::printf("%s  %s attempt %u/%u: %s answered 200 OK\n", tl.stamp().c_str(),
                  d.id.c_str(), d.attempt, d.max_attempts, d.body.c_str());
      return delayq::HandlerResult::ack();
    }
    std::printf("%s  %s attempt %u/%u: %s did not answer%s\n", tl.stamp().c_str(), d.id.c_str(),
                d.attempt, d.max_attempts, d.body.c_str(),
                d.attempt == d.max_attempts ? ": giving up (dead letter)" : "");
    return delayq::HandlerResult::retry();
  });

  auto dead = q.list_dead("payment-callback", 10);
  Timeline::check(dead.status(), "list_dead");
  std::printf("\n3 callbacks, %d attempts: %d answered, %zu in the dead letters:", attempts,
              answered, dead->size());
  for (const delayq::JobInfo& j : *dead)
    std::printf(" %s (%s, %u attempts, last at %s)", j.id.c_str(), j.body.c_str(), j.attempts,
                Timeline::stamp_of(j.due - tl.start()).c_str());
  std::printf("\n");
  if (answered != 2 || dead->size() != 1 || attempts != 1 + 4 + 8)
    Timeline::fail("unexpected outcome");
  return 0;
}
