// TimingMetrics (timing_metrics.h).
#include "delayqd/timing_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/timing.h"
#include "delayqd/prometheus.h"

namespace delayq::http {

namespace {

constexpr const char* kLateness = "delayq_lateness_seconds";

void histogram(std::string& out, const std::string& labels, const Lateness& l) {
  const std::string bucket = std::string(kLateness) + "_bucket";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < Lateness::kBounds.size(); ++i) {
    cumulative += l.buckets[i];
    const double le = std::chrono::duration<double>(Lateness::kBounds[i]).count();
    prom::sample(out, bucket, fmt::format("{},le=\"{}\"", labels, prom::number(le)), cumulative);
  }
  prom::sample(out, bucket, labels + ",le=\"+Inf\"", l.count);
  prom::sample(out, std::string(kLateness) + "_sum", labels, prom::number(l.sum_seconds));
  prom::sample(out, std::string(kLateness) + "_count", labels, l.count);
}

void windows(std::string& out, const std::string& labels, const DueWindows& w) {
  const std::pair<const char*, uint64_t> windows[] = {{"next_minute", w.next_minute},
                                                      {"next_hour", w.next_hour},
                                                      {"next_day", w.next_day},
                                                      {"next_week", w.next_week},
                                                      {"beyond", w.beyond}};
  for (const auto& [due, n] : windows)
    prom::sample(out, "delayq_delayed_jobs_by_due", fmt::format("{},due=\"{}\"", labels, due), n);
}

// The series of one topic (or the overflow's), for each of the three metrics in turn.
struct Row {
  std::string labels;
  TopicTiming timing;
};

}  // namespace

std::set<std::string> TimingMetrics::active(const Stats& st) {
  std::lock_guard lock(mu_);
  std::set<std::string> out;
  for (const auto& [name, t] : st.timing) {
    const auto s = seen_.find(name);
    const uint64_t before = s == seen_.end() ? 0 : s->second.first.count + s->second.retry.count;
    if (t.first.count + t.retry.count > before) out.insert(name);
  }
  return out;
}

size_t TimingMetrics::topics_remembered() {
  std::lock_guard lock(mu_);
  return seen_.size();
}

void TimingMetrics::grow_overflow(Lateness& seen, const Lateness& now, Lateness& overflow) {
  // Counters only grow; a stats() snapshot older than the last one seen adds nothing.
  const auto more = [](uint64_t& last, uint64_t cur, uint64_t& into) {
    if (cur > last) into += cur - last;
    last = std::max(last, cur);
  };
  for (size_t i = 0; i < seen.buckets.size(); ++i)
    more(seen.buckets[i], now.buckets[i], overflow.buckets[i]);
  more(seen.count, now.count, overflow.count);
  more(seen.clamped, now.clamped, overflow.clamped);
  if (now.sum_seconds > seen.sum_seconds)
    overflow.sum_seconds += now.sum_seconds - seen.sum_seconds;
  seen.sum_seconds = std::max(seen.sum_seconds, now.sum_seconds);
}

void TimingMetrics::render(std::string& out, const Stats& st,
                           const std::vector<std::string>& named) {
  std::vector<Row> rows;
  std::lock_guard lock(mu_);
  const std::set<std::string_view> has_series(named.begin(), named.end());
  TopicTiming overflow;
  uint64_t clamped = 0;
  for (const auto& [name, t] : st.timing) {
    clamped += t.first.clamped + t.retry.clamped;
    Seen& seen = seen_[name];
    if (has_series.contains(name)) {
      seen = Seen{t.first, t.retry};
      continue;
    }
    grow_overflow(seen.first, t.first, overflow_.first);
    grow_overflow(seen.retry, t.retry, overflow_.retry);
    timing::add(overflow.due, t.due);
    overflow.oldest_ready = std::max(overflow.oldest_ready, t.oldest_ready);
  }
  // A topic the engine no longer keeps (docs/semantics.md, "Topics that are gone") is dropped:
  // otherwise every topic name ever scraped would stay here for good. Its growth is in the
  // overflow already; if it comes back it starts with no lateness, and is counted from 0.
  std::erase_if(seen_, [&](const auto& kv) { return !st.timing.contains(kv.first); });
  for (const std::string& name : named) {
    const auto t = st.timing.find(name);
    rows.push_back(Row{"topic=\"" + prom::label(name) + "\"",
                       t != st.timing.end() ? t->second : TopicTiming{}});
  }
  overflow.first = overflow_.first;
  overflow.retry = overflow_.retry;
  rows.push_back(Row{"overflow=\"true\"", overflow});

  prom::help(out, kLateness, "histogram",
             "How long after its due time each delivery was handed out, by topic, first attempts "
             "and retries apart (since the queue was opened).");
  for (const Row& r : rows) {
    histogram(out, r.labels + ",attempt=\"first\"", r.timing.first);
    histogram(out, r.labels + ",attempt=\"retry\"", r.timing.retry);
  }
  prom::help(out, "delayq_delayed_jobs_by_due", "gauge",
             "Delayed jobs by the window they fall due in (next minute, hour, day, week, beyond).");
  for (const Row& r : rows) windows(out, r.labels, r.timing.due);
  prom::help(out, "delayq_oldest_ready_age_seconds", "gauge",
             "How long the job at the front of the topic's ready line has been due (0: none "
             "ready).");
  for (const Row& r : rows)
    prom::sample(out, "delayq_oldest_ready_age_seconds", r.labels,
                 prom::number(std::chrono::duration<double>(r.timing.oldest_ready).count()));
  prom::help(out, "delayq_lateness_clamped_total", "counter",
             "Deliveries handed out while the clock read earlier than their due time (it stepped "
             "back), counted as on time.");
  prom::sample(out, "delayq_lateness_clamped_total", "", clamped);
}

}  // namespace delayq::http
