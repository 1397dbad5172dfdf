// The disk tier's byte layout (far_codec.h).
#include "wal/far_codec.h"

#include <fmt/format.h>

#include "wal/codec.h"

namespace delayq::wal {

namespace {

constexpr uint8_t kHorizonVersion = 1;
constexpr uint8_t kCountVersion = 1;
constexpr uint8_t kSpanVersion = 1;  // the same layout as a count's

void put_be(std::string& out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_be(std::string_view b) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(b[i]);
  return v;
}

}  // namespace

std::string far_key(const engine::FarKey& k) {
  std::string out;
  out.reserve(kFarKeySize);
  put_be(out, static_cast<uint64_t>(k.due.time_since_epoch().count()));
  put_be(out, k.seq);
  return out;
}

std::optional<engine::FarKey> decode_far_key(std::string_view bytes) {
  if (bytes.size() != kFarKeySize) return std::nullopt;
  return engine::FarKey{TimePoint(Duration(static_cast<int64_t>(get_be(bytes)))),
                        get_be(bytes.substr(8))};
}

std::string far_topic_prefix(std::string_view topic) {
  std::string out;
  out.reserve(4 + topic.size() + kFarKeySize);
  const auto n = static_cast<uint32_t>(topic.size());
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out.append(topic);
  return out;
}

std::string far_topic_key(std::string_view topic, const engine::FarKey& k) {
  return far_topic_prefix(topic) + far_key(k);
}

std::optional<engine::FarKey> decode_far_topic_key(std::string_view bytes) {
  if (bytes.size() < 4 + kFarKeySize) return std::nullopt;
  uint64_t n = 0;
  for (size_t i = 0; i < 4; ++i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  if (bytes.size() != 4 + n + kFarKeySize) return std::nullopt;
  return decode_far_key(bytes.substr(4 + n));
}

Result<engine::JobRecord> decode_far_record(std::string_view key, std::string_view value) {
  const std::optional<engine::FarKey> k = decode_far_key(key);
  if (!k)
    return Status(Errc::corrupt,
                  fmt::format("family 'far' holds a key of {} bytes (expected 16): {}", key.size(),
                              hex(key.substr(0, 32))));
  Result<engine::JobRecord> r = decode_record(k->seq, value, kFarFamily);
  if (r.ok() && r->due != k->due)
    return Status(Errc::corrupt,
                  fmt::format("record seq {} in family 'far': due {} is not its key's {}", k->seq,
                              r->due.time_since_epoch().count(),
                              k->due.time_since_epoch().count()));
  return r;
}

std::string encode_horizon(const engine::FarKey& k) {
  return std::string(1, static_cast<char>(kHorizonVersion)) + far_key(k);
}

Result<engine::FarKey> decode_horizon(std::string_view bytes) {
  if (bytes.size() != 1 + kFarKeySize || static_cast<uint8_t>(bytes[0]) != kHorizonVersion)
    return Status(Errc::corrupt,
                  "the horizon in family 'meta' is unreadable (bytes: " + hex(bytes) + ")");
  return *decode_far_key(bytes.substr(1));
}

std::string encode_span(Duration span) {
  std::string out = encode_count(static_cast<uint64_t>(span.count()));
  out[0] = static_cast<char>(kSpanVersion);
  return out;
}

Result<Duration> decode_span(std::string_view bytes) {
  Result<uint64_t> n = decode_count(bytes);
  if (!n || static_cast<uint8_t>(bytes[0]) != kSpanVersion || static_cast<int64_t>(*n) <= 0)
    return Status(Errc::corrupt, "the horizon span in family 'meta' is unreadable (bytes: " +
                                     hex(bytes.substr(0, 32)) + ")");
  return Duration(static_cast<int64_t>(*n));
}

std::string far_count_key(std::string_view topic) {
  return std::string(kFarCountPrefix) + std::string(topic);
}

std::string encode_count(uint64_t n) {
  std::string out(1, static_cast<char>(kCountVersion));
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out;
}

Result<uint64_t> decode_count(std::string_view bytes) {
  if (bytes.size() != 9 || static_cast<uint8_t>(bytes[0]) != kCountVersion)
    return Status(Errc::corrupt, "a count in family 'meta' is unreadable (bytes: " +
                                     hex(bytes.substr(0, 32)) + ")");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[1 + i]);
  return n;
}

}  // namespace delayq::wal
