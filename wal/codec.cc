// The journal's byte layout (codec.h; docs/journal-format.md for a reader of the files).
//
// A job record (record version 1), all integers little-endian, fixed width:
//
//   u8  record version (1)
//   u64 seq               must equal the key's seq
//   u8  state             JobState, 0..3
//   i64 due               nanoseconds since the epoch
//   i64 lease_deadline    nanoseconds since the epoch
//   i64 ttr               nanoseconds
//   u32 attempts
//   u64 fence
//   str id                str = u32 byte count, then the bytes
//   str topic
//   str body
//   u8  retry.kind        RetryPolicy::Kind, 0..2
//   u32 retry.max_attempts
//   i64 retry.base        nanoseconds
//   u64 retry.factor      IEEE-754 bits of the double
//   i64 retry.cap         nanoseconds
//   u64 retry.jitter      IEEE-754 bits of the double
//   u32 retry.delays count, then that many i64 nanoseconds
//
// and nothing after. Record version 2 is the same (its first byte 2), then
//
//   u32 priority          JobSpec::priority
//
// and nothing after. A record is written as version 2 only when its priority is not
// kDefaultPriority: a queue that never uses priorities writes exactly what builds before
// version 2 wrote, and they can still open it (the store's format rises with the first version
// 2 record: journal.cc).
#include "wal/codec.h"

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <utility>

