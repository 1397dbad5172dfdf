// /metrics's flow-control series (see flow_metrics.h).
#include "delayqd/flow_metrics.h"

#include <fmt/format.h>

#include <chrono>
#include <string_view>
#include <utility>
#include <vector>

#include "delayqd/prometheus.h"

namespace delayq::http {

namespace {

using prom::help;
using prom::label;
using prom::number;
using prom::sample;

using Named = std::vector<std::pair<std::string, const TopicFlow*>>;

std::string topic_label(const std::string& name) { return "topic=\"" + label(name) + "\""; }

// One gauge family: a sample per named topic that `value` gives one for.
template <typename Value>
void family(std::string& out, const Named& topics, std::string_view name, std::string_view text,
            Value value) {
  help(out, name, "gauge", text);
  for (const auto& [topic, f] : topics) value(topic_label(topic), *f);
}

}  // namespace

void flow_metrics(std::string& out, const Stats& st, size_t max_topics) {
  Named topics;
  for (const auto& [name, f] : st.flow) {
    if (topics.size() == max_topics) break;
    topics.emplace_back(name, &f);
  }
  family(out, topics, "delayq_topic_rate_limit_per_second",
         "Hand-outs per second the topic's rate allows on average (topics with a rate).",
         [&](const std::string& l, const TopicFlow& f) {
           if (!f.limits.rate) return;
           const double per = std::chrono::duration<double>(f.limits.rate->per).count();
           sample(out, "delayq_topic_rate_limit_per_second", l,
                  number(f.limits.rate->count / per));
         });
  family(out, topics, "delayq_topic_rate_burst",
         "Hand-outs the topic's rate allows at once after a quiet spell (topics with a rate).",
         [&](const std::string& l, const TopicFlow& f) {
           if (f.limits.rate) sample(out, "delayq_topic_rate_burst", l, f.limits.rate->burst);
         });
  family(out, topics, "delayq_topic_tokens",
         "Hand-outs the topic's rate allows right now (topics with a rate).",
         [&](const std::string& l, const TopicFlow& f) {
           if (f.limits.rate) sample(out, "delayq_topic_tokens", l, f.tokens);
         });
  family(out, topics, "delayq_topic_max_in_flight",
         "The most jobs of the topic reserved at once (topics with max_in_flight).",
         [&](const std::string& l, const TopicFlow& f) {
           if (f.limits.max_in_flight)
             sample(out, "delayq_topic_max_in_flight", l, *f.limits.max_in_flight);
         });
  family(out, topics, "delayq_topic_in_flight", "Jobs of the limited topic reserved now.",
         [&](const std::string& l, const TopicFlow& f) {
           sample(out, "delayq_topic_in_flight", l, f.in_flight);
         });
  help(out, "delayq_topic_throttled_total", "counter",
       "Hand-outs refused because of the topic's rate or its max_in_flight, since the queue "
       "opened: one per reserve and topic that had a ready job it could not take.");
  for (const auto& [topic, f] : topics) {
    const std::string l = topic_label(topic);
    sample(out, "delayq_topic_throttled_total", l + ",reason=\"rate\"", f->throttled_rate);
    sample(out, "delayq_topic_throttled_total", l + ",reason=\"concurrency\"",
           f->throttled_concurrency);
  }
  prom::gauge(out, "delayq_limited_topics",
              "Topics with a rate or max_in_flight (named in the delayq_topic_* flow series or "
              "not: past --metrics-topics).",
              static_cast<int64_t>(st.flow.size()));
}

}  // namespace delayq::http
