// delayq-http-bench: a load client for delayqd (the HTTP daemon). Blocking sockets, HTTP/1.1
// keep-alive, one connection per thread, through the wire's small client (src/wire): what it
// measures is the daemon plus the kernel's loopback, not a client framework. One JSON line per
// run on stdout (the shape of delayq-bench's, bench/report.h), notes on stderr. The daemon is started by
// the caller (bench/http.sh).
//
//   delayq-http-bench --port P --workload push --jobs 20000 --connections 4 [--delay 0]
//   delayq-http-bench --port P --workload pop-finish --jobs 20000 --connections 4
//   delayq-http-bench --port P --workload W1 --jobs 20000 --connections 4 --delay-max 5
//   delayq-http-bench --port P --workload health --jobs 50000 --connections 4
//
// push:       N /push requests (64-byte body, the given delay) spread over C connections.
// pop-finish: N jobs pushed first (untimed), then C connections each loop /pop then /finish
//             with the delivery's token until all N are finished.
// W1:         W1 (docs/benchmarks.md) over HTTP: C connections push N jobs with delays uniform in
//             [0, D] s (whole ms) while C other connections pop and finish them; lateness is the
//             moment a pop answer arrived minus (the moment its push was sent + its delay).
// health:     N GET /health: the same client and server with no queue behind the route, the
//             floor under every figure above.
//
// Kept whole over ~400 lines: its four workloads share one connection, sampling and thread loop,
// and each is a screen long.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "report.h"
#include "wire/answer.h"
#include "wire/http_client.h"
#include "wire/jobs.h"

namespace {

using Steady = std::chrono::steady_clock;
using delayq::bench::num;
using delayq::bench::seconds;
using delayq::bench::summary_json;
using Wall = std::chrono::system_clock;

struct Args {
  std::string workload = "push";
  std::string host = "127.0.0.1";
  int port = 0;
  size_t jobs = 20000;
  size_t connections = 1;
  size_t producers = 0;      // W1: push connections (0: as many as --connections)
  double delay_s = 0;        // push: every job's delay
  double delay_max_s = 5;    // W1: delays uniform in [0, this]
  size_t body_bytes = 64;
  double time_limit_s = 0;   // 0: W1 delay_max + 60 s, others 600 s
  std::string token;         // bearer token, if the daemon wants one
  std::string peer = "delayqd";
  std::vector<std::pair<std::string, std::string>> params;  // --param k=v, echoed in params
  uint64_t seed = 1;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "delayq-http-bench: " << why << "\n"
            << "usage: delayq-http-bench --port P [--host H]\n"
               "         [--workload push|pop-finish|W1|health]\n"
               "         [--jobs N] [--connections C] [--producers P] [--delay S]\n"
               "         [--delay-max S] [--body-bytes B] [--time-limit S] [--token T]\n"
               "         [--peer NAME] [--param KEY=VALUE]... [--seed N]\n";
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage("flag " + k + " needs a value");
    const std::string v = argv[++i];
    auto count = [&] {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end) usage(k + " wants a whole number, not '" + v + "'");
      return static_cast<size_t>(n);
    };
    auto real = [&] {
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || d < 0) usage(k + " wants a number >= 0, not '" + v + "'");
      return d;
    };
    if (k == "--workload") a.workload = v;
    else if (k == "--host") a.host = v;
    else if (k == "--port") a.port = static_cast<int>(count());
    else if (k == "--jobs") a.jobs = count();
    else if (k == "--connections") a.connections = count();
    else if (k == "--producers") a.producers = count();
    else if (k == "--delay") a.delay_s = real();
    else if (k == "--delay-max") a.delay_max_s = real();
    else if (k == "--body-bytes") a.body_bytes = count();
    else if (k == "--time-limit") a.time_limit_s = real();
    else if (k == "--token") a.token = v;
    else if (k == "--peer") a.peer = v;
    else if (k == "--seed") a.seed = count();
    else if (k == "--param") {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) usage("--param wants KEY=VALUE");
      a.params.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else {
      usage("unknown flag " + k);
    }
  }
  if (a.port <= 0 || a.port > 65535) usage("--port is required");
  if (a.jobs == 0 || a.connections == 0) usage("--jobs and --connections must be > 0");
  if (a.workload != "push" && a.workload != "pop-finish" && a.workload != "W1" &&
      a.workload != "health")
    usage("unknown workload " + a.workload);
  if (a.producers == 0) a.producers = a.connections;
  if (a.time_limit_s == 0) a.time_limit_s = a.workload == "W1" ? a.delay_max_s + 60 : 600;
  return a;
}

