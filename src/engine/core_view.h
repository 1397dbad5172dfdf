// What stats() shows of a core's topics, kept apart from the core so that it can be read without
// the shard's lock. The core notes which topics changed (Core::publish); under the shard's lock
// stats() copies only those into the view, then, with the lock released, adds every topic of
// the view into its answer. So a push waits for work in proportion to the topics that changed
// since the last stats() (and their due bins), not to all the topics the core holds.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "delayq/job.h"
#include "engine/due_bins.h"

namespace delayq::engine {

// One topic as stats() shows it, as of its last change.
struct TopicSummary {
  TopicStats counts;
  DueBins due;
  Lateness first, retry;
  std::optional<TimePoint> ready_front;  // the earliest due time among its ready lines' heads
};

// Adds topic `name` into `s` as of `now`: its counts if it holds a job or is paused, its timing if
// it holds a job or had a delivery (what stats() shows of a topic, docs/semantics.md).
void add_topic(Stats& s, const std::string& name, const TopicStats& counts, const DueBins& due,
               const Lateness& first, const Lateness& retry,
               std::optional<TimePoint> ready_front, TimePoint now);

class TopicView {
 public:
  // Held around Core::publish() and add_to(); taken before the shard's lock, never after.
  std::unique_lock<std::mutex> lock() { return std::unique_lock(mu_); }
  // Adds every topic into `s` as of `now` (the `now` of the publish() before).
  void add_to(Stats& s, TimePoint now) const;

 private:
  friend class Core;
  std::mutex mu_;
  // In name order, as stats() lists them: add_to() appends to its maps rather than search them.
  std::map<std::string, TopicSummary, std::less<>> topics_;
};

}  // namespace delayq::engine
