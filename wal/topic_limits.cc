// The limited topics in the journal (topic_limits.h).
#include "wal/topic_limits.h"

#include "common/flow_rules.h"
#include "wal/codec.h"

namespace delayq::wal {

namespace {

constexpr size_t kLimitsSize = 22;
constexpr uint8_t kRateFlag = 1, kInFlightFlag = 2;

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_le(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<uint8_t>(in[at + i])} << (8 * i);
  return v;
}

Status bad_limits(const std::string& why) {
  return Status(Errc::corrupt, why);
}

}  // namespace

std::string limits_key(std::string_view topic) {
  return std::string(kLimitsPrefix) + std::string(topic);
}

std::string encode_limits(const TopicLimits& l) {
  std::string out;
  out.reserve(kLimitsSize);
  put_le(out, kLimitsVersion, 1);
  put_le(out, (l.rate ? kRateFlag : 0) | (l.max_in_flight ? kInFlightFlag : 0), 1);
  put_le(out, l.rate ? l.rate->count : 0, 4);
  put_le(out, static_cast<uint64_t>(l.rate ? l.rate->per.count() : 0), 8);
  put_le(out, l.rate ? l.rate->burst : 0, 4);
  put_le(out, l.max_in_flight.value_or(0), 4);
  return out;
}

Result<TopicLimits> decode_limits(std::string_view b) {
  if (b.size() != kLimitsSize)
    return bad_limits(std::to_string(b.size()) + " bytes, not " + std::to_string(kLimitsSize));
  if (static_cast<uint8_t>(b[0]) != kLimitsVersion)
    return bad_limits("version " + std::to_string(static_cast<uint8_t>(b[0])) + ", not 1");
  const auto flags = static_cast<uint8_t>(b[1]);
  if (flags == 0 || (flags & ~(kRateFlag | kInFlightFlag)) != 0)
    return bad_limits("flags " + std::to_string(flags) + " (1: a rate, 2: max_in_flight, or both)");
  const auto count = static_cast<uint32_t>(get_le(b, 2, 4));
  const auto per = static_cast<int64_t>(get_le(b, 6, 8));
  const auto burst = static_cast<uint32_t>(get_le(b, 14, 4));
  const auto in_flight = static_cast<uint32_t>(get_le(b, 18, 4));
  TopicLimits l;
  if (flags & kRateFlag) {
    if (count == 0 || per <= 0 || burst < 1 || burst > rules::kMaxBurst)
      return bad_limits("a rate of " + std::to_string(count) + " per " + std::to_string(per) +
                 " ns, burst " + std::to_string(burst));
    l.rate = TopicLimits::Rate{.count = count, .per = Duration(per), .burst = burst};
  } else if (count != 0 || per != 0 || burst != 0) {
    return bad_limits("rate fields set without the rate flag");
  }
  if (flags & kInFlightFlag) {
    if (in_flight == 0) return bad_limits("max_in_flight 0");
    l.max_in_flight = in_flight;
  } else if (in_flight != 0) {
    return bad_limits("max_in_flight set without its flag");
  }
  return l;
}

Result<std::vector<std::pair<std::string, TopicLimits>>> read_limits(
    Database& d, const std::function<Status(const Status&)>& on_damage) {
  std::vector<std::pair<std::string, TopicLimits>> out;
  const std::string lower = kLimitsPrefix;
  std::string upper = lower;
  upper.back() = static_cast<char>(upper.back() + 1);  // the prefix's end: '/' + 1
  Status st = for_each_in(
      d, d.meta(), lower, upper, "reading the topic limits",
      [&](std::string_view k, std::string_view v) -> Result<bool> {
        const std::string_view topic = k.substr(lower.size());
        Result<TopicLimits> l = decode_limits(v);
        if (l) {
          out.emplace_back(std::string(topic), *l);
          return true;
        }
        const Status damage = store_damage(
            d, Status(Errc::corrupt, "the limits of topic '" + std::string(topic) +
                                         "' in family 'meta' are unreadable (" +
                                         l.status().message() + "; bytes: " + hex(v) + ")"));
        if (Status s = on_damage ? on_damage(damage) : damage; !s.ok()) return s;
        return true;
      });
  if (!st.ok()) return st;
  return out;
}

}  // namespace delayq::wal
