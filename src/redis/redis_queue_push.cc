// RedisQueue's pushes (see redis_queue.h for the map of its files): push() and push_batch(), with
// what only they use: generated ids (next_id()) and the results of a push_many run
// (settle_group()).
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/format.h"
#include "redis/redis_queue.h"

namespace delayq::redis {

namespace {

// The push script's ARGV index of the body (after the common arguments, id and topic), for the
// caller to take back when it needs the spec again.
constexpr size_t kBodyArg = 5;

// A push whose call failed. A generated id is named: a call that may have taken effect can
// only be looked up, or pushed again to find out (duplicate_id if it was stored), by its id.
Status unsent(const Status& why, const std::string& id, bool generated) {
  if (!generated) return why;
  return Status(static_cast<Errc>(why.code().value()),
                why.message() + " (the job's generated id was '" + id + "')");
}

}  // namespace

bool RedisQueue::stored_already(std::string_view id, std::string_view topic,
                                std::string_view body) {
  // duplicate_id after a resend: the first send stored the job, unless another push of that id
  // came first. The same topic and body count as this push's job.
  Result<JobInfo> got = get(id);
  return got && got->topic == topic && got->body == body;
}

std::string RedisQueue::next_id() {
  return to_base36(next_id_.fetch_add(1)) + "-" + id_tag_;
}

Result<std::string> RedisQueue::push(JobSpec spec) {
  if (shut()) return shut_status();
  const bool generated = spec.id.empty();
  for (;;) {
    if (generated) spec.id = next_id();
    if (Status s = rules_.check_push(spec, client_now()); !s.ok()) return s;
    const ShardKeys& sh = keys_.shard(keys_.shard_of(spec.id));
    std::vector<std::string> args = common_(sh);
    add_job_args(spec, /*with_topic=*/true, opt_.limits.default_ttr, opt_.limits.default_retry, args);
    Result<Reply> r = router_.eval(sh.slot, kPush, sh.with_topic(spec.topic), args);
    // The connection broke after the push went out (a failover, most likely): with the caller's
    // id it is safe to send again, as the id lets it be stored once. A resend that finds the job
    // stored is followed by WAIT too (replicas_to_ack), and WAIT counts up to the primary's
    // replication offset after the resend, which covers the first send's writes.
    const bool resent = !r && !generated && sent_and_lost(r.status());
    if (resent)
      r = resend(std::move(r),
                 [&] { return router_.eval(sh.slot, kPush, sh.with_topic(spec.topic), args); });
    if (!r) return unsent(r.status(), spec.id, generated);
    Result<std::optional<JobState>> taken = read_push(*r);
    if (!taken) return taken.status();
    if (!*taken || (resent && stored_already(spec.id, spec.topic, args[kBodyArg]))) {
      jobs_.remember(spec.id, spec.topic);
      return spec.id;
    }
    // A generated id that is taken already: draw the next one.
    if (!generated) return rules_.duplicate(spec.id, **taken);
    spec.body = std::move(args[kBodyArg]);
  }
}

// The specs that pass the checks go to the server grouped by shard and topic: one push_many
// script run per group of up to kBatch jobs (a few commands for the whole group instead of a
// few per job), the runs of a shard pipelined (one round trip). Each run's result is its own:
// a run refused or lost fails its jobs only, and the jobs of the runs answered keep their
// answers (a client that retries must not be told that a stored job failed). A generated id
// that turns out to be taken is pushed again on its own with the next id.
std::vector<Result<std::string>> RedisQueue::push_batch(std::vector<JobSpec> specs) {
  constexpr size_t kBatch = 100;
  std::vector<Result<std::string>> out(specs.size(), shut_status());
  if (shut()) return out;
  std::vector<bool> generated(specs.size());
  // Per shard: the groups of specs, by topic, each at most kBatch long.
  std::vector<std::vector<std::vector<size_t>>> groups(keys_.size());
  std::vector<std::unordered_map<std::string_view, size_t>> open_group(keys_.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    JobSpec& spec = specs[i];
    generated[i] = spec.id.empty();
    if (generated[i]) spec.id = next_id();
    if (Status s = rules_.check_push(spec, client_now()); !s.ok()) {
      out[i] = s;
      continue;
    }
    const size_t sh = keys_.shard_of(spec.id);
    auto [it, fresh] = open_group[sh].try_emplace(spec.topic, groups[sh].size());
    if (fresh || groups[sh][it->second].size() == kBatch) {
      it->second = groups[sh].size();
      groups[sh].emplace_back();
    }
    groups[sh][it->second].push_back(i);
  }
  for (size_t sh = 0; sh < keys_.size(); ++sh) {
    if (groups[sh].empty()) continue;
    std::vector<ScriptCall> calls;
    for (const std::vector<size_t>& g : groups[sh]) {
      const std::string& topic = specs[g.front()].topic;
      std::vector<std::string> args = common_(keys_.shard(sh));
      args.push_back(topic);
      args.push_back(std::to_string(g.size()));
      for (size_t i : g)
        add_job_args(specs[i], /*with_topic=*/false, opt_.limits.default_ttr, opt_.limits.default_retry, args);
      calls.emplace_back(keys_.shard(sh).with_topic(topic), std::move(args));
    }
    std::vector<Result<Reply>> r = router_.eval_each(keys_.shard(sh).slot, kPushMany, calls);
    for (size_t c = 0; c < groups[sh].size(); ++c)
      settle_group(r[c], groups[sh][c], specs, generated, out);
  }
  return out;
}

// The results of one push_many run's jobs, from its reply or from why there is none.
void RedisQueue::settle_group(const Result<Reply>& r, const std::vector<size_t>& g,
                              std::vector<JobSpec>& specs, const std::vector<bool>& generated,
                              std::vector<Result<std::string>>& out) {
  Result<std::vector<std::optional<JobState>>> taken =
      r ? read_push_many(*r, g.size()) : Result<std::vector<std::optional<JobState>>>(r.status());
  for (size_t k = 0; k < g.size(); ++k) {
    const size_t i = g[k];
    JobSpec& spec = specs[i];
    if (!r) {
      out[i] = unsent(r.status(), spec.id, generated[i]);
    } else if (!taken) {
      out[i] = taken.status();
    } else if (!(*taken)[k]) {
      jobs_.remember(spec.id, spec.topic);
      out[i] = spec.id;
    } else if (generated[i]) {
      spec.id.clear();  // draw another
      out[i] = push(std::move(spec));
    } else {
      out[i] = rules_.duplicate(spec.id, *(*taken)[k]);
    }
  }
}

}  // namespace delayq::redis
