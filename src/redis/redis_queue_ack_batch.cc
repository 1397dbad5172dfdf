// RedisQueue::ack_batch (see redis_queue.h for the map of its files): the acks of several
// deliveries, one ack_many run per shard and topic (in chunks), the runs of one shard pipelined in
// one round trip.
#include <algorithm>
#include <map>
#include <utility>

#include "redis/redis_queue.h"

namespace delayq::redis {

namespace {

// Tokens per ack_many run: its reply and argument lists stay small, and Lua's unpack() of the
// ids well within its limit.
constexpr size_t kAckChunk = 256;

}  // namespace

std::vector<Status> RedisQueue::ack_batch(std::span<const Token> tokens) {
  std::vector<Status> out(tokens.size());
  if (shut()) {
    std::fill(out.begin(), out.end(), shut_status());
    return out;
  }
  // By shard, then topic: the tokens' indexes, in order. A token whose topic this client does
  // not know is acked alone, in its turn (ack() finds the topic); an id given twice has the
  // same shard and topic both times, so its tokens keep their order within the group.
  std::map<size_t, std::map<std::string, std::vector<size_t>>> groups;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string topic = jobs_.topic_of(tokens[i].id);
    if (topic.empty()) {
      out[i] = ack(tokens[i]);
      continue;
    }
    groups[keys_.shard_of(tokens[i].id)][std::move(topic)].push_back(i);
  }
  for (const auto& [shard, topics] : groups) ack_shard(keys_.shard(shard), topics, tokens, out);
  return out;
}

// The ack_many runs of one shard, pipelined; each token's Status into `out`.
void RedisQueue::ack_shard(const ShardKeys& sh,
                           const std::map<std::string, std::vector<size_t>>& topics,
                           std::span<const Token> tokens, std::vector<Status>& out) {
  std::vector<ScriptCall> calls;
  std::vector<std::vector<size_t>> of_call;  // the tokens of each call
  for (const auto& [topic, idx] : topics) {
    for (size_t from = 0; from < idx.size(); from += kAckChunk) {
      const size_t to = std::min(idx.size(), from + kAckChunk);
      std::vector<std::string> args = common_(sh);
      args.push_back(topic);
      for (size_t k = from; k < to; ++k) {
        args.push_back(tokens[idx[k]].id);
        args.push_back(std::to_string(tokens[idx[k]].fence));
      }
      calls.emplace_back(sh.with_topic(topic), std::move(args));
      of_call.emplace_back(idx.begin() + from, idx.begin() + to);
    }
  }
  std::vector<Result<Reply>> replies = router_.eval_each(sh.slot, kAckMany, calls);
  for (size_t c = 0; c < calls.size(); ++c)
    settle_acks(std::move(replies[c]), of_call[c], tokens, out);
}

// One ack_many reply: each token's Status, in the words ack() would use.
void RedisQueue::settle_acks(Result<Reply> r, const std::vector<size_t>& idx,
                             std::span<const Token> tokens, std::vector<Status>& out) {
  if (r && (code_of(*r) != kOk || r->elements.size() != idx.size() + 1)) r = bad_reply(kAckMany);
  for (size_t k = 0; k < idx.size(); ++k) {
    const Token& t = tokens[idx[k]];
    if (!r) {
      out[idx[k]] = r.status();
      continue;
    }
    Result<JobAnswer> a = read_job_answer(std::move(r->elements[k + 1]), kAck);
    if (!a) {
      out[idx[k]] = a.status();
    } else if (const Reply* done = std::get_if<Reply>(&*a)) {
      if (sharded()) follow_place(kAck, jobs_.topic_of(t.id), t.id, *done);
      jobs_.forget(t.id);
    } else if (const Refusal* no = std::get_if<Refusal>(&*a)) {
      if (no->code == kNotFound) jobs_.forget(t.id);
      out[idx[k]] = refusal_status(*no, {.script = kAck, .id = t.id, .token = &t}, rules_);
    } else {
      // The job lives in another topic than this client thought: ack() follows it there.
      jobs_.remember(t.id, std::get<Elsewhere>(*a).topic);
      out[idx[k]] = ack(t);
    }
  }
}

}  // namespace delayq::redis
