// The engine's topic limits (Queue::set_topic_limits, clear_topic_limits; the bucket and places
// are limiter.h, their hold on reserve() core_limits.cc): checked, journaled first, then every
// shard's core pointed at the topic's limiter under its own lock, as set_paused() does; restored
// at open; shown by stats() in Stats::flow.
//
// Lock order: limits_mu_, then a shard's lock, then a limiter's mutex. A core takes a limiter's
// mutex under its shard's lock only; stats() takes limits_mu_ and the limiters' mutexes with no
// shard lock.
#include "common/flow_rules.h"
#include "common/rules.h"
#include "engine/sharded_engine.h"
#include "engine/store_seam.h"

namespace delayq::engine {

Status ShardedEngine::set_topic_limits(std::string_view topic, const TopicLimits& limits) {
  if (closed()) return closed_status();
  if (Status s = rules::check_topic_limits(topic, limits, opt_.limits.max_delay); !s.ok()) return s;
  return change_limits(topic, limits);
}

Status ShardedEngine::clear_topic_limits(std::string_view topic) {
  if (closed()) return closed_status();
  if (Status s = rules::check_topic(topic); !s.ok()) return s;
  return change_limits(topic, std::nullopt);
}

void ShardedEngine::point_shards(std::string_view topic, TopicLimiter* limiter, bool seed) {
  for (const auto& s : shards_.all())
    shards_.apply(*s, [&](Core& c, TimePoint) {
      if (seed) {
        // Under this shard's lock: its reserved jobs are counted, and from now on each of its
        // hand-outs and exits counts in the limiter, so in_flight stays exact across shards.
        std::lock_guard l(limiter->mu());
        limiter->add_in_flight(c.reserved_of(topic));
      }
      c.set_limiter(topic, limiter);
      return 0;
    });
}

Status ShardedEngine::change_limits(std::string_view topic,
                                    const std::optional<TopicLimits>& limits) {
  std::unique_lock l(limits_mu_);
  const auto it = limiters_.find(topic);
  if (!limits && it == limiters_.end()) return {};  // none set: nothing changes
  if (limits && it != limiters_.end() && it->second->limits() == *limits) return {};
  uint64_t ticket = 0;
  if (Persistence* store = shards_.store()) {
    Result<uint64_t> w = store->write_limits(topic, limits);
    if (!w) return shards_.fail(w.status());
    ticket = *w;
  }
  if (!limits) {
    // Every core lets go of it before it is freed.
    point_shards(topic, nullptr, false);
    limiters_.erase(it);
  } else if (it == limiters_.end()) {
    auto limiter = std::make_unique<TopicLimiter>(*limits);
    point_shards(topic, limiter.get(), true);
    limiters_.emplace(std::string(topic), std::move(limiter));
  } else {
    TopicLimiter& limiter = *it->second;
    {
      std::lock_guard ll(limiter.mu());
      limiter.change(*limits, shards_.now());
    }
    point_shards(topic, &limiter, false);  // the same limiter: only wakes waiters
  }
  l.unlock();
  if (ticket != 0)
    if (Status d = shards_.store()->wait_durable(ticket); !d.ok()) return shards_.fail(d);
  return {};
}

void ShardedEngine::restore_limits(const std::vector<std::pair<std::string, TopicLimits>>& limits) {
  std::lock_guard l(limits_mu_);
  for (const auto& [topic, value] : limits) {
    auto limiter = std::make_unique<TopicLimiter>(value);
    for (const auto& s : shards_.all()) {
      std::lock_guard sl(s->mu);
      limiter->add_in_flight(s->core.reserved_of(topic));  // not shared yet: no mutex needed
      s->core.set_limiter(topic, limiter.get());
    }
    limiters_.insert_or_assign(topic, std::move(limiter));
  }
}

void ShardedEngine::add_flow(Stats& st) {
  std::lock_guard l(limits_mu_);
  const TimePoint now = shards_.now();
  for (const auto& [topic, limiter] : limiters_) {
    std::lock_guard ll(limiter->mu());
    st.flow.emplace(topic, limiter->snapshot(now));
  }
}

}  // namespace delayq::engine
