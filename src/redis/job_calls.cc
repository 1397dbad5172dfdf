// Calls about one job (see job_calls.h).
#include "redis/job_calls.h"

#include <utility>
#include <variant>

namespace delayq::redis {

Result<Reply> JobCalls::run(const JobCall& call, const std::vector<std::string>& args,
                            std::string* found_in) {
  const ShardKeys& sh = keys_.shard(keys_.shard_of(call.id));
  std::string topic = topic_of(call.id);
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::vector<std::string> argv = common_(sh);
    argv.push_back(std::string(call.id));
    argv.push_back(topic);
    argv.insert(argv.end(), args.begin(), args.end());
    Result<Reply> r = router_.eval(sh.slot, call.script, sh.with_topic(topic), std::move(argv));
    if (!r) return r;
    Result<JobAnswer> a = read_job_answer(std::move(*r), call.script);
    if (!a) return a.status();
    if (Reply* done = std::get_if<Reply>(&*a)) {
      if (found_in) *found_in = topic;
      return std::move(*done);
    }
    if (const Refusal* no = std::get_if<Refusal>(&*a)) {
      if (no->code == kNotFound) forget(call.id);
      return refusal_status(*no, call, rules_);
    }
    topic = std::get<Elsewhere>(*a).topic;
    remember(call.id, topic);
  }
  return Status(Errc::unavailable, "job '" + std::string(call.id) +
                                       "' kept changing topics during the call; try again");
}

std::string JobCalls::topic_of(std::string_view id) {
  std::lock_guard lock(mu_);
  auto it = topic_of_.find(std::string(id));
  return it == topic_of_.end() ? std::string() : it->second;
}

void JobCalls::remember(std::string_view id, std::string_view topic) {
  std::lock_guard lock(mu_);
  if (topic_of_.size() > 100000) topic_of_.clear();  // a cache, not a record
  topic_of_[std::string(id)] = std::string(topic);
}

void JobCalls::forget(std::string_view id) {
  std::lock_guard lock(mu_);
  topic_of_.erase(std::string(id));
}

}  // namespace delayq::redis
