// Order timeout: an order that is not paid within 30 minutes is closed and its stock returned.
//
// Each order pushes one job due 30 minutes after it was placed; paying cancels the job. The shop
// runs on a ManualClock, so 45 minutes of trading take a few milliseconds and the timeline is
// the same on every run.
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <delayq/engine.h>

using namespace std::chrono_literals;
using delayq::Duration;

namespace {

struct Order {
  const char* id;
  Duration placed;                // minutes into the demo
  const char* item;
  int qty;
  std::optional<Duration> paid;  // when the customer pays, if ever
};

std::string clock_text(Duration since_open) {
  const auto m = std::chrono::duration_cast<std::chrono::minutes>(since_open).count();
  char buf[16];
  std::snprintf(buf, sizeof buf, "+%02lld:%02lld", static_cast<long long>(m / 60),
                static_cast<long long>(m % 60));
  return buf;
}

}  // namespace

int main() {
  delayq::ManualClock clock;
  delayq::EngineOptions options;
  options.clock = &clock;
  auto opened = delayq::Engine::open(options);
  if (!opened) {
    std::fprintf(stderr, "cannot open the queue: %s\n", opened.status().to_string().c_str());
    return 1;
  }
  delayq::Engine& queue = **opened;
  const delayq::TimePoint open_time = clock.now();
  auto now_text = [&] { return clock_text(clock.now() - open_time); };

  const std::vector<Order> orders = {
      {"A-1001", 0min, "espresso beans", 2, std::nullopt},
      {"A-1002", 3min, "milk frother", 1, 7min},
      {"A-1003", 5min, "espresso beans", 1, std::nullopt},
      {"A-1004", 9min, "grinder", 1, 41min},  // pays too late: the order was already closed
      {"A-1005", 12min, "paper filters", 4, 20min},
      {"A-1006", 14min, "milk frother", 2, std::nullopt},
  };
  std::map<std::string, int> stock = {
      {"espresso beans", 10}, {"milk frother", 5}, {"grinder", 3}, {"paper filters", 50}};
  int paid = 0, closed = 0, late = 0;

  std::printf("delayq demo: unpaid orders close after 30 minutes and give their stock back\n");
  std::printf("(a ManualClock runs 45 minutes of shop time in a few milliseconds)\n\n");

  for (Duration t = 0min; t <= 45min; t += 1min) {
    clock.set(open_time + t);
    for (const Order& o : orders) {
      if (o.placed == t) {
        stock[o.item] -= o.qty;
        auto pushed = queue.push({.topic = "order-timeout",
                                  .id = o.id,
                                  .delay = 30min,
                                  .body = std::to_string(o.qty) + " " + o.item});
        if (!pushed) {
          std::fprintf(stderr, "push failed: %s\n", pushed.status().to_string().c_str());
          return 1;
        }
        std::printf("%s  order %s placed: %d x %s (stock held; closes at %s unless paid)\n",
                    now_text().c_str(), o.id, o.qty, o.item, clock_text(t + 30min).c_str());
      }
      if (o.paid == t) {
        delayq::Status s = queue.cancel(o.id);
        if (s.ok()) {
          ++paid;
          std::printf("%s  order %s paid: its timeout is cancelled\n", now_text().c_str(), o.id);
        } else {
          ++late;
          // Errc::not_found: the timeout already fired and the order is closed.
          std::printf("%s  order %s paid too late: it was closed already, refund it\n",
                      now_text().c_str(), o.id);
        }
      }
    }
    // Close every order whose 30 minutes are up.
    for (;;) {
      delayq::Result<delayq::Delivery> d = queue.reserve("order-timeout", 0ms);
      if (!d) break;
      const Order* o = nullptr;
      for (const Order& x : orders)
        if (d->id == x.id) o = &x;
      stock[o->item] += o->qty;
      ++closed;
      std::printf("%s  order %s unpaid after 30 min: closed, %s back in stock (now %d)\n",
                  now_text().c_str(), o->id, d->body.c_str(), stock[o->item]);
      if (delayq::Status s = queue.ack(d->token); !s.ok()) {
        std::fprintf(stderr, "ack failed: %s\n", s.to_string().c_str());
        return 1;
      }
    }
  }

  const delayq::Stats st = queue.stats();
  std::printf("\n%zu orders: %d paid in time, %d closed by timeout, %d paid after closing\n",
              orders.size(), paid, closed, late);
  std::printf("stock:");
  for (const auto& [item, n] : stock) std::printf(" %s=%d", item.c_str(), n);
  std::printf("\nqueue: pushed=%llu delivered=%llu acked=%llu cancelled=%llu, jobs left=%zu\n",
              static_cast<unsigned long long>(st.pushed),
              static_cast<unsigned long long>(st.delivered),
              static_cast<unsigned long long>(st.acked),
              static_cast<unsigned long long>(st.cancelled), st.topics.size());
  return 0;
}