namespace delayq::wal {

namespace {

// Version 1: every field but the priority (kDefaultPriority); version 2 adds it at the end.
constexpr uint8_t kRecordVersion = 2;
// Version 2 added `released` after the nine counters of version 1; version 1 is still read
// (released = 0), so a store written before keeps its totals.
constexpr uint8_t kTotalsVersion = 2;
constexpr size_t kTotalsInVersion1 = 9;
// Version 2 added `seqs` after next_id. Version 1 is still read (seqs = 0), and still written
// while seqs is 0 (a store without a disk tier does not record them), so that such a store stays
// readable by the builds before version 2.
constexpr uint8_t kCountersVersion = 2;

// ---- writing --------------------------------------------------------------------------------

template <class Int>
void put_le(std::string& out, Int v) {
  char b[sizeof(Int)];
  for (size_t i = 0; i < sizeof(Int); ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out.append(b, sizeof(Int));
}

void put_u8(std::string& out, uint8_t v) {
  out.push_back(static_cast<char>(v));
}
void put_u32(std::string& out, uint32_t v) {
  put_le(out, v);
}
void put_u64(std::string& out, uint64_t v) {
  put_le(out, v);
}
void put_i64(std::string& out, int64_t v) {
  put_u64(out, static_cast<uint64_t>(v));
}
void put_f64(std::string& out, double v) {
  put_u64(out, std::bit_cast<uint64_t>(v));
}

void put_str(std::string& out, const std::string& s) {
  // Strings past 4 GiB cannot be encoded; the engine's limits (255-byte ids and topics, a
  // configured body cap) keep records far below that.
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

// ---- reading --------------------------------------------------------------------------------

// Reads fields off the front of a byte string. Every read checks the bytes that are left; the
// first failure is remembered (with the field it was reading) and later reads do nothing.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  size_t left() const { return in_.size() - pos_; }

  void fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }
  // Fails unless every byte was read; `after` names the last field.
  void expect_end(const std::string& after) {
    if (!failed() && left() != 0) fail(std::to_string(left()) + " bytes after " + after);
  }

  uint8_t u8(const char* field) {
    uint8_t v = 0;
    if (take(1, field)) v = static_cast<uint8_t>(in_[pos_ - 1]);
    return v;
  }
  uint32_t u32(const char* field) { return le<uint32_t>(field); }
  uint64_t u64(const char* field) { return le<uint64_t>(field); }
  int64_t i64(const char* field) { return static_cast<int64_t>(u64(field)); }
  double f64(const char* field) { return std::bit_cast<double>(u64(field)); }
  Duration duration(const char* field) { return Duration(i64(field)); }
  TimePoint time_point(const char* field) { return TimePoint(Duration(i64(field))); }

  std::string str(const char* field) {
    const uint32_t n = u32(field);
    if (failed()) return {};
    if (n > left()) {
      fail(fmt::format("field '{}' claims {} bytes but only {} are left", field, n, left()));
      return {};
    }
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }

 private:
  template <class Int>
  Int le(const char* field) {
    Int v = 0;
    if (take(sizeof(Int), field))
      for (size_t i = 0; i < sizeof(Int); ++i)
        v |= static_cast<Int>(static_cast<uint8_t>(in_[pos_ - sizeof(Int) + i])) << (8 * i);
    return v;
  }

  bool take(size_t n, const char* field) {
    if (failed()) return false;
    if (left() < n) {
      fail(fmt::format("truncated in field '{}' (needs {} bytes, {} left)", field, n, left()));
      return false;
    }
    pos_ += n;
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0;
  std::string error_;
};

// The refusal of an unreadable meta value (`what`: "totals", "counters").
Status unreadable_meta(const char* what, const Reader& in, std::string_view bytes) {
  return Status(Errc::corrupt, std::string("the ") + what + " in family 'meta' are unreadable: " +
                                   in.error() + " (bytes: " + hex(bytes.substr(0, 32)) + ")");
}

void put_retry(std::string& out, const RetryPolicy& p) {
  put_u8(out, static_cast<uint8_t>(p.kind));
  put_u32(out, p.max_attempts);
  put_i64(out, p.base.count());
  put_f64(out, p.factor);
  put_i64(out, p.cap.count());
  put_f64(out, p.jitter);
  put_u32(out, static_cast<uint32_t>(p.delays.size()));
  for (Duration d : p.delays) put_i64(out, d.count());
}

RetryPolicy read_retry(Reader& in) {
  RetryPolicy p;
  const uint8_t kind = in.u8("retry.kind");
  if (!in.failed() && kind > static_cast<uint8_t>(RetryPolicy::Kind::exponential))
    in.fail("retry kind " + std::to_string(kind) + " is not a RetryPolicy::Kind");
  p.kind = static_cast<RetryPolicy::Kind>(kind);
  p.max_attempts = in.u32("retry.max_attempts");
  p.base = in.duration("retry.base");
  p.factor = in.f64("retry.factor");
  p.cap = in.duration("retry.cap");
  p.jitter = in.f64("retry.jitter");
  const uint32_t n = in.u32("retry.delays count");
  if (in.failed()) return p;
  if (n > in.left() / 8) {
    in.fail(fmt::format("retry.delays claims {} entries ({} bytes) but only {} bytes are left", n,
                        uint64_t{n} * 8, in.left()));
    return p;
  }
  p.delays.reserve(n);
  for (uint32_t i = 0; i < n && !in.failed(); ++i) p.delays.push_back(in.duration("retry.delays"));
  return p;
}

}  // namespace

std::string job_key(uint64_t seq) {
  std::string k(kJobKeySize, '\0');
  for (size_t i = 0; i < kJobKeySize; ++i)
    k[i] = static_cast<char>((seq >> (8 * (kJobKeySize - 1 - i))) & 0xff);
  return k;
}

uint64_t job_seq(std::string_view key) {
  uint64_t v = 0;
  for (size_t i = 0; i < kJobKeySize; ++i) v = (v << 8) | static_cast<uint8_t>(key[i]);
  return v;
}

std::string encode_record(const engine::JobRecord& r) {
  std::string out;
  const bool prioritised = r.priority != kDefaultPriority;
  out.reserve(1 + 8 + 1 + 8 * 3 + 4 + 8 + 12 + r.id.size() + r.topic.size() + r.body.size() + 1 +
              4 + 8 * 4 + 4 + 8 * r.retry.delays.size() + (prioritised ? 4 : 0));
  put_u8(out, prioritised ? kRecordVersion : 1);
  put_u64(out, r.seq);
  put_u8(out, static_cast<uint8_t>(r.state));
  put_i64(out, r.due.time_since_epoch().count());
  put_i64(out, r.lease_deadline.time_since_epoch().count());
  put_i64(out, r.ttr.count());
  put_u32(out, r.attempts);
  put_u64(out, r.fence);
  put_str(out, r.id);
  put_str(out, r.topic);
  put_str(out, r.body);
  put_retry(out, r.retry);
  if (prioritised) put_u32(out, r.priority);
  return out;
}

bool needs_version_2(const engine::JobRecord& r) {
  return r.priority != kDefaultPriority;
}

Result<engine::JobRecord> decode_record(uint64_t seq, std::string_view bytes,
                                        std::string_view family) {
  auto corrupt = [seq, family](const std::string& why) {
    return Status(Errc::corrupt, fmt::format("record seq {} in family '{}': {}", seq, family, why));
  };
  Reader in(bytes);
  const uint8_t version = in.u8("record version");
  if (in.failed()) return corrupt("empty value");
  if (version != 1 && version != kRecordVersion)
    return corrupt(fmt::format("unknown record version {} (this build reads 1 and {})", version,
                               kRecordVersion));

  engine::JobRecord r;
  r.seq = in.u64("seq");
  if (!in.failed() && r.seq != seq)
    in.fail("holds seq " + std::to_string(r.seq) + ", not its key's");
  const uint8_t state = in.u8("state");
  if (!in.failed() && state > static_cast<uint8_t>(JobState::dead))
    in.fail("state " + std::to_string(state) + " is not a JobState");
  r.state = static_cast<JobState>(state);
  r.due = in.time_point("due");
  r.lease_deadline = in.time_point("lease_deadline");
  r.ttr = in.duration("ttr");
  r.attempts = in.u32("attempts");
  r.fence = in.u64("fence");
  r.id = in.str("id");
  r.topic = in.str("topic");
  r.body = in.str("body");
  r.retry = read_retry(in);
  if (version == 2) {
    r.priority = in.u32("priority");
    // encode_record() writes the default priority as version 1: only damage (or another writer)
    // puts it in a version 2 record, and a record read back must encode to the same bytes.
    if (!in.failed() && r.priority == kDefaultPriority)
      in.fail("record version 2 holds the default priority 1024, which is written as version 1");
  }
  if (in.failed()) return corrupt(in.error());
  if (in.left() != 0)
    return corrupt(std::to_string(in.left()) + " unexpected bytes after the last field");
  return r;
}

std::string encode_format(uint32_t version) {
  return std::to_string(version);
}

std::optional<uint32_t> decode_format(std::string_view text) {
  // Decimal digits, no sign, no padding beyond what fits in 32 bits.
  if (text.empty() || text.size() > 10) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v == 0 || v > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(v);
}

std::string encode_totals(const Stats& t) {
  std::string out;
  put_u8(out, kTotalsVersion);
  Stats copy = t;
  engine::for_each_total(copy, t, [&](uint64_t& v, uint64_t) { put_u64(out, v); });
  return out;
}

Result<Stats> decode_totals(std::string_view bytes) {
  Reader in(bytes);
  const uint8_t version = in.u8("version");
  if (!in.failed() && version != kTotalsVersion && version != 1)
    return Status(Errc::corrupt,
                  fmt::format("the totals in family 'meta' have version {}, expected 1 or {}",
                              version, kTotalsVersion));
  Stats t;
  const size_t stored = version == 1 ? kTotalsInVersion1 : SIZE_MAX;
  size_t read = 0;
  engine::for_each_total(t, t, [&](uint64_t& v, uint64_t) {
    if (read++ < stored) v = in.u64("a total");
  });
  in.expect_end("the last total");
  if (in.failed()) return unreadable_meta("totals", in, bytes);
  return t;
}

std::string encode_counters(const engine::Counters& c) {
  std::string out;
  put_u8(out, c.seqs == 0 ? 1 : kCountersVersion);
  put_u64(out, c.fences);
  put_u64(out, c.next_id);
  if (c.seqs != 0) put_u64(out, c.seqs);
  return out;
}

Result<engine::Counters> decode_counters(std::string_view bytes) {
  Reader in(bytes);
  const uint8_t version = in.u8("version");
  if (!in.failed() && version != kCountersVersion && version != 1)
    in.fail(fmt::format("version {}, expected 1 or {}", version, kCountersVersion));
  engine::Counters c;
  c.fences = in.u64("fences");
  c.next_id = in.u64("next_id");
  if (version == 1) {
    in.expect_end("next_id");
  } else {
    c.seqs = in.u64("seqs");
    in.expect_end("seqs");
  }
  if (in.failed()) return unreadable_meta("counters", in, bytes);
  return c;
}

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

}  // namespace delayq::wal
