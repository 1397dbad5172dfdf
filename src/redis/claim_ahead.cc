// The claim-ahead cache (see claim_ahead.h).
#include "redis/claim_ahead.h"

#include <utility>

#include "common/rules.h"
#include "delayq/clock.h"

namespace delayq::redis {

uint32_t ClaimAhead::claim_size(std::span<const std::string> topics) {
  if (claim_batch_ <= 1 || topics.size() != 1) return 1;
  std::lock_guard lock(mu_);
  kept_.try_emplace(topics[0]);
  return claim_batch_;
}

uint32_t ClaimAhead::refill_wanted(const std::string& topic) {
  if (topic.empty()) return 0;
  std::lock_guard lock(mu_);
  auto it = kept_.find(topic);
  return !closed_ && it != kept_.end() && it->second.empty() ? claim_batch_ : 0;
}

std::optional<Delivery> ClaimAhead::take(std::span<const std::string> topics,
                                         std::vector<Delivery>* give_back) {
  if (claim_batch_ <= 1 || topics.size() != 1) return std::nullopt;
  std::lock_guard lock(mu_);
  auto it = kept_.find(topics[0]);
  if (it == kept_.end()) return std::nullopt;
  const auto now = std::chrono::steady_clock::now();
  while (!it->second.empty()) {
    Kept k = std::move(it->second.front());
    it->second.pop_front();
    if (now - k.taken < k.lease_left / 2) return std::move(k.d);
    give_back->push_back(std::move(k.d));
  }
  return std::nullopt;
}

std::vector<Delivery> ClaimAhead::keep(std::vector<Delivery> jobs) {
  if (jobs.empty()) return {};
  const TimePoint now = SystemClock::instance().now();
  const auto taken = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  // After close() gave back what was kept, jobs that arrive late (an ack_claim in flight) go
  // straight back too.
  if (closed_) return jobs;
  std::deque<Kept>& q = kept_[jobs.front().topic];
  for (Delivery& d : jobs) {
    const Duration left = rules::distance(now, d.lease_deadline);  // a reply's time: anywhere
    q.push_back(Kept{std::move(d), taken, left});
  }
  return {};
}

std::vector<Delivery> ClaimAhead::close() {
  std::vector<Delivery> all;
  std::lock_guard lock(mu_);
  closed_ = true;
  for (auto& [topic, q] : kept_)
    for (Kept& k : q) all.push_back(std::move(k.d));
  kept_.clear();
  return all;
}

}  // namespace delayq::redis