// One keep-alive connection: the wire's client (the one the CLI and the tests use), which
// reconnects when the server closed an idle connection. The thread that owns it is its only
// user.
class Connection {
 public:
  struct Answer {
    int status = 0;  // 0: the connection failed
    std::string body;
  };

  explicit Connection(const Args& a)
      : client_({.host = a.host, .port = static_cast<uint16_t>(a.port)},
                {.token = a.token,
                 .timeout = std::chrono::seconds(static_cast<int64_t>(a.time_limit_s) + 60),
                 .user_agent = "delayq-http-bench"}) {}

  Answer call(std::string_view method, std::string_view path, std::string_view body) {
    auto r = client_.request(method, path, body);
    if (!r) return {};
    return {r->status, std::move(r->body)};
  }

 private:
  delayq::wire::HttpClient client_;
};

double ms_since(Steady::time_point t) {
  return std::chrono::duration<double, std::milli>(Steady::now() - t).count();
}


// Latencies collected per thread without locking, merged at the end.
struct Samples {
  std::mutex mu;
  std::vector<double> all;
  void merge(std::vector<double>& mine) {
    std::lock_guard lock(mu);
    all.insert(all.end(), mine.begin(), mine.end());
  }
};

// A run's identity: a topic and id prefix no other run on the same daemon uses, so runs never
// see each other's jobs even when the script keeps one daemon (or one Redis) for several.
std::string run_tag(const Args& a) {
  return "hb" + std::to_string(::getpid()) + "-" +
         std::to_string(Wall::now().time_since_epoch().count() % 1000000007) + "-" +
         std::to_string(a.seed);
}

std::string push_body(const std::string& topic, const std::string& id, int64_t delay_ms,
                      const std::string& body) {
  // ttr of an hour: nothing is redelivered during a run, so received counts each job once.
  return "{\"topic\":\"" + topic + "\",\"id\":\"" + id + "\",\"delay_ms\":" +
         std::to_string(delay_ms) + ",\"ttr\":3600,\"body\":\"" + body + "\"}";
}

bool ok(const Connection::Answer& r) {
  return r.status == 200 && r.body.find("\"code\":0") != std::string::npos;
}

// Runs fn(thread_index) on `threads` threads, all released at once; returns the wall time from
// the release to the last one's end.
template <typename Fn>
double run_threads(size_t threads, Fn fn) {
  std::atomic<size_t> ready{0};
  std::atomic<bool> go{false};
  Steady::time_point start;
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ++ready;
      while (!go.load()) std::this_thread::yield();
      fn(t);
    });
  while (ready.load() < threads) std::this_thread::yield();
  start = Steady::now();
  go = true;
  for (auto& th : pool) th.join();
  return seconds(Steady::now() - start);
}

void print_params(const Args& a, const std::string& extra) {
  std::cout << ",\"params\":{\"connections\":" << a.connections << ",\"body_bytes\":"
            << a.body_bytes << extra;
  for (const auto& [k, v] : a.params) std::cout << ",\"" << k << "\":\"" << v << "\"";
  std::cout << "}}" << std::endl;
}

// Pushes jobs [0, n) with ids prefix+i over `conns` connections (job i on connection i % conns).
// on_send(i) runs just before job i is sent. Returns the errors; lat collects latencies.
template <typename OnSend = void (*)(size_t)>
size_t push_all(const Args& a, size_t conns, const std::string& topic, const std::string& prefix,
                const std::vector<int64_t>& delay_ms, Samples& lat, double& secs,
                OnSend on_send = [](size_t) {}) {
  const std::string body(a.body_bytes, 'x');
  std::atomic<size_t> errors{0};
  secs = run_threads(conns, [&](size_t t) {
    Connection c(a);
    std::vector<double> mine;
    mine.reserve(delay_ms.size() / conns + 1);
    for (size_t i = t; i < delay_ms.size(); i += conns) {
      const std::string req = push_body(topic, prefix + std::to_string(i), delay_ms[i], body);
      on_send(i);
      const Steady::time_point t0 = Steady::now();
      const Connection::Answer r = c.call("POST", "/push", req);
      mine.push_back(ms_since(t0));
      if (!ok(r)) {
        if (errors.fetch_add(1) < 3)
          std::cerr << "push failed: " << r.status << " " << r.body << "\n";
        if (r.status == 0) return;  // the daemon is gone
      }
    }
    lat.merge(mine);
  });
  return errors.load();
}

