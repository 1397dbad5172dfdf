// TopicSeries (topic_series.h).
#include "delayqd/topic_series.h"

namespace delayq::http {

namespace {

// A paused topic counts as holding jobs even when empty: its pause is shown
// (delayq_topic_paused) for as long as it lasts.
bool has_jobs(const TopicStats& t) {
  return t.delayed + t.ready + t.reserved + t.dead > 0 || t.paused;
}

void add(TopicStats& sum, const TopicStats& t) {
  sum.delayed += t.delayed;
  sum.ready += t.ready;
  sum.reserved += t.reserved;
  sum.dead += t.dead;
}

}  // namespace

TopicSeries::View TopicSeries::update(const std::map<std::string, TopicStats>& live,
                                      const std::set<std::string>& active) {
  std::lock_guard lock(mu_);
  const uint64_t now = ++scrape_;
  // The topics holding jobs in this scrape, or active since the last one.
  std::set<std::string_view> holding(active.begin(), active.end());
  for (const auto& [name, jobs] : live)
    if (has_jobs(jobs)) holding.insert(name);
  View view;
  for (const std::string_view name : holding) {
    auto it = named_.find(name);
    if (it == named_.end() && named_.size() >= max_topics_) {
      // Full: the topic empty the longest (not holding jobs in this scrape) makes room.
      auto oldest = named_.end();
      for (auto n = named_.begin(); n != named_.end(); ++n) {
        if (n->second == now || holding.contains(n->first)) continue;
        if (oldest == named_.end() || n->second < oldest->second) oldest = n;
      }
      if (oldest != named_.end()) named_.erase(oldest);
    }
    if (it == named_.end() && named_.size() < max_topics_)
      it = named_.emplace(std::string(name), now).first;
    if (it == named_.end()) {
      if (const auto l = live.find(std::string(name)); l != live.end())
        add(view.overflow, l->second);
      ++view.overflow_topics;
      continue;
    }
    it->second = now;
  }
  for (const auto& [name, last] : named_) {
    const auto l = live.find(name);
    view.named.emplace_back(name, l != live.end() ? l->second : TopicStats{});
  }
  return view;
}

}  // namespace delayq::http
