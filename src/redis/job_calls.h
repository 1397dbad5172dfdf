// Calls about one job (ack, nack, dead_letter, release, touch, ack_claim, cancel, get, reschedule,
// requeue_dead): each script needs the keys of the job's topic up front.
//
// This client remembers the topics of the jobs it pushed and reserved; for the others it guesses
// (no topic), and the script, finding the job in another topic, changes nothing and names it:
// the call is sent again with that topic's keys. So such a call takes one round trip, or two for
// a job this client never saw.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "delayq/error.h"
#include "redis/args.h"
#include "redis/keys.h"
#include "redis/redis_rules.h"
#include "redis/router.h"
#include "redis/script_replies.h"

namespace delayq::redis {

class JobCalls {
 public:
  // Each must outlive this. Thread-safe.
  JobCalls(const KeyLayout& keys, Router& router, CommonArgs& common, const Rules& rules)
      : keys_(keys), router_(router), common_(common), rules_(rules) {}

  // Runs `call.script` about `call.id` on its shard: ARGV the common arguments, the id, the
  // topic, then `args`. Returns the script's reply when it did its work; else its refusal in
  // the engine's words (refusal_status() in script_replies.h), why there was no reply
  // (Router::eval), corrupt for a reply of no known shape, or unavailable when the job kept
  // changing topics. `topic`, when given, receives the topic the job was found in.
  Result<Reply> run(const JobCall& call, const std::vector<std::string>& args,
                    std::string* topic = nullptr);

  // The topics of the jobs this client pushed and reserved: a cache, not a record.
  std::string topic_of(std::string_view id);  // empty when not known
  void remember(std::string_view id, std::string_view topic);
  void forget(std::string_view id);

 private:
  const KeyLayout& keys_;
  Router& router_;
  CommonArgs& common_;
  const Rules& rules_;
  std::mutex mu_;
  std::unordered_map<std::string, std::string> topic_of_;  // under mu_
};

}  // namespace delayq::redis