int run_push(const Args& a) {
  const std::string tag = run_tag(a);
  const std::vector<int64_t> delay(a.jobs, std::llround(a.delay_s * 1000));
  Samples lat;
  double secs = 0;
  const size_t errors = push_all(a, a.connections, "t" + tag, tag + "-", delay, lat, secs);
  std::cout << "{\"peer\":\"" << a.peer << "\",\"workload\":\"http-push\",\"jobs\":" << a.jobs
            << ",\"push_per_s\":" << num(a.jobs / secs) << ",\"seconds\":" << num(secs)
            << ",\"latency_ms\":" << summary_json(lat.all) << ",\"errors\":" << errors;
  print_params(a, ",\"delay_s\":" + num(a.delay_s));
  return errors ? 1 : 0;
}

// The token and id of a /pop answer; false when it carries no job (data null).
bool parse_delivery(const std::string& body, std::string& token, std::string& id) {
  auto answer = delayq::wire::read_answer(body);
  if (!answer) return false;
  auto d = delayq::wire::read_delivery(answer->data);
  if (!d) return false;
  token = d->token.to_string();
  id = std::move(d->id);
  return true;
}

// C connections each doing /pop then /finish until `want` jobs are finished or the time limit
// passes. on_delivery(id) is called at the moment a pop answer arrived (for lateness).
struct PopResult {
  size_t finished = 0, errors = 0;
  Steady::time_point last_finish;
};
template <typename OnDelivery>
PopResult pop_finish_loop(const Args& a, size_t conns, const std::string& topic, size_t want,
                          Samples& pop_lat, Samples& fin_lat, OnDelivery on_delivery) {
  std::atomic<size_t> finished{0}, errors{0};
  std::atomic<int64_t> last_ns{0};
  const Steady::time_point limit =
      Steady::now() + std::chrono::duration_cast<Steady::duration>(
                          std::chrono::duration<double>(a.time_limit_s));
  // A short long-poll: once the last job is finished, the connections still waiting notice
  // within a second.
  const std::string pop_req = "{\"topic\":\"" + topic + "\",\"timeout\":1}";
  run_threads(conns, [&](size_t) {
    Connection c(a);
    std::vector<double> pops, fins;
    std::string token, id;
    while (finished.load() < want && Steady::now() < limit) {
      const Steady::time_point t0 = Steady::now();
      const Connection::Answer p = c.call("POST", "/pop", pop_req);
      const double pop_ms = ms_since(t0);
      if (!ok(p)) {
        if (errors.fetch_add(1) < 3)
          std::cerr << "pop failed: " << p.status << " " << p.body << "\n";
        if (p.status == 0) break;
        continue;
      }
      if (!parse_delivery(p.body, token, id)) continue;  // nothing came within the timeout
      on_delivery(id);
      pops.push_back(pop_ms);
      const Steady::time_point t1 = Steady::now();
      const Connection::Answer f = c.call("POST", "/finish", "{\"token\":\"" + token + "\"}");
      fins.push_back(ms_since(t1));
      if (!ok(f)) {
        if (errors.fetch_add(1) < 3)
          std::cerr << "finish failed: " << f.status << " " << f.body << "\n";
        if (f.status == 0) break;
        continue;
      }
      ++finished;
      last_ns.store(Steady::now().time_since_epoch().count());
    }
    pop_lat.merge(pops);
    fin_lat.merge(fins);
  });
  return {finished.load(), errors.load(), Steady::time_point(Steady::duration(last_ns.load()))};
}

int run_pop_finish(const Args& a) {
  const std::string tag = run_tag(a);
  const std::string topic = "t" + tag;
  Samples push_lat;
  double push_s = 0;
  const size_t push_errors =
      push_all(a, a.connections, topic, tag + "-", std::vector<int64_t>(a.jobs, 0), push_lat,
               push_s);
  if (push_errors) {
    std::cerr << "preload failed: " << push_errors << " pushes refused\n";
    return 1;
  }
  Samples pop_lat, fin_lat;
  const Steady::time_point start = Steady::now();
  const PopResult r =
      pop_finish_loop(a, a.connections, topic, a.jobs, pop_lat, fin_lat, [](const std::string&) {});
  const double secs = r.finished ? seconds(r.last_finish - start) : 0;
  std::cout << "{\"peer\":\"" << a.peer << "\",\"workload\":\"http-pop-finish\",\"jobs\":"
            << a.jobs << ",\"jobs_per_s\":" << num(secs > 0 ? r.finished / secs : 0)
            << ",\"seconds\":" << num(secs) << ",\"pop_latency_ms\":" << summary_json(pop_lat.all)
            << ",\"finish_latency_ms\":" << summary_json(fin_lat.all) << ",\"received\":" << r.finished
            << ",\"errors\":" << r.errors << ",\"preload_push_per_s\":" << num(a.jobs / push_s);
  print_params(a, "");
  return r.finished == a.jobs && r.errors == 0 ? 0 : 1;
}

