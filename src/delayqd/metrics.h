// delayqd's /metrics, in the Prometheus text format (docs/operations.md, "Metrics to watch"): the
// queue's totals and its jobs per topic and state (topic_series.h bounds the topics), their
// timing (timing_metrics.h: lateness, what fires when, the oldest ready job), the limited
// topics' flow (flow_metrics.h), the daemon's
// gauges, and per route the requests by status and a histogram of the time to answer.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "delayq/job.h"
#include "delayqd/api.h"
#include "delayqd/timing_metrics.h"
#include "delayqd/topic_series.h"

namespace delayq::http {

class Metrics {
 public:
  // `max_topics`: the topics with their own delayq_jobs series (delayqd --metrics-topics).
  explicit Metrics(size_t max_topics) : topics_(max_topics), max_topics_(max_topics) {}

  // The cap of the series named per topic (and per schedule, schedule_metrics.h).
  size_t max_topics() const { return max_topics_; }

  // Counts one answer of `route` with `status`, given from `start` until now. Thread-safe.
  void observe(Route route, int status, std::chrono::steady_clock::time_point start);

  // The daemon's own gauges, read when the text is made.
  struct Gauges {
    size_t waiting_pops = 0;
    int64_t connections = 0;
  };
  // The whole text for one scrape, from the queue's `stats`. Thread-safe.
  std::string text(const Stats& stats, Gauges gauges);

  // The upper bounds of the latency buckets, in seconds.
  static constexpr double kBuckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                        0.5,    1,     2.5,    5,     10,   30,    60,   180};

 private:
  struct Histogram {
    std::array<uint64_t, std::size(kBuckets)> buckets{};  // non-cumulative; summed when rendered
    uint64_t count = 0;
    double sum = 0;
  };
  void queue_part(std::string& out, const Stats& stats);
  void requests_part(std::string& out);

  TopicSeries topics_;
  size_t max_topics_;  // also the cap of the flow series' topics (flow_metrics.h)
  TimingMetrics timing_;
  std::mutex mu_;
  std::map<std::pair<Route, int>, uint64_t> requests_;
  std::array<Histogram, static_cast<size_t>(Route::count_)> latency_;
};

}  // namespace delayq::http
