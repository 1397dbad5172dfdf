// The list_jobs() cursor codec (cursor.h).
#include "common/cursor.h"

#include <array>

namespace delayq::cursor {

namespace {

constexpr std::string_view kPrefix = "c1.";
constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
// The fixed part: state, fingerprint, the boundary key, the shard count; then the checksum.
constexpr size_t kFixed = 1 + 8 + 4 + 8 + 8 + 4 + 2;
constexpr size_t kSum = 8;
// Longer text than any cursor encode() writes is refused before it is decoded.
constexpr size_t kMaxText =
    kPrefix.size() + (kFixed + kSum + kMaxShards * (2 + kMaxPosition)) * 4 / 3 + 4;

// FNV-1a, 64 bits, from a basis of our own (so that the checksum of a cursor is not that of any
// other FNV use).
uint64_t fnv(std::string_view bytes, uint64_t h) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}
constexpr uint64_t kTopicBasis = 0xcbf29ce484222325ull;
constexpr uint64_t kSumBasis = 0x6a09e667f3bcc909ull;

void put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

struct Reader {
  std::string_view in;
  bool ok = true;
  uint64_t get(int bytes) {
    if (in.size() < static_cast<size_t>(bytes)) {
      ok = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(in[i])} << (8 * i);
    in.remove_prefix(static_cast<size_t>(bytes));
    return v;
  }
  std::string_view take(size_t n) {
    if (in.size() < n) {
      ok = false;
      return {};
    }
    std::string_view s = in.substr(0, n);
    in.remove_prefix(n);
    return s;
  }
};

std::string base64url(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  return out;
}

// The bytes, or nullopt: a character outside the alphabet, a length no encoding has, or unused
// low bits that are not zero (so each byte string has exactly one text).
std::optional<std::string> from_base64url(std::string_view text) {
  static const std::array<int8_t, 256> value = [] {
    std::array<int8_t, 256> v{};
    v.fill(-1);
    for (size_t i = 0; i < kAlphabet.size(); ++i)
      v[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
    return v;
  }();
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int8_t v = value[static_cast<unsigned char>(c)];
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if ((acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

Status refused(std::string_view why) {
  return Status(Errc::invalid_argument, std::string(why));
}

}  // namespace

uint64_t topic_fingerprint(std::string_view topic) {
  return fnv(topic, kTopicBasis);
}

std::string encode(const Cursor& c) {
  std::string b;
  put(b, static_cast<uint64_t>(c.state), 1);
  put(b, c.topic_fp, 8);
  put(b, c.boundary.priority, 4);
  put(b, static_cast<uint64_t>(c.boundary.at), 8);
  put(b, c.boundary.seq, 8);
  put(b, c.boundary.shard, 4);
  put(b, c.shards.size(), 2);
  for (const std::string& s : c.shards) {
    put(b, s.size(), 2);
    b += s;
  }
  put(b, fnv(b, kSumBasis), 8);
  return std::string(kPrefix) + base64url(b);
}

Result<Cursor> decode(std::string_view text, std::string_view topic, JobState state) {
  if (!text.starts_with(kPrefix))
    return refused("cursor is not a delayq cursor (it does not start with \"c1.\"); pass the "
                   "cursor of the previous page as it was, or none for the first page");
  if (text.size() > kMaxText) return refused("cursor is damaged (too long)");
  std::optional<std::string> bytes = from_base64url(text.substr(kPrefix.size()));
  if (!bytes) return refused("cursor is damaged (not base64url after \"c1.\")");
  if (bytes->size() < kFixed + kSum) return refused("cursor is damaged (too short)");
  const std::string_view body = std::string_view(*bytes).substr(0, bytes->size() - kSum);
  Reader sum{std::string_view(*bytes).substr(body.size())};
  if (sum.get(8) != fnv(body, kSumBasis)) return refused("cursor is damaged (checksum mismatch)");

  Reader r{body};
  Cursor c;
  const uint64_t s = r.get(1);
  if (s > static_cast<uint64_t>(JobState::dead)) return refused("cursor is damaged (bad state)");
  c.state = static_cast<JobState>(s);
  c.topic_fp = r.get(8);
  c.boundary.priority = static_cast<uint32_t>(r.get(4));
  c.boundary.at = static_cast<int64_t>(r.get(8));
  c.boundary.seq = r.get(8);
  c.boundary.shard = static_cast<uint32_t>(r.get(4));
  const uint64_t n = r.get(2);
  if (n > kMaxShards) return refused("cursor is damaged (too many shards)");
  for (uint64_t i = 0; i < n && r.ok; ++i) {
    const uint64_t len = r.get(2);
    if (len > kMaxPosition) return refused("cursor is damaged (a shard position is too long)");
    c.shards.emplace_back(r.take(len));
  }
  if (!r.ok || !r.in.empty()) return refused("cursor is damaged (bad length)");
  if (c.topic_fp != topic_fingerprint(topic))
    return refused("cursor belongs to another topic; a cursor is only good for the topic and "
                   "state of the page it came with");
  if (c.state != state)
    return refused("cursor is for state " + std::string(to_string(c.state)) + ", not " +
                   std::string(to_string(state)));
  return c;
}

std::string pack(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) {
    put(out, s.size(), 2);
    out += s;
  }
  return out;
}

std::optional<std::vector<std::string>> unpack(std::string_view bytes) {
  std::vector<std::string> out;
  Reader r{bytes};
  while (!r.in.empty()) {
    const uint64_t len = r.get(2);
    std::string_view s = r.take(len);
    if (!r.ok) return std::nullopt;
    out.emplace_back(s);
  }
  return out;
}

}  // namespace delayq::cursor
