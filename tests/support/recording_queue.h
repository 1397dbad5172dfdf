// A Queue that records the flow-control and browsing calls (and pushes) it gets and answers them
// with fixed values, forwarding the rest to an in-memory engine: for the daemon's and the HTTP
// client's tests of those calls, whatever the engine implements yet.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "forwarding_queue.h"

namespace delayq::testing {

// Records the flow calls and the push, and answers them with fixed values.
class RecordingQueue : public ForwardingQueue {
 public:
  struct ListCall {
    std::string topic;
    JobState state;
    size_t limit;
    std::string cursor;
  };
  std::vector<std::string> calls;  // every call's name, in order
  std::string topic;
  TopicLimits limits;
  std::vector<ListCall> lists;
  JobSpec pushed;
  // What list_jobs answers: `pages` in turn (the last one again once they run out), cut to the
  // limit asked.
  std::vector<JobPage> pages;
  Status refuse;  // answered by the three flow calls when not ok
  size_t refuse_after = 0;  // list_jobs answers `refuse` only after this many of its calls
  std::map<std::string, TopicFlow> flow;  // what stats() shows as Stats::flow

  Status set_topic_limits(std::string_view t, const TopicLimits& l) override {
    topic = t;
    limits = l;
    return refuse;
  }
  Status clear_topic_limits(std::string_view t) override {
    topic = t;
    return refuse;
  }
  Result<JobPage> list_jobs(std::string_view t, JobState s, size_t limit,
                            std::string_view cursor) override {
    lists.push_back({std::string(t), s, limit, std::string(cursor)});
    if (!refuse.ok() && lists.size() > refuse_after) return refuse;
    if (pages.empty()) return JobPage{};
    JobPage page = pages[std::min(lists.size() - 1, pages.size() - 1)];
    if (page.jobs.size() > limit) page.jobs.resize(limit);  // as a queue would
    return page;
  }
  Stats stats() override {
    Stats st = ForwardingQueue::stats();
    st.flow = flow;
    return st;
  }
  Result<std::string> push(JobSpec spec) override {
    pushed = spec;
    return ForwardingQueue::push(std::move(spec));
  }

 protected:
  void before(std::string_view call) override { calls.emplace_back(call); }
};

}  // namespace delayq::testing
