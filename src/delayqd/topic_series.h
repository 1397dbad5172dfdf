// Which topics get their own delayq_jobs{topic,state} series on /metrics.
//
// A topic's series must not vanish when the topic empties: Prometheus alerts on absent series
// (and rate() over gaps) misfire. So a topic, once seen with jobs, keeps its series, reading 0,
// for as long as the daemon runs. What bounds the number of series (Prometheus cardinality) is
// a cap on the topics named: past `max_topics`, a new topic takes the place of the one that has
// been empty the longest, and when every named topic still has jobs, the new topic's jobs are
// counted in the overflow series (delayq_jobs{overflow="true",state=...}, always present) instead.
// A paused topic counts as one with jobs, so that its delayq_topic_paused series stays.
// A restarted daemon knows the topics that have jobs; the empty ones come back with their next
// job. A topic whose jobs come and go between scrapes holds none when it is scraped: it counts as
// holding jobs in a scrape where the caller names it active (delayqd: handed out deliveries since
// the last scrape, timing_metrics.h), so that a busy topic gets a name like a backlogged one.
// docs/operations.md ("Metrics to watch") says the same for users.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "delayq/job.h"

namespace delayq::http {

class TopicSeries {
 public:
  explicit TopicSeries(size_t max_topics) : max_topics_(max_topics) {}

  struct View {
    // The named topics in name order, with their counts (0 for a topic that emptied).
    std::vector<std::pair<std::string, TopicStats>> named;
    // The jobs of the topics past the cap, summed, and how many such topics there are.
    TopicStats overflow;
    size_t overflow_topics = 0;
  };

  // The series for one scrape, given the topics that hold jobs now and those active since the
  // last scrape. Thread-safe.
  View update(const std::map<std::string, TopicStats>& live,
              const std::set<std::string>& active = {});

 private:
  size_t max_topics_;
  std::mutex mu_;
  uint64_t scrape_ = 0;  // counts update() calls: the clock of "empty the longest"
  // Named topic -> the last scrape it held jobs in.
  std::map<std::string, uint64_t, std::less<>> named_;
};

}  // namespace delayq::http
