// Automatic review: 5 days after an order is delivered, a customer who has not reviewed it
// gets a default positive review posted for them.
//
// Delivery pushes a job due 5 days later; a review written by the customer cancels it, and so
// does a return. A customer who writes a review after the automatic one edits it instead (the
// cancel finds no job: not_found).
#include <cstdio>
#include <map>

#include "../common/timeline.h"

using namespace example;

int main() {
  Timeline tl;
  delayq::Engine& q = tl.queue();
  constexpr Duration kWait = days(5);
  std::map<std::string, std::string> review;  // order -> review text
  int by_customer = 0, automatic = 0, edited = 0, returned = 0;

  auto delivered = [&](const std::string& order) {
    Timeline::check(q.push({.topic = "auto-review", .id = "review:" + order, .delay = kWait,
                            .body = order})
                        .status(),
                    "push");
    std::printf("%s  order %s delivered\n", tl.stamp().c_str(), order.c_str());
  };
  auto customer_reviews = [&](const std::string& order, const std::string& text) {
    const delayq::Status s = q.cancel("review:" + order);
    if (s.ok()) {
      ++by_customer;
      std::printf("%s  order %s reviewed by the customer: \"%s\"\n", tl.stamp().c_str(),
                  order.c_str(), text.c_str());
    } else if (s.is(delayq::Errc::not_found)) {
      ++edited;
      std::printf("%s  order %s: the customer replaces the automatic review: \"%s\"\n",
                  tl.stamp().c_str(), order.c_str(), text.c_str());
    } else {
      Timeline::check(s, "cancel");
    }
    review[order] = text;
  };
  auto returned_order = [&](const std::string& order) {
    Timeline::check(q.cancel("review:" + order), "cancel");
    ++returned;
    std::printf("%s  order %s returned: no review will be posted\n", tl.stamp().c_str(),
                order.c_str());
  };

  tl.at(9h, [&] { delivered("O-100"); });
  tl.at(14h, [&] { delivered("O-101"); });
  tl.at(days(1) + 10h, [&] { delivered("O-102"); });
  tl.at(days(1) + 18h, [&] { delivered("O-103"); });
  tl.at(days(2) + 20h, [&] { customer_reviews("O-101", "Great, fast shipping"); });
  tl.at(days(3) + 11h, [&] { returned_order("O-103"); });
  tl.at(days(7) + 8h, [&] { customer_reviews("O-100", "Broke after a week"); });

  std::printf("delayq example: a default review 5 days after delivery\n\n");
  tl.run(days(9), 1h, {"auto-review"}, [&](const delayq::Delivery& d) {
    ++automatic;
    review[d.body] = "5 stars (automatic review)";
    std::printf("%s  order %s: no review after 5 days, posted \"%s\"\n", tl.stamp().c_str(),
                d.body.c_str(), review[d.body].c_str());
    return delayq::HandlerResult::ack();
  });

  std::printf("\n4 orders: %d reviewed by the customer, %d reviewed automatically (%d later "
              "replaced), %d returned; jobs left=%zu\n",
              by_customer, automatic, edited, returned, q.stats().topics.size());
  if (by_customer != 1 || automatic != 2 || edited != 1 || returned != 1)
    Timeline::fail("unexpected outcome");
  return 0;
}
