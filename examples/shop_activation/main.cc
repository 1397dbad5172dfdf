// Shop activation: a shop that still has no products 3 days after it opened gets an SMS that
// shows how to add the first one.
//
// Opening a shop pushes one job due 3 days later; adding the first product cancels it. The
// worker checks the shop once more when the job fires (a product may have been added a moment
// ago) and sends the SMS only to a shop that is still empty.
#include <cstdio>
#include <map>

#include "../common/timeline.h"

using namespace example;

int main() {
  Timeline tl;
  delayq::Engine& q = tl.queue();
  constexpr Duration kGrace = days(3);
  std::map<std::string, int> products;  // shop -> products listed
  int stocked_in_time = 0, reminded = 0, stocked_after_sms = 0;

  auto open_shop = [&](const std::string& shop) {
    products[shop] = 0;
    Timeline::check(q.push({.topic = "shop-activation", .id = "activate:" + shop, .delay = kGrace,
                            .body = shop})
                        .status(),
                    "push");
    std::printf("%s  shop %s opened (SMS at %s if it stays empty)\n", tl.stamp().c_str(),
                shop.c_str(), Timeline::stamp_of(tl.now() - tl.start() + kGrace).c_str());
  };
  auto add_product = [&](const std::string& shop) {
    if (products[shop]++ > 0) return;
    // The first product: the reminder is no longer needed. not_found means it was sent already.
    const delayq::Status s = q.cancel("activate:" + shop);
    if (s.ok()) {
      ++stocked_in_time;
      std::printf("%s  shop %s listed its first product: reminder cancelled\n", tl.stamp().c_str(),
                  shop.c_str());
    } else if (s.is(delayq::Errc::not_found)) {
      ++stocked_after_sms;
      std::printf("%s  shop %s listed its first product after the SMS\n", tl.stamp().c_str(),
                  shop.c_str());
    } else {
      Timeline::check(s, "cancel");
    }
  };

  tl.at(10h, [&] { open_shop("S-1"); });
  tl.at(15h, [&] { open_shop("S-2"); });
  tl.at(days(1) + 9h, [&] { open_shop("S-3"); });
  tl.at(days(1) + 11h, [&] { open_shop("S-4"); });
  tl.at(days(1) + 16h, [&] { add_product("S-2"); });
  tl.at(days(3) + 8h, [&] { add_product("S-4"); });
  tl.at(days(5) + 12h, [&] { add_product("S-3"); });  // after its SMS on day 5 at 09:00

  std::printf("delayq example: an SMS to shops still empty 3 days after opening\n\n");
  tl.run(days(7), 30min, {"shop-activation"}, [&](const delayq::Delivery& d) {
    if (products[d.body] == 0) {
      ++reminded;
      std::printf("%s  SMS to shop %s: \"Your shop is open but empty - add a product in 2 "
                  "minutes: https://example.com/add\"\n",
                  tl.stamp().c_str(), d.body.c_str());
    }
    return delayq::HandlerResult::ack();
  });

  std::printf("\n4 shops: %d stocked before the reminder, %d reminded by SMS, %d of them "
              "stocked after it; jobs left=%zu\n",
              stocked_in_time, reminded, stocked_after_sms, q.stats().topics.size());
  if (stocked_in_time != 2 || reminded != 2 || stocked_after_sms != 1)
    Timeline::fail("unexpected outcome");
  return 0;
}
