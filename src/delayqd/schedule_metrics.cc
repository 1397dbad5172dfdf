// /metrics's schedule series (see schedule_metrics.h).
#include "delayqd/schedule_metrics.h"

#include <array>
#include <cstdint>
#include <vector>

#include "delayqd/prometheus.h"

namespace delayq::http {

namespace {

constexpr size_t kPage = 1000;  // the largest page list_schedules() takes

struct Outcomes {
  std::array<uint64_t, 3> n{};  // fired, skipped_overlap, skipped_catch_up
};
constexpr const char* kOutcomes[] = {"fired", "skipped_overlap", "skipped_catch_up"};

}  // namespace

void schedule_metrics(std::string& out, Queue& queue, size_t max_named) {
  std::vector<std::pair<std::string, Outcomes>> named;
  Outcomes all;
  uint64_t count = 0;
  std::string cursor;
  do {
    auto page = queue.list_schedules(kPage, cursor);
    if (!page) {
      if (count == 0) return;  // no schedules on this backend (or none readable): no series
      break;
    }
    for (const ScheduleInfo& s : page->schedules) {
      ++count;
      const Outcomes o{{s.fired, s.skipped_overlap, s.skipped_catch_up}};
      for (size_t i = 0; i < o.n.size(); ++i) all.n[i] += o.n[i];
      if (named.size() < max_named) named.emplace_back(s.spec.id, o);
    }
    cursor = page->cursor;
  } while (!cursor.empty());
  prom::gauge(out, "delayq_schedules", "Schedules the queue holds, paused or not.",
              static_cast<int64_t>(count));
  prom::help(out, "delayq_schedule_occurrences_total", "counter",
             "Occurrences of a schedule since it was created, by outcome: fired (a job pushed), "
             "skipped_overlap (its previous job still lived), skipped_catch_up (passed over by "
             "the catch-up policy). The first schedules in id order, up to --metrics-topics.");
  for (const auto& [id, o] : named)
    for (size_t i = 0; i < o.n.size(); ++i)
      prom::sample(out, "delayq_schedule_occurrences_total",
                   "schedule=\"" + prom::label(id) + "\",outcome=\"" + kOutcomes[i] + "\"",
                   o.n[i]);
  prom::help(out, "delayq_schedules_occurrences_total", "counter",
             "The occurrences of every schedule the queue holds, by outcome (a removed "
             "schedule's no longer count).");
  for (size_t i = 0; i < all.n.size(); ++i)
    prom::sample(out, "delayq_schedules_occurrences_total",
                 std::string("outcome=\"") + kOutcomes[i] + "\"", all.n[i]);
}

}  // namespace delayq::http