int run_w1(const Args& a) {
  const std::string tag = run_tag(a);
  const std::string topic = "t" + tag;
  const std::string prefix = tag + "-";
  std::mt19937_64 rng(a.seed);
  std::uniform_int_distribution<int64_t> pick(0, std::llround(a.delay_max_s * 1000));
  std::vector<int64_t> delay(a.jobs);
  for (auto& d : delay) d = pick(rng);
  // Atomic: a pusher writes a job's send time and a consumer reads it; the daemon orders the two
  // (the pop comes after the push was received), but not in a way the C++ memory model sees.
  std::vector<std::atomic<int64_t>> sent_us(a.jobs);
  std::vector<double> lateness(a.jobs, 0);
  std::vector<std::atomic<uint8_t>> got(a.jobs);
  std::atomic<size_t> duplicates{0}, strays{0};

  Samples push_lat, pop_lat, fin_lat;
  double push_s = 0;
  const Steady::time_point start = Steady::now();
  // The consumers run from the start, as in W1: jobs with small delays come due while the
  // pushes go on.
  PopResult r;
  std::thread consumers([&] {
    r = pop_finish_loop(a, a.connections, topic, a.jobs, pop_lat, fin_lat,
                        [&](const std::string& id) {
                          const int64_t now_us = std::chrono::duration_cast<
                              std::chrono::microseconds>(Wall::now().time_since_epoch()).count();
                          if (id.compare(0, prefix.size(), prefix) != 0) return void(++strays);
                          const size_t i = std::strtoul(id.c_str() + prefix.size(), nullptr, 10);
                          if (i >= a.jobs) return void(++strays);
                          lateness[i] = (now_us - (sent_us[i].load() + delay[i] * 1000)) / 1000.0;
                          if (got[i].exchange(1)) ++duplicates;
                        });
  });
  const size_t push_errors = push_all(a, a.producers, topic, prefix, delay, push_lat, push_s,
                                      [&](size_t i) {
                                        sent_us[i] = std::chrono::duration_cast<
                                            std::chrono::microseconds>(
                                            Wall::now().time_since_epoch()).count();
                                      });
  consumers.join();
  const double e2e = r.finished ? seconds(r.last_finish - start) : 0;
  std::vector<double> lat;
  for (size_t i = 0; i < a.jobs; ++i)
    if (got[i].load()) lat.push_back(lateness[i]);
  std::cout << "{\"peer\":\"" << a.peer << "\",\"workload\":\"W1\",\"jobs\":" << a.jobs
            << ",\"push_per_s\":" << num(push_s > 0 ? a.jobs / push_s : 0)
            << ",\"end_to_end_s\":" << num(e2e) << ",\"lateness_ms\":" << summary_json(lat)
            << ",\"received\":" << lat.size() << ",\"duplicates\":" << duplicates.load()
            << ",\"errors\":" << r.errors + push_errors + strays.load()
            << ",\"push_latency_ms\":" << summary_json(push_lat.all)
            << ",\"pop_latency_ms\":" << summary_json(pop_lat.all)
            << ",\"finish_latency_ms\":" << summary_json(fin_lat.all);
  print_params(a, ",\"delay_max_s\":" + num(a.delay_max_s) + ",\"producers\":" +
                      std::to_string(a.producers) + ",\"consumers\":" +
                      std::to_string(a.connections));
  return lat.size() == a.jobs && duplicates.load() == 0 && push_errors == 0 &&
                 strays.load() == 0 && r.errors == 0
             ? 0
             : 1;
}

int run_health(const Args& a) {
  Samples lat;
  std::atomic<size_t> errors{0};
  const double secs = run_threads(a.connections, [&](size_t t) {
    Connection c(a);
    std::vector<double> mine;
    for (size_t i = t; i < a.jobs; i += a.connections) {
      const Steady::time_point t0 = Steady::now();
      const Connection::Answer r = c.call("GET", "/health", "");
      mine.push_back(ms_since(t0));
      if (!ok(r) && errors.fetch_add(1) == 0)
        std::cerr << "health failed: " << r.status << " " << r.body << "\n";
      if (r.status == 0) break;
    }
    lat.merge(mine);
  });
  std::cout << "{\"peer\":\"" << a.peer << "\",\"workload\":\"http-health\",\"requests\":"
            << a.jobs << ",\"requests_per_s\":" << num(a.jobs / secs) << ",\"seconds\":"
            << num(secs) << ",\"latency_ms\":" << summary_json(lat.all) << ",\"errors\":"
            << errors.load();
  print_params(a, "");
  return errors.load() ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  if (a.workload == "push") return run_push(a);
  if (a.workload == "pop-finish") return run_pop_finish(a);
  if (a.workload == "W1") return run_w1(a);
  return run_health(a);
}
