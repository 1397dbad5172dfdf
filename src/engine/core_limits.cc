// A limited topic's hold on reserve() (Queue::set_topic_limits; the bucket is limiter.h): the
// pointer from a Topic to its limiter (set_limiter(), reserved_of()), the check reserve() makes
// before it considers a topic (throttled()) and the hand-out it spends (take_place()), the place
// each exit from `reserved` frees (place_freed(), called by set_state(), delay_until() and
// uncount()), and the wake-up at the next token (wake_at(), read by advance() and
// next_deadline()). The core stays single-threaded and reads no clock: the limiter's own mutex
// is taken under the shard's lock (lock order in limiter.h).
#include "engine/core.h"
#include "engine/limiter.h"

namespace delayq::engine {

void Core::set_limiter(std::string_view topic, TopicLimiter* limiter) {
  if (!limiter && !topic_ids_.contains(topic)) return;  // never limited here: nothing to clear
  const uint32_t i = topic_index(topic);
  Topic& t = topics_[i];
  t.limiter = limiter;
  if (front(t) != kNil) ++ready_added_;  // waiters look again under the new limits
  unused_topic(i);                           // when cleared and empty
}

uint64_t Core::reserved_of(std::string_view topic) const {
  auto it = topic_ids_.find(topic);
  return it == topic_ids_.end() ? 0 : topics_[it->second].counts.reserved;
}

bool Core::throttled(const Topic& t, TimePoint now, bool count) {
  std::optional<TopicLimiter::Refusal> no;
  {
    std::lock_guard l(t.limiter->mu());
    no = t.limiter->refusal(now);
    if (no && count) t.limiter->count(*no);
  }
  if (no) wake_at(no->next_token);
  return no.has_value();
}

bool Core::take_place(uint32_t j, TimePoint now) {
  TopicLimiter* limiter = topics_[jobs_[j].topic].limiter;
  if (!limiter) return true;
  std::optional<TopicLimiter::Refusal> no;
  {
    std::lock_guard l(limiter->mu());
    no = limiter->take(now);  // counts a refusal itself
  }
  if (no) wake_at(no->next_token);
  return !no;
}

void Core::place_freed(const Job& j) {
  TopicLimiter* limiter = topics_[j.topic].limiter;
  if (!limiter) return;
  std::lock_guard l(limiter->mu());
  // At its cap until now: consumers waiting for a place look again (every waiter is told; the
  // ones waiting on other topics find nothing new and sleep again).
  if (limiter->free_place()) ++ready_added_;
}

void Core::give_back(const Job& j, TimePoint now) {
  TopicLimiter* limiter = topics_[j.topic].limiter;
  if (!limiter) return;
  std::lock_guard l(limiter->mu());
  limiter->give_back(now);
}

void Core::wake_at(TimePoint at) {
  if (at == TimePoint::max()) return;  // only a freed place helps: place_freed() wakes them
  if (!throttle_wake_ || at < *throttle_wake_) throttle_wake_ = at;
  if (!earliest_scheduled_ || at < *earliest_scheduled_) earliest_scheduled_ = at;
}

}  // namespace delayq::engine
