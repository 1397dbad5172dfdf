// The `disk-churn` workload (capacity.h): does the disk tier's footprint stay flat while its jobs
// turn over? A store with the disk tier on a ManualClock holds N jobs due uniformly over the
// next 10 days (beyond the horizon: on disk). Each round moves the clock 12 hours (a twentieth
// of the window), takes and acks every job that fell due (each one refilled from disk first),
// and pushes as many new ones, due over the 10 days from then: N stay pending. (A new job may
// fall due in any later round, so once the set has mixed a round takes about a tenth of it, not
// a twentieth; `turnovers` is what was pushed after the fill over N.) After each round the store
// directory's size is taken:
// disk bytes per pending job, which the tombstones of refills and acks would make grow if
// compaction did not clear them. RocksDB works in real time meanwhile (flushes, compactions);
// only the queue's clock is manual, so that 10 days pass in a minute.
//
// Then the clock passes the last due time, every job is taken: none_lost says that every job
// pushed was acked exactly once (acks counted against pushes), none handed out early.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "capacity.h"
#include "delayq/clock.h"
#include "report.h"

namespace delayq::bench {

namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

constexpr Duration kWindow = std::chrono::hours(24 * 10);
constexpr int kRoundsPerWindow = 20;

// Takes and acks every ready job of "far" (ack_batch of up to 1000). Counts them in `taken`;
// false if a delivery came early or an ack failed.
bool drain(Engine& q, const ManualClock& clock, uint64_t& taken) {
  std::vector<Token> tokens;
  auto flush = [&] {
    for (const Status& s : q.ack_batch(tokens))
      if (!s.ok()) return std::cerr << "disk-churn: ack: " << s.to_string() << "\n", false;
    tokens.clear();
    return true;
  };
  for (Result<Delivery> d = q.reserve("far", 0ms); d; d = q.reserve("far", 0ms)) {
    if (d->due > clock.now()) return std::cerr << "disk-churn: a job came early\n", false;
    tokens.push_back(d->token);
    ++taken;
    if (tokens.size() == 1000 && !flush()) return false;
  }
  return flush();
}

}  // namespace

int run_disk_churn(const CapacityArgs& a, size_t rounds) {
  if (a.horizon_s <= 0) return std::cerr << "disk-churn: needs the disk tier (--horizon-s > 0)\n", 1;
  std::string dir = a.dir;
  const bool owned = dir.empty();
  if (owned) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "delayq-churn-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
  }
  ManualClock clock(SystemClock::instance().now());
  StoreOptions o = store_options(a);
  o.dir = dir;
  o.engine.clock = &clock;
  const Duration horizon = *o.horizon;
  auto q = open_store(o);
  if (!q) return std::cerr << "disk-churn: " << q.status().to_string() << "\n", 1;

  std::mt19937_64 rng(a.seed);
  // Due beyond the horizon: every job starts on disk.
  const Duration from = horizon + 1min;
  const Steady::time_point t0 = Steady::now();
  if (!push_far(**q, a.jobs, rng, from, kWindow, a.batch)) return 1;
  const double fill_s = seconds(Steady::now() - t0);
  uint64_t pushed = a.jobs, taken = 0;
  const double per_job_after_fill = static_cast<double>(disk_bytes(dir)) / a.jobs;
  std::vector<double> per_job;  // after each round
  const Steady::time_point r0 = Steady::now();
  for (size_t r = 0; r < rounds; ++r) {
    clock.advance(kWindow / kRoundsPerWindow);
    const uint64_t before = taken;
    if (!drain(**q, clock, taken)) return 1;
    if (!push_far(**q, taken - before, rng, from, kWindow, a.batch)) return 1;
    pushed += taken - before;
    per_job.push_back(static_cast<double>(disk_bytes(dir)) / a.jobs);
  }
  const double rounds_s = seconds(Steady::now() - r0);
  clock.advance(kWindow + from);
  if (!drain(**q, clock, taken)) return 1;
  (*q)->close();
  q->reset();
  if (owned) std::filesystem::remove_all(dir);

  const bool none_lost = taken == pushed;
  std::cout << "{\"peer\":\"delayq-rocksdb\",\"workload\":\"disk-churn\",\"jobs\":" << a.jobs
            << ",\"rounds\":" << rounds << ",\"turnovers\":"
            << num(static_cast<double>(pushed - a.jobs) / a.jobs)
            << ",\"fill_push_per_s\":" << num(a.jobs / fill_s)
            << ",\"jobs_turned_over_per_s\":" << num((pushed - a.jobs) / rounds_s)
            << ",\"disk_bytes_per_job\":{\"after_fill\":" << num(per_job_after_fill);
  if (!per_job.empty())
    std::cout << ",\"min\":" << num(*std::min_element(per_job.begin(), per_job.end()))
              << ",\"max\":" << num(*std::max_element(per_job.begin(), per_job.end()))
              << ",\"last\":" << num(per_job.back());
  std::cout << ",\"each_round\":[";
  for (size_t i = 0; i < per_job.size(); ++i) std::cout << (i ? "," : "") << num(per_job[i]);
  std::cout << "]},\"pushed\":" << pushed << ",\"taken\":" << taken
            << ",\"none_lost\":" << (none_lost ? "true" : "false") << ",\"params\":{"
            << a.sync_params.substr(1) << ",\"batch\":" << a.batch << ",\"shards\":" << a.shards
            << ",\"horizon_s\":" << num(a.horizon_s)
            << ",\"window_days\":10,\"round_hours\":12,\"body_bytes\":64}}" << std::endl;
  return none_lost ? 0 : 1;
}

}  // namespace delayq::bench
