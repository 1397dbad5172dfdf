// A schedule's stored record (record.h): little-endian, fixed fields first, then the strings,
// each a u32 length and its bytes.
#include "schedule/record.h"

#include <bit>
#include <cstring>

namespace delayq::schedule {

namespace {

// The flags byte: which of the optional fields hold a value, and the pause.
enum Flag : uint8_t { kPaused = 1 << 0, kStart = 1 << 1, kEnd = 1 << 2, kNext = 1 << 3 };
constexpr uint8_t kLastFired = 1 << 4, kRetry = 1 << 5, kKnownFlags = (1 << 6) - 1;

class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void i64(int64_t v) { le(static_cast<uint64_t>(v), 8); }
  void time(const std::optional<TimePoint>& t) { i64(t ? t->time_since_epoch().count() : 0); }
  void f64(double v) { u64(std::bit_cast<uint64_t>(v)); }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  std::string take() { return std::move(out_); }

 private:
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && in_.empty(); }
  uint8_t u8() { return static_cast<uint8_t>(le(1)); }
  uint32_t u32() { return static_cast<uint32_t>(le(4)); }
  uint64_t u64() { return le(8); }
  int64_t i64() { return static_cast<int64_t>(le(8)); }
  TimePoint time() { return TimePoint(Duration(i64())); }
  double f64() { return std::bit_cast<double>(u64()); }
  std::string str() {
    const uint32_t n = u32();
    if (!ok_ || n > in_.size()) {
      ok_ = false;
      return {};
    }
    std::string s(in_.substr(0, n));
    in_.remove_prefix(n);
    return s;
  }

 private:
  uint64_t le(size_t n) {
    if (!ok_ || in_.size() < n) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(in_[i])} << (8 * i);
    in_.remove_prefix(n);
    return v;
  }
  std::string_view in_;
  bool ok_ = true;
};

Status corrupt(const std::string& why) {
  return Status(Errc::corrupt, "schedule record: " + why);
}

}  // namespace

std::string schedule_key(std::string_view id) {
  return std::string(kSchedulePrefix) + std::string(id);
}

std::string encode_schedule(const StoredSchedule& s) {
  const ScheduleSpec& sp = s.spec;
  Writer w;
  w.u8(kScheduleVersion);
  uint8_t flags = 0;
  if (s.paused) flags |= kPaused;
  if (sp.start) flags |= kStart;
  if (sp.end) flags |= kEnd;
  if (s.state.next) flags |= kNext;
  if (s.state.last_fired) flags |= kLastFired;
  if (sp.job.retry) flags |= kRetry;
  w.u8(flags);
  w.u8(static_cast<uint8_t>(sp.catch_up));
  w.u8(static_cast<uint8_t>(sp.overlap));
  w.u32(sp.catch_up_max);
  w.i64(s.anchor.time_since_epoch().count());
  w.time(sp.start);
  w.time(sp.end);
  w.time(s.state.next);
  w.time(s.state.last_fired);
  w.u64(s.state.fired);
  w.u64(s.state.skipped_overlap);
  w.u64(s.state.skipped_catch_up);
  w.i64(sp.job.ttr.count());
  w.u32(sp.job.priority);
  if (const auto& r = sp.job.retry) {
    w.u8(static_cast<uint8_t>(r->kind));
    w.u32(r->max_attempts);
    w.i64(r->base.count());
    w.f64(r->factor);
    w.i64(r->cap.count());
    w.f64(r->jitter);
    w.u32(static_cast<uint32_t>(r->delays.size()));
    for (Duration d : r->delays) w.i64(d.count());
  }
  w.str(sp.id);
  w.str(sp.rule);
  w.str(sp.zone);
  w.str(sp.job.topic);
  w.str(sp.job.body);
  return w.take();
}

Result<StoredSchedule> decode_schedule(std::string_view bytes) {
  Reader r(bytes);
  StoredSchedule s;
  ScheduleSpec& sp = s.spec;
  const uint8_t version = r.u8();
  if (r.ok() && version != kScheduleVersion)
    return corrupt("version " + std::to_string(version) + " is not one this build knows (1)");
  const uint8_t flags = r.u8();
  if (r.ok() && (flags & ~kKnownFlags) != 0)
    return corrupt("flags " + std::to_string(flags) + " hold bits this build does not know");
  const uint8_t catch_up = r.u8(), overlap = r.u8();
  if (r.ok() && (catch_up > 2 || overlap > 1))
    return corrupt("catch-up " + std::to_string(catch_up) + " or overlap " +
                   std::to_string(overlap) + " is not a policy");
  sp.catch_up = static_cast<ScheduleSpec::CatchUp>(catch_up);
  sp.overlap = static_cast<ScheduleSpec::Overlap>(overlap);
  sp.catch_up_max = r.u32();
  s.anchor = r.time();
  s.paused = (flags & kPaused) != 0;
  const TimePoint start = r.time(), end = r.time(), next = r.time(), last = r.time();
  if (flags & kStart) sp.start = start;
  if (flags & kEnd) sp.end = end;
  if (flags & kNext) s.state.next = next;
  if (flags & kLastFired) s.state.last_fired = last;
  s.state.fired = r.u64();
  s.state.skipped_overlap = r.u64();
  s.state.skipped_catch_up = r.u64();
  sp.job.ttr = Duration(r.i64());
  sp.job.priority = r.u32();
  if (flags & kRetry) {
    RetryPolicy p;
    const uint8_t kind = r.u8();
    if (r.ok() && kind > 2) return corrupt("retry kind " + std::to_string(kind) + " is unknown");
    p.kind = static_cast<RetryPolicy::Kind>(kind);
    p.max_attempts = r.u32();
    p.base = Duration(r.i64());
    p.factor = r.f64();
    p.cap = Duration(r.i64());
    p.jitter = r.f64();
    const uint32_t n = r.u32();
    if (r.ok() && n > bytes.size() / 8) return corrupt("retry delay count is beyond the record");
    for (uint32_t i = 0; i < n && r.ok(); ++i) p.delays.push_back(Duration(r.i64()));
    sp.job.retry = std::move(p);
  }
  sp.id = r.str();
  sp.rule = r.str();
  sp.zone = r.str();
  sp.job.topic = r.str();
  sp.job.body = r.str();
  if (!r.ok()) return corrupt("the record ends early (" + std::to_string(bytes.size()) + " bytes)");
  if (!r.done()) return corrupt("bytes follow the record's last field");
  return s;
}

}  // namespace delayq::schedule
