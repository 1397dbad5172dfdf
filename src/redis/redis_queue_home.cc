// RedisQueue's limits on several shards (see redis_queue.h for the map of its files). A topic's
// jobs are spread over the shards by id, so its bucket and its places live with one shard, the
// home shard (shard 0), and the shards' scripts ask it (docs/redis.md, "Limits on several
// shards"):
//  - a claim whose first look finds a limited topic with ready jobs (claim.lua's reply 7) asks
//    the home shard to admit them (admit.lua: tokens and places taken, the places held for a
//    while), claims with what was admitted, and settles (settle.lua: the jobs taken hold the
//    places until their lease deadlines, the rest goes back);
//  - each way out of `reserved` of a limited topic's job frees its place (place.lua), and touch
//    moves it; a place nobody frees frees itself at its deadline.
#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "redis/redis_queue.h"

namespace delayq::redis {

namespace {

// How long an admission's places are held before the claim settles them: a claim and a settle,
// each within the call timeout, are over by then. A client that dies in between costs the
// places that long, and the tokens for good.
int64_t admission_hold_us(Duration call_timeout) {
  return ceil_us(call_timeout) * 2 + 1'000'000;
}

}  // namespace

Result<Claimed> RedisQueue::claim_on(const ShardKeys& sh, std::span<const std::string> topics,
                                     const std::string& call, uint32_t want,
                                     const std::string& grants) {
  std::vector<std::string> k = sh.base;
  for (const std::string& t : topics) sh.add_topic(t, k);
  std::vector<std::string> args = common_(sh);
  args.push_back(std::to_string(topics.size()));
  args.push_back(std::to_string(want));
  args.push_back(call);
  if (!grants.empty()) args.push_back(grants);
  Result<Reply> r = router_.eval(sh.slot, kClaim, std::move(k), std::move(args));
  return r ? read_claim(std::move(*r)) : Result<Claimed>(r.status());
}

Result<Claimed> RedisQueue::claim_admitted(const ShardKeys& sh,
                                           std::span<const std::string> topics,
                                           const std::string& call, uint32_t want,
                                           const Claimed& first) {
  const ShardKeys& home = keys_.shard(0);
  const std::string admission = next_call();
  std::vector<std::string> k = home.base;
  std::vector<std::string> args = common_(home);
  args.push_back(call);
  args.push_back(std::to_string(admission_hold_us(opt_.call_timeout)));
  args.push_back(admission);
  for (const auto& [i, ready] : first.admit) {
    if (i >= topics.size()) return bad_reply(kClaim);
    k.push_back(home.places(topics[i]));
    args.push_back(topics[i]);
    args.push_back(std::to_string(std::min(ready, want)));
  }
  Result<Reply> r = router_.eval(home.slot, kAdmit, std::move(k), std::move(args));
  if (!r) return r.status();
  if (code_of(*r) != kOk || r->elements.size() != 1 + 2 * first.admit.size())
    return bad_reply(kAdmit);
  std::vector<int64_t> grant(topics.size(), -1);
  std::optional<Duration> wait;
  bool any = false;
  for (size_t a = 0; a < first.admit.size(); ++a) {
    const int64_t g = std::max<int64_t>(0, r->elements[1 + 2 * a].as_int(0));
    grant[first.admit[a].first] = g;
    any = any || g > 0;
    if (const int64_t w = r->elements[2 + 2 * a].as_int(-1); g == 0 && w >= 0) {
      const Duration d = duration_us(w);
      if (!wait || d < *wait) wait = d;
    }
  }
  std::string grants;
  for (int64_t g : grant) (grants += grants.empty() ? "" : " ") += std::to_string(g);
  Result<Claimed> got = claim_on(sh, topics, call, want, grants);
  // A claim that failed may have taken jobs all the same: its admission stands until it frees
  // itself, rather than give back places that may be held.
  if (!got) return got;
  if (wait && got->jobs.empty() && (!got->next || *wait < *got->next)) got->next = wait;
  if (!any) return got;
  std::vector<std::string> sk = home.base;
  std::vector<std::string> sargs = common_(home);
  sargs.push_back(admission);
  for (const auto& [i, ready] : first.admit) {
    sk.push_back(home.places(topics[i]));
    sargs.push_back(topics[i]);
    sargs.push_back(std::to_string(grant[i]));
    std::vector<std::string> taken;
    for (const Delivery& d : got->jobs) {
      if (d.topic != topics[i]) continue;
      taken.push_back(d.id);
      taken.push_back(std::to_string(ceil_us(d.lease_deadline)));
    }
    sargs.push_back(std::to_string(taken.size() / 2));
    std::move(taken.begin(), taken.end(), std::back_inserter(sargs));
  }
  // Best effort: unsettled, the admission's places free themselves when their hold ends.
  (void)router_.eval(home.slot, kSettle, std::move(sk), std::move(sargs));
  return got;
}

void RedisQueue::follow_place(ScriptId script, std::string_view topic, std::string_view id,
                              const Reply& r) {
  const std::vector<Reply>& e = r.elements;
  switch (script) {
    case kAck:
    case kNack:
    case kDeadLetter:
    case kCancel:
      if (e.size() == 2 && e[1].as_int(0) == 1) place("free", topic, id);
      return;
    case kRelease:
      if (e.size() == 2 && e[1].as_int(0) == 1) place("back", topic, id);
      return;
    case kAckClaim:
      // {0, 1}: a limited topic, nothing claimed (a claim's reply has 1 + 9n elements).
      if (e.size() == 2 && e[1].as_int(0) == 1) place("free", topic, id);
      return;
    case kTouch:
      if (e.size() == 3 && e[2].as_int(0) == 1)
        place("move", topic, id, std::to_string(e[1].as_int(0)));
      return;
    default:
      return;
  }
}

void RedisQueue::place(const char* op, std::string_view topic, std::string_view id,
                       const std::string& lease_us) {
  const ShardKeys& home = keys_.shard(0);
  std::vector<std::string> k = home.base;
  k.push_back(home.places(topic));
  std::vector<std::string> args = common_(home);
  args.push_back(op);
  args.emplace_back(topic);
  args.emplace_back(id);
  if (!lease_us.empty()) args.push_back(lease_us);
  // Best effort: the job has left `reserved` (or kept its lease) whatever happens here; a place
  // not freed frees itself at its deadline.
  (void)router_.eval(home.slot, kPlace, std::move(k), std::move(args));
}

Status RedisQueue::seed_places(std::string_view topic) {
  const ShardKeys& home = keys_.shard(0);
  const std::string places = home.places(topic);
  std::vector<std::string> add{"ZADD", places, "NX"};
  for (const ShardKeys& sh : keys_.shards()) {
    const std::string leases = sh.tag + ":l:" + std::string(topic);
    Result<Reply> r = router_.command(sh.slot, {"ZRANGE", leases, "0", "-1", "WITHSCORES"});
    if (!r) return r.status();
    const std::vector<Reply>& e = r->elements;
    for (size_t i = 0; i + 1 < e.size(); i += 2) {
      add.push_back(e[i + 1].str);  // the score
      add.push_back(e[i].str);
    }
  }
  if (add.size() == 3) return Status();
  std::vector<std::string_view> argv(add.begin(), add.end());
  Result<Reply> r = router_.command(home.slot, argv);
  return r ? Status() : r.status();
}

}  // namespace delayq::redis
