// /metrics's series of schedules (issue 23): delayq_schedules (how many), and the occurrences
// of each schedule by outcome since it was created,
// delayq_schedule_occurrences_total{schedule="...",outcome="fired"|"skipped_overlap"|
// "skipped_catch_up"}, for at most `max_named` schedules (the first in id order, like the
// --metrics-topics cap of delayq_jobs); delayq_schedules_occurrences_total{outcome} sums them
// over every schedule. A queue without schedules (a backend that does not offer them) adds
// nothing.
#pragma once

#include <cstddef>
#include <string>

#include "delayq/queue.h"

namespace delayq::http {

void schedule_metrics(std::string& out, Queue& queue, size_t max_named);

}  // namespace delayq::http
