// The JSON form of Stats (see stats.h): each member named once, for both directions.
#include "wire/stats.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include "common/totals.h"
#include "wire/fields.h"
#include "wire/flow.h"

namespace delayq::wire {

namespace {

struct StateName {
  std::string_view name;
  uint64_t TopicStats::*field;
};

constexpr StateName kStates[] = {
    {"delayed", &TopicStats::delayed},
    {"ready", &TopicStats::ready},
    {"reserved", &TopicStats::reserved},
    {"dead", &TopicStats::dead},
};

// The totals by their names (common/totals.h), a topic's jobs by their states' names.
template <typename Of, typename Members>
void write_members(json::Writer& w, const Of& from, const Members& members) {
  for (const auto& m : members) w.key(m.name).value(from.*m.field);
}

template <typename Of, typename Members>
void read_members(const json::Value& v, Of& into, const Members& members) {
  for (const auto& m : members) into.*m.field = static_cast<uint64_t>(json::member_int(v, m.name));
}

// {"count", "sum_s", "clamped", "buckets": [per bucket, not cumulative]}.
void write_lateness(json::Writer& w, const Lateness& l) {
  w.begin_object().key("count").value(l.count).key("sum_s").value(l.sum_seconds);
  w.key("clamped").value(l.clamped).key("buckets").begin_array();
  for (uint64_t n : l.buckets) w.value(n);
  w.end_array().end_object();
}

void read_lateness(const json::Value* v, Lateness& l) {
  if (v == nullptr || !v->is_object()) return;
  l.count = static_cast<uint64_t>(json::member_int(*v, "count"));
  l.clamped = static_cast<uint64_t>(json::member_int(*v, "clamped"));
  if (const json::Value* sum = v->find("sum_s"); sum != nullptr && sum->is_number())
    l.sum_seconds = sum->as_double();
  if (const json::Value* b = v->find("buckets"); b != nullptr && b->is_array())
    for (size_t i = 0; i < b->as_array().size() && i < l.buckets.size(); ++i)
      l.buckets[i] = static_cast<uint64_t>(std::max<int64_t>(0, b->as_array()[i].as_int()));
}

struct WindowName {
  std::string_view name;
  uint64_t DueWindows::*field;
};

constexpr WindowName kWindows[] = {
    {"next_minute", &DueWindows::next_minute}, {"next_hour", &DueWindows::next_hour},
    {"next_day", &DueWindows::next_day},       {"next_week", &DueWindows::next_week},
    {"beyond", &DueWindows::beyond},
};

void read_timing(const json::Value& v, TopicTiming& t) {
  if (const json::Value* due = v.find("due"); due != nullptr && due->is_object())
    read_members(*due, t.due, kWindows);
  if (const json::Value* o = v.find("oldest_ready_s"); o != nullptr && o->is_number())
    t.oldest_ready =
        std::chrono::duration_cast<Duration>(std::chrono::duration<double>(o->as_double()));
  if (const json::Value* l = v.find("lateness"); l != nullptr && l->is_object()) {
    read_lateness(l->find("first"), t.first);
    read_lateness(l->find("retry"), t.retry);
  }
}

}  // namespace

void write_timing(json::Writer& w, const TopicTiming& t) {
  w.key("due").begin_object();
  write_members(w, t.due, kWindows);
  w.end_object();
  w.key("oldest_ready_s").value(seconds_of(t.oldest_ready));
  w.key("lateness").begin_object();
  write_lateness(w.key("first"), t.first);
  write_lateness(w.key("retry"), t.retry);
  w.end_object();
}

void write_lateness_bounds(json::Writer& w) {
  w.begin_array();
  for (Duration b : Lateness::kBounds) w.value(seconds_of(b));
  w.end_array();
}

PageCut write_stats(json::Writer& w, const Stats& s,
                    std::initializer_list<std::pair<std::string_view, uint64_t>> more,
                    const TopicPage* page) {
  w.begin_object();
  write_members(w, s, kTotalNames);
  for (const auto& [name, n] : more) w.key(name).value(n);
  // Every topic with live jobs or timing: its jobs per state (0 when it has none), then its
  // timing (when it has some).
  std::map<std::string_view, std::pair<const TopicStats*, const TopicTiming*>> topics;
  for (const auto& [name, t] : s.topics) topics[name].first = &t;
  for (const auto& [name, t] : s.timing) topics[name].second = &t;
  const TopicPage all;
  const TopicPage& p = page != nullptr ? *page : all;
  PageCut cut;
  size_t listed = 0;
  w.key("topics").begin_object();
  for (auto it = topics.upper_bound(p.after); it != topics.end(); ++it) {
    const auto& [name, t] = *it;
    if (listed == p.limit) {
      cut.truncated = true;
      break;
    }
    ++listed;
    cut.last = name;
    w.key(name).begin_object();
    const TopicStats counts = t.first != nullptr ? *t.first : TopicStats{};
    write_members(w, counts, kStates);
    w.key("paused").value(counts.paused);
    if (t.second != nullptr) write_timing(w, *t.second);
    w.end_object();
  }
  w.end_object();
  // Every limited topic, whatever the page: there are as many as an operator set.
  write_flow(w.key("flow"), s.flow);
  write_lateness_bounds(w.key("lateness_bounds_s"));
  if (page != nullptr) {
    w.key("truncated").value(cut.truncated);
    if (cut.truncated) w.key("next_after").value(cut.last);
  }
  w.end_object();
  return cut;
}

Stats read_stats(const json::Value& v) {
  Stats s;
  read_members(v, s, kTotalNames);
  if (const json::Value* topics = v.find("topics"); topics != nullptr && topics->is_object())
    for (const auto& [name, t] : topics->as_object()) {
      TopicStats counts;
      read_members(t, counts, kStates);
      const json::Value* paused = t.find("paused");
      counts.paused = paused != nullptr && paused->is_bool() && paused->as_bool();
      if (counts != TopicStats{}) s.topics[name] = counts;
      if (t.find("due") != nullptr || t.find("lateness") != nullptr) read_timing(t, s.timing[name]);
    }
  if (const json::Value* flow = v.find("flow"); flow != nullptr) s.flow = read_flow(*flow);
  return s;
}

}  // namespace delayq::wire
