// /metrics's series of flow control (issue 22), per limited topic (Stats::flow): the limits
// (delayq_topic_rate_limit_per_second, delayq_topic_rate_burst, delayq_topic_max_in_flight),
// the state (delayq_topic_tokens, delayq_topic_in_flight) and the refused hand-outs
// (delayq_topic_throttled_total{reason="rate"|"concurrency"}). A limited topic's series last as
// long as its limits do; at most `max_topics` topics are named (the first in name order, like
// the --metrics-topics cap of delayq_jobs), and delayq_limited_topics counts them all.
#pragma once

#include <cstddef>
#include <string>

#include "delayq/job.h"

namespace delayq::http {

void flow_metrics(std::string& out, const Stats& st, size_t max_topics);

}  // namespace delayq::http
