// delayqd's /metrics text (see metrics.h).
#include "delayqd/metrics.h"

#include <fmt/format.h>

#include <string_view>
#include <utility>
#include <vector>

#include "delayqd/flow_metrics.h"
#include "delayqd/prometheus.h"
#include "wire/version.h"

namespace delayq::http {

namespace {

using prom::counter;
using prom::gauge;
using prom::label;
using prom::line;
using prom::number;
using prom::sample;

void totals(std::string& out, const Stats& st) {
  counter(out, "delayq_pushed_total", "Jobs pushed (since the store was created).", st.pushed);
  counter(out, "delayq_delivered_total", "Deliveries handed out (reservations).", st.delivered);
  counter(out, "delayq_acked_total", "Deliveries acknowledged (finished).", st.acked);
  counter(out, "delayq_retried_total", "Failed attempts scheduled again.", st.retried);
  counter(out, "delayq_dead_lettered_total", "Jobs moved to the dead letters.", st.dead_lettered);
  counter(out, "delayq_leases_expired_total", "Reservations whose ttr ran out.", st.leases_expired);
  counter(out, "delayq_cancelled_total", "Jobs deleted.", st.cancelled);
  counter(out, "delayq_requeued_total", "Dead letters put back.", st.requeued);
  counter(out, "delayq_purged_total", "Dead letters purged.", st.purged);
  counter(out, "delayq_released_total",
          "Deliveries given back uncounted (their client left before the answer).", st.released);
}

void jobs(std::string& out, const std::string& labels, const TopicStats& t) {
  const std::pair<const char*, uint64_t> states[] = {
      {"delayed", t.delayed}, {"ready", t.ready}, {"reserved", t.reserved}, {"dead", t.dead}};
  for (const auto& [state, n] : states)
    sample(out, "delayq_jobs", fmt::format("{},state=\"{}\"", labels, state), n);
}

// delayq_topic_paused per named topic (the cap of delayq_jobs), and how many topics are paused
// in all, named or not.
void paused(std::string& out, const TopicSeries::View& topics, const Stats& st) {
  line(out,
       "# HELP delayq_topic_paused 1 while the topic is paused (it hands out nothing), else 0.");
  line(out, "# TYPE delayq_topic_paused gauge");
  for (const auto& [name, t] : topics.named)
    sample(out, "delayq_topic_paused", "topic=\"" + label(name) + "\"", t.paused ? 1 : 0);
  int64_t n = 0;
  for (const auto& [name, t] : st.topics) n += t.paused ? 1 : 0;
  gauge(out, "delayq_paused_topics", "Topics paused now (named by delayq_topic_paused or not).", n);
}

}  // namespace

void Metrics::observe(Route route, int status, std::chrono::steady_clock::time_point start) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard lock(mu_);
  ++requests_[{route, status}];
  Histogram& h = latency_[static_cast<size_t>(route)];
  ++h.count;
  h.sum += seconds;
  for (size_t i = 0; i < std::size(kBuckets); ++i) {
    if (seconds <= kBuckets[i]) {
      ++h.buckets[i];
      break;
    }
  }
}

void Metrics::queue_part(std::string& out, const Stats& st) {
  totals(out, st);
  line(out,
       "# HELP delayq_jobs Jobs per topic and state (a topic seen since the start reads 0 when "
       "it empties; topics past --metrics-topics are summed under overflow=\"true\").");
  line(out, "# TYPE delayq_jobs gauge");
  const TopicSeries::View topics = topics_.update(st.topics, timing_.active(st));
  std::vector<std::string> named;
  for (const auto& [name, t] : topics.named) {
    jobs(out, "topic=\"" + label(name) + "\"", t);
    named.push_back(name);
  }
  jobs(out, "overflow=\"true\"", topics.overflow);
  gauge(out, "delayq_overflow_topics",
        "Topics with jobs or deliveries since the last scrape that have no series of their own "
        "(over --metrics-topics).",
        static_cast<int64_t>(topics.overflow_topics));
  paused(out, topics, st);
  flow_metrics(out, st, max_topics_);
  timing_.render(out, st, named);
}

void Metrics::requests_part(std::string& out) {
  std::lock_guard lock(mu_);
  line(out, "# HELP delayqd_http_requests_total HTTP requests answered, by route and status.");
  line(out, "# TYPE delayqd_http_requests_total counter");
  for (const auto& [key, n] : requests_)
    sample(out, "delayqd_http_requests_total",
           fmt::format("route=\"{}\",status=\"{}\"", route_name(key.first), key.second), n);
  line(out,
       "# HELP delayqd_http_request_duration_seconds Time to answer, by route (a pop includes "
       "its wait).");
  line(out, "# TYPE delayqd_http_request_duration_seconds histogram");
  for (size_t r = 0; r < latency_.size(); ++r) {
    const Histogram& h = latency_[r];
    if (h.count == 0) continue;
    const std::string name = "delayqd_http_request_duration_seconds";
    const std::string route = fmt::format("route=\"{}\"", route_name(static_cast<Route>(r)));
    uint64_t cumulative = 0;
    for (size_t i = 0; i < std::size(kBuckets); ++i) {
      cumulative += h.buckets[i];
      sample(out, name + "_bucket", fmt::format("{},le=\"{}\"", route, number(kBuckets[i])),
             cumulative);
    }
    sample(out, name + "_bucket", route + ",le=\"+Inf\"", h.count);
    sample(out, name + "_sum", route, number(h.sum));
    sample(out, name + "_count", route, h.count);
  }
}

std::string Metrics::text(const Stats& stats, Gauges gauges) {
  std::string out;
  queue_part(out, stats);
  gauge(out, "delayqd_waiting_pops", "Pops waiting for a job.",
        static_cast<int64_t>(gauges.waiting_pops));
  gauge(out, "delayqd_connections", "Open HTTP connections.", gauges.connections);
  prom::help(out, "delayq_build_info", "gauge",
             "1, labelled with this daemon's version (delayqd --version).");
  line(out, "delayq_build_info{version=\"" + label(wire::version()) + "\"} 1");
  requests_part(out);
  return out;
}

}  // namespace delayq::http
