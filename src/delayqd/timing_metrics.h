// delayqd's /metrics for what TopicTiming holds (include/delayq/job.h): the lateness histogram
// delayq_lateness_seconds{topic,attempt}, the delayed jobs by the window they fall due in
// (delayq_delayed_jobs_by_due{topic,due}), the age of the oldest ready job
// (delayq_oldest_ready_age_seconds{topic}) and the deliveries handed out before their due time
// by the clock (delayq_lateness_clamped_total).
//
// The topics named are delayq_jobs's (topic_series.h: at most --metrics-topics); every other
// topic is summed into the overflow series ({overflow="true"}, always present). A histogram is
// made of counters, which must never go down: the overflow's lateness is kept here as the sum of
// what each topic added while it had no series of its own (its growth since the scrape before),
// so that it only grows, whichever topics come and go, and a topic that gets a series starts it
// with its whole history (Prometheus counts a new series' first value as its start).
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "delayq/job.h"

namespace delayq::http {

class TimingMetrics {
 public:
  // The topics that handed out deliveries since the last scrape (TopicSeries's `active`).
  // Thread-safe.
  std::set<std::string> active(const Stats& st);
  // Appends the series, `named` being the topics with series of their own. Thread-safe.
  void render(std::string& out, const Stats& st, const std::vector<std::string>& named);
  // How many topics' lateness is remembered from the last scrape (for tests). Thread-safe.
  size_t topics_remembered();

 private:
  struct Seen {
    Lateness first, retry;
  };
  // Adds what `now` grew by since `seen` to the overflow, and remembers `now`.
  void grow_overflow(Lateness& seen, const Lateness& now, Lateness& overflow);

  std::mutex mu_;
  // Per topic the engine kept at the last scrape, its lateness as of that scrape.
  std::map<std::string, Seen> seen_;
  Seen overflow_;
};

}  // namespace delayq::http
