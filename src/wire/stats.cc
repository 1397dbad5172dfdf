// The JSON form of Stats (see stats.h): each member named once, for both directions.
#include "wire/stats.h"

#include "common/totals.h"

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

}  // namespace

void write_stats(json::Writer& w, const Stats& s,
                 std::initializer_list<std::pair<std::string_view, uint64_t>> more) {
  w.begin_object();
  write_members(w, s, kTotalNames);
  for (const auto& [name, n] : more) w.key(name).value(n);
  w.key("topics").begin_object();
  for (const auto& [name, t] : s.topics) {
    w.key(name).begin_object();
    write_members(w, t, kStates);
    w.key("paused").value(t.paused);
    w.end_object();
  }
  w.end_object().end_object();
}

Stats read_stats(const json::Value& v) {
  Stats s;
  read_members(v, s, kTotalNames);
  if (const json::Value* topics = v.find("topics"); topics != nullptr && topics->is_object())
    for (const auto& [name, t] : topics->as_object()) {
      read_members(t, s.topics[name], kStates);
      const json::Value* paused = t.find("paused");
      s.topics[name].paused = paused != nullptr && paused->is_bool() && paused->as_bool();
    }
  return s;
}

}  // namespace delayq::wire
