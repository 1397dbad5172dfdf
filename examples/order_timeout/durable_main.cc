// Order timeout on the durable store, in real time, with a crash in the middle.
//
// Worker 1 places orders, each with a timeout job (a few seconds here instead of 30 minutes),
// takes payments, and closes the orders whose timeout fires. Half-way through, the demo kills it
// with SIGKILL: no shutdown, no flush. Worker 2 opens the same store and carries on. At the end
// every order is either paid or closed: nothing placed before the crash was forgotten, and an
// order whose timeout worker 1 had taken but not finished is delivered again (attempt 2).
//
//   order_timeout_durable [STORE_DIR]     (default: ./demo-data/orders, wiped first)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include <delayq/store.h>

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

namespace {

const Steady::time_point kStart = Steady::now();

void say(const char* who, const std::string& what) {
  const double t = std::chrono::duration<double>(Steady::now() - kStart).count();
  std::printf("%6.2fs  %-9s %s\n", t, who, what.c_str());
  std::fflush(stdout);
}

std::unique_ptr<delayq::Engine> open(const std::string& dir, const char* who) {
  delayq::StoreOptions o;
  o.dir = dir;
  o.engine.limits.default_ttr = 1s;  // a worker that dies holding a job gives it back after 1 s
  auto q = delayq::open_store(o);
  if (!q) {
    std::fprintf(stderr, "%s: cannot open the store: %s\n", who, q.status().to_string().c_str());
    std::exit(1);
  }
  return std::move(q).value();
}

// Closes the orders whose timeout came: restock, then ack. Returns after `for_how_long`, or at
// once when nothing is left and `until_empty` is set.
int close_timed_out(delayq::Engine& q, const char* who, Steady::duration for_how_long,
                    bool until_empty, bool die_holding_one = false) {
  int closed = 0;
  const Steady::time_point end = Steady::now() + for_how_long;
  while (Steady::now() < end) {
    if (until_empty && q.stats().topics.empty()) break;
    delayq::Result<delayq::Delivery> d = q.reserve("order-timeout", 100ms);
    if (!d) continue;
    if (die_holding_one) {
      say(who, "took the timeout of " + d->id + " (attempt " + std::to_string(d->attempt) +
                   ") and is about to be killed before finishing it");
      std::this_thread::sleep_for(1h);  // the kill comes first
    }
    say(who, "order " + d->id + " unpaid: closed, " + d->body + " back in stock (attempt " +
                 std::to_string(d->attempt) + ")");
    if (!q.ack(d->token).ok()) say(who, "ack refused: " + d->id);
    ++closed;
  }
  return closed;
}

[[noreturn]] void worker1(const std::string& dir) {
  auto q = open(dir, "worker 1");
  say("worker 1", "opened the store " + dir);
  const std::vector<std::pair<const char*, const char*>> orders = {
      {"A-1001", "2 x espresso beans"}, {"A-1002", "1 x milk frother"},
      {"A-1003", "1 x grinder"},        {"A-1004", "4 x paper filters"},
      {"A-1005", "3 x mugs"},           {"A-1006", "1 x scale"}};
  for (const auto& [id, item] : orders) {
    auto r = q->push({.topic = "order-timeout", .id = id, .delay = 1500ms, .body = item,
                      .retry = delayq::RetryPolicy::fixed(0ms, 5)});
    if (!r) {
      say("worker 1", std::string("push failed: ") + r.status().to_string());
      _exit(1);
    }
    say("worker 1", std::string("order ") + id + " placed (" + item + "), closes in 1.5 s unless paid");
    std::this_thread::sleep_for(150ms);
  }
  if (q->cancel("A-1002").ok()) say("worker 1", "order A-1002 paid: timeout cancelled");
  if (q->cancel("A-1005").ok()) say("worker 1", "order A-1005 paid: timeout cancelled");
  close_timed_out(*q, "worker 1", 1000ms, false);
  close_timed_out(*q, "worker 1", 10s, false, /*die_holding_one=*/true);
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "demo-data/orders";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::printf("delayq demo: order timeouts on the durable store, with a kill -9 half-way\n\n");
  std::fflush(stdout);

  const pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) worker1(dir);
  std::this_thread::sleep_for(2600ms);
  say("demo", "*** kill -9 worker 1 (pid " + std::to_string(pid) + ") ***");
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);

  auto q = open(dir, "worker 2");
  const delayq::Stats before = q->stats();
  const auto& t = before.topics.count("order-timeout") ? before.topics.at("order-timeout")
                                                       : delayq::TopicStats{};
  say("worker 2", "reopened the store: " + std::to_string(t.delayed + t.ready) + " timeouts waiting, " +
                      std::to_string(t.reserved) + " held by the dead worker until its lease runs out");
  const int closed = close_timed_out(*q, "worker 2", 15s, /*until_empty=*/true);
  const delayq::Stats after = q->stats();
  say("worker 2", "closed " + std::to_string(closed) + (closed == 1 ? " order" : " orders") +
                      "; jobs left in the store: " + std::to_string(after.topics.size()));
  if (!after.topics.empty()) {
    std::printf("\nexample failed: jobs were left in the store\n");
    return 1;
  }
  std::printf("\nNothing was lost to the crash: every order placed is paid or closed.\n");
  return 0;
}
