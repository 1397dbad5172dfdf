// RedisQueue's topic limits (see redis_queue.h for the map of its files): set_topic_limits(),
// clear_topic_limits() and the limits' part of stats() (add_shard_flow()). The server keeps them
// and applies them inside the claim script (lua/flow.lua, lua/take.lua); this side checks them,
// writes them as flow.lua reads them and reads them back. On several shards the home shard keeps
// each topic's bucket and places (redis_queue_home.cc, docs/redis.md).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/bad_input.h"
#include "common/flow_rules.h"
#include "common/rules.h"
#include "redis/redis_queue.h"

namespace delayq::redis {

namespace {

// The largest burst * period the scripts count exactly, in the period's units (µs, or ns for a
// period that is not a whole number of µs): 2^52, with room for the sums the scripts make.
constexpr int64_t kMaxSpan = int64_t{1} << 52;

// Limits (checked by rules::check_topic_limits) as flow.lua reads them: "<count> <per_x> <m>
// <burst> <max_in_flight>", the period being per_x / m µs; or the refusal of a rate whose
// burst * period the scripts cannot count exactly.
Result<std::string> encode_limits(const TopicLimits& l) {
  uint64_t count = 0, burst = 0, per_x = 0, m = 1;
  if (l.rate) {
    const int64_t ns = l.rate->per.count();
    count = l.rate->count;
    burst = l.rate->burst;
    m = ns % 1000 == 0 ? 1 : 1000;
    per_x = static_cast<uint64_t>(m == 1 ? ns / 1000 : ns);
    if (static_cast<unsigned __int128>(per_x) * burst > static_cast<unsigned __int128>(kMaxSpan))
      return bad(fmt::format(
          "limits: burst × per is more than the Redis backend counts exactly (at most 2^52 µs, "
          "about 142 years, or 2^52 ns, about 52 days, for a period that is not a whole number "
          "of µs), got burst {} and per {} ns",
          burst, ns));
  }
  return fmt::format("{} {} {} {} {}", count, per_x, m, burst, l.max_in_flight.value_or(0));
}

// The limits as encode_limits() wrote them, or nullopt for anything else.
std::optional<TopicLimits> decode_limits(std::string_view text) {
  uint64_t v[5];
  const char* p = text.data();
  const char* end = p + text.size();
  for (int i = 0; i < 5; ++i) {
    if (i > 0 && (p == end || *p++ != ' ')) return std::nullopt;
    const auto [next, ec] = std::from_chars(p, end, v[i]);
    if (ec != std::errc()) return std::nullopt;
    p = next;
  }
  const auto [count, per_x, m, burst, max_in_flight] = v;
  if (p != end || (m != 1 && m != 1000) || count > UINT32_MAX || burst > UINT32_MAX ||
      max_in_flight > UINT32_MAX || per_x > static_cast<uint64_t>(kMaxSpan))
    return std::nullopt;
  TopicLimits l;
  if (count > 0)
    l.rate = TopicLimits::Rate{.count = static_cast<uint32_t>(count),
                               .per = Duration(static_cast<int64_t>(per_x * (1000 / m))),
                               .burst = static_cast<uint32_t>(burst)};
  if (max_in_flight > 0) l.max_in_flight = static_cast<uint32_t>(max_in_flight);
  if (!l.rate && !l.max_in_flight) return std::nullopt;
  return l;
}

uint64_t count_of(const Reply& r) {
  const int64_t n = r.as_int(0);
  return n > 0 ? static_cast<uint64_t>(n) : 0;
}

}  // namespace

Status RedisQueue::set_topic_limits(std::string_view topic, const TopicLimits& limits) {
  if (shut()) return shut_status();
  if (Status s = rules::check_topic_limits(topic, limits, opt_.limits.max_delay); !s.ok()) return s;
  Result<std::string> text = encode_limits(limits);
  if (!text) return text.status();
  if (Status s = write_limits(topic, *text); !s.ok()) return s;
  return sharded() ? seed_places(topic) : Status();
}

Status RedisQueue::clear_topic_limits(std::string_view topic) {
  if (shut()) return shut_status();
  if (Status s = rules::check_topic(topic); !s.ok()) return s;
  if (Status s = write_limits(topic, ""); !s.ok()) return s;
  if (!sharded()) return Status();
  // The places are kept only while the topic has limits (its jobs' exits free none without).
  const ShardKeys& home = keys_.shard(0);
  Result<Reply> r = router_.command(home.slot, {"DEL", home.places(topic)});
  return r ? Status() : r.status();
}

Status RedisQueue::write_limits(std::string_view topic, const std::string& text) {
  for (const ShardKeys& sh : keys_.shards()) {
    std::vector<std::string> args = common_(sh);
    args.emplace_back(topic);
    args.push_back(text);
    Result<Reply> r = router_.eval(sh.slot, kSetLimits, sh.base, std::move(args));
    if (!r) return r.status();
    if (code_of(*r) != kOk) return bad_reply(kSetLimits);
  }
  return Status();
}

void RedisQueue::add_shard_flow(const ShardKeys& sh, Stats& st) {
  if (sharded() && &sh != &keys_.shard(0)) return;
  Result<Reply> names = router_.command(sh.slot, {"HKEYS", sh.limits});
  if (!names) return;  // stats() cannot fail: an unreachable shard shows nothing
  std::vector<std::string> topics;
  for (const Reply& n : names->elements) topics.push_back(n.str);
  // A few hundred topics per call keeps each script short.
  for (size_t from = 0; from < topics.size(); from += 200) {
    const size_t to = std::min(topics.size(), from + 200);
    std::vector<std::string> k = sh.base;
    std::vector<std::string> args = common_(sh);
    args.push_back(std::to_string(to - from));
    if (sharded()) {
      // The home shard's places stand for the jobs reserved (lua/flow_stats.lua).
      args.push_back("m");
      for (size_t i = from; i < to; ++i) {
        k.push_back(sh.places(topics[i]));
        args.push_back(topics[i]);
      }
    } else {
      for (size_t i = from; i < to; ++i) sh.add_topic(topics[i], k);
    }
    Result<Reply> r = router_.eval(sh.slot, kFlowStats, std::move(k), std::move(args));
    if (!r || code_of(*r) != kOk || r->elements.size() != to - from + 1) return;
    for (size_t i = from; i < to; ++i) {
      const Reply& row = r->elements[1 + i - from];
      if (row.elements.size() != 5) continue;
      const std::optional<TopicLimits> l = decode_limits(row.elements[0].str);
      if (!l) continue;  // cleared meanwhile (or not delayq's)
      st.flow[topics[i]] = TopicFlow{.limits = *l,
                                     .tokens = count_of(row.elements[1]),
                                     .in_flight = count_of(row.elements[2]),
                                     .throttled_rate = count_of(row.elements[3]),
                                     .throttled_concurrency = count_of(row.elements[4])};
    }
  }
}

}  // namespace delayq::redis
