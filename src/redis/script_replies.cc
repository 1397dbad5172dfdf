// Reading script and CLUSTER SLOTS replies (see script_replies.h).
#include "redis/script_replies.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string_view>
#include <utility>

#include "common/timing.h"
#include "common/totals.h"

namespace delayq::redis {

int64_t code_of(const Reply& r) {
  return r.type == Reply::Type::array && !r.elements.empty() ? r.elements[0].as_int(-1) : -1;
}

JobState to_state(int64_t stored) {
  switch (stored) {
    case kDelayed:
      return JobState::delayed;
    case kReady:
      return JobState::ready;
    case kReserved:
      return JobState::reserved;
    default:
      return JobState::dead;
  }
}

Duration duration_us(int64_t us) {
  constexpr int64_t kLimit = std::numeric_limits<int64_t>::max() / 1000;
  if (us > kLimit) return Duration::max();
  if (us < -kLimit) return Duration::min();
  return Duration(us * 1000);
}

TimePoint from_us(int64_t us) {
  return TimePoint(duration_us(us));
}

namespace {

// A number the script sent as text ("%.17g": a reply would have cut it to an integer); `fallback`
// when it is not one.
double read_double(const Reply& r, double fallback) {
  if (r.type == Reply::Type::integer) return static_cast<double>(r.integer);
  double v = fallback;
  const char* end = r.str.data() + r.str.size();
  const auto [at, ec] = std::from_chars(r.str.data(), end, v);
  return ec == std::errc() && at == end ? v : fallback;
}

}  // namespace

RetryPolicy read_policy(const Reply& p, uint32_t max_attempts) {
  static const Reply kNone;
  const auto at = [&](size_t k) -> const Reply& {
    return k < p.elements.size() ? p.elements[k] : kNone;
  };
  RetryPolicy r;
  switch (at(0).as_int(-1)) {
    case 0:
      r.kind = RetryPolicy::Kind::fixed;
      break;
    case 1:
      r.kind = RetryPolicy::Kind::list;
      break;
    default:
      r.kind = RetryPolicy::Kind::exponential;
  }
  r.max_attempts = max_attempts;
  r.base = duration_us(at(1).as_int());
  r.factor = read_double(at(2), r.factor);
  r.cap = duration_us(at(3).as_int());
  r.jitter = read_double(at(4), r.jitter);
  for (const Reply& d : at(5).elements) r.delays.push_back(duration_us(d.as_int()));
  return r;
}

uint32_t read_priority(const Reply& r) {
  const int64_t p = r.as_int(-1);
  return p >= 0 && p <= int64_t{std::numeric_limits<uint32_t>::max()} ? static_cast<uint32_t>(p) : kDefaultPriority;
}

JobInfo read_job_info(std::vector<Reply>& e, size_t i, std::string topic) {
  JobInfo j;
  j.id = e[i].str;
  j.topic = std::move(topic);
  j.state = to_state(e[i + 1].as_int());
  j.attempts = static_cast<uint32_t>(e[i + 2].as_int());
  j.max_attempts = static_cast<uint32_t>(e[i + 3].as_int());
  j.due = from_us(e[i + 4].as_int());
  j.lease_deadline = from_us(e[i + 5].as_int());
  j.ttr = duration_us(e[i + 6].as_int());
  j.body = std::move(e[i + 7].str);
  j.retry = read_policy(e[i + 8], j.max_attempts);
  j.priority = read_priority(e[i + 9]);
  // A dead job's lease field holds when it died (lua/prelude.lua, to_dead()).
  if (j.state == JobState::dead) j.dead_since = j.lease_deadline;
  return j;
}

bool read_deliveries(std::vector<Reply>& e, std::vector<Delivery>* out) {
  if (e.empty() || (e.size() - 1) % kDeliveryFields != 0) return false;
  for (size_t at = 1; at + kDeliveryFields <= e.size(); at += kDeliveryFields) {
    Delivery d;
    d.id = std::move(e[at].str);
    d.topic = std::move(e[at + 1].str);
    d.body = std::move(e[at + 2].str);
    d.attempt = static_cast<uint32_t>(e[at + 3].as_int());
    d.max_attempts = static_cast<uint32_t>(e[at + 4].as_int());
    d.token = Token{d.id, static_cast<uint64_t>(e[at + 5].as_int())};
    d.due = from_us(e[at + 6].as_int());
    d.lease_deadline = from_us(e[at + 7].as_int());
    d.priority = read_priority(e[at + 8]);
    out->push_back(std::move(d));
  }
  return true;
}

std::optional<Duration> read_next_wait(const std::vector<Reply>& e) {
  if (e.size() < 2) return std::nullopt;
  const int64_t us = e[1].as_int(-1);
  if (us < 0) return std::nullopt;
  return duration_us(us);
}

namespace {

TimePoint server_now(int64_t when_us, int64_t away_us) {
  int64_t now_us = 0;
  if (__builtin_sub_overflow(when_us, away_us, &now_us))
    return away_us < 0 ? TimePoint::max() : TimePoint::min();
  return from_us(now_us);
}

}  // namespace

TimePoint read_server_now(int64_t when_us, const std::vector<Reply>& e) {
  return server_now(when_us, e[1].as_int());
}

namespace {

// One lateness counter of the stats hash: late:<f|r>:<00..22|su|cl>:<topic>.
void read_late(std::string_view k, uint64_t v, Stats& st) {
  constexpr size_t kPrefix = std::string_view("late:f:00:").size();
  if (k.size() <= kPrefix || (k[5] != 'f' && k[5] != 'r') || k[6] != ':' || k[9] != ':') return;
  const std::string_view what = k.substr(7, 2);
  size_t bucket = 0;
  if (what != "su" && what != "cl") {
    const auto [end, ec] = std::from_chars(what.data(), what.data() + what.size(), bucket);
    if (ec != std::errc() || end != what.data() + what.size() || bucket >= timing::kBuckets) return;
  }
  TopicTiming& t = st.timing[std::string(k.substr(kPrefix))];
  Lateness& l = k[5] == 'f' ? t.first : t.retry;
  if (what == "su") {
    l.sum_seconds += static_cast<double>(v) * 1e-6;
  } else if (what == "cl") {
    l.clamped += v;
  } else {
    l.buckets[bucket] += v;
    l.count += v;
  }
}

uint64_t count_at(const std::vector<Reply>& e, size_t i) {
  return static_cast<uint64_t>(std::max<int64_t>(0, e[i].as_int()));
}

}  // namespace

void read_totals(const Reply& kv, Stats& st) {
  // The stats hash's field names (lua/*.lua, count()) are the totals' names.
  for (size_t i = 0; i + 1 < kv.elements.size(); i += 2) {
    const std::string& k = kv.elements[i].str;
    const uint64_t v = static_cast<uint64_t>(kv.elements[i + 1].as_int());
    if (k.starts_with("late:")) read_late(k, v, st);
    for (const auto& [name, total] : kTotalNames)
      if (k == name) st.*total += v;
  }
}

std::optional<TopicStats> read_topic_counts(const Reply& c) {
  const std::vector<Reply>& e = c.elements;
  if (e.size() < 4) return std::nullopt;
  return TopicStats{count_at(e, 0), count_at(e, 1), count_at(e, 2), count_at(e, 3)};
}

std::optional<TopicTiming> read_topic_timing(const Reply& c) {
  const std::vector<Reply>& e = c.elements;
  if (e.size() != 9) return std::nullopt;
  // Jobs due before each end, each count including the one before (a well-formed reply).
  const uint64_t delayed = count_at(e, 0);
  const uint64_t minute = count_at(e, 4), hour = count_at(e, 5), day = count_at(e, 6),
                 week = count_at(e, 7);
  if (!(minute <= hour && hour <= day && day <= week && week <= delayed)) return std::nullopt;
  TopicTiming t;
  t.due = DueWindows{minute, hour - minute, day - hour, week - day, delayed - week};
  t.oldest_ready = duration_us(std::max<int64_t>(0, e[8].as_int()));
  return t;
}

Status bad_reply(ScriptId script) {
  return Status(Errc::corrupt,
                "unexpected reply from the redis script '" + library().scripts[script].name + "'");
}

Result<JobAnswer> read_job_answer(Reply r, ScriptId script) {
  const int64_t code = code_of(r);
  const std::vector<Reply>& e = r.elements;
  switch (code) {
    case kOk:
      return JobAnswer(std::move(r));
    case kWrongTopic:
      if (e.size() < 2) break;
      return JobAnswer(Elsewhere{e[1].str});
    case kNotFound:
      return JobAnswer(Refusal{});
    case kStaleToken:
      if (e.size() < 3) break;
      return JobAnswer(
          Refusal{code, to_state(e[1].as_int()), static_cast<uint32_t>(e[2].as_int()), 0});
    case kInvalidState:
      if (e.size() < 2) break;
      return JobAnswer(Refusal{code, to_state(e[1].as_int()), 0, 0});
    case kInvalidArgument:
      if (e.size() < 2) break;
      return JobAnswer(Refusal{code, JobState::delayed, 0, e[1].as_int()});
    default:
      break;
  }
  return bad_reply(script);
}

Status refusal_status(const Refusal& r, const JobCall& call, const Rules& rules) {
  const bool reschedule = call.script == kReschedule;
  switch (r.code) {
    case kNotFound:
      return Rules::not_found(call.id);
    case kStaleToken:
      if (call.token == nullptr) break;
      return Rules::stale(*call.token, r.state, r.attempts);
    case kInvalidState:
      if (reschedule) return rules.reschedule_refused(call.id, r.state, call.when, call.client_now);
      if (call.script == kRequeueDead) return Rules::requeue_refused(call.id, r.state);
      break;
    case kInvalidArgument:
      // Too far away by the server's clock: the engine's words, with the server's now.
      if (!reschedule) break;
      return rules.reschedule_refused(call.id, JobState::delayed, from_us(call.when_us),
                                      server_now(call.when_us, r.beyond_us));
    default:
      break;
  }
  return bad_reply(call.script);
}

Result<std::optional<JobState>> read_push(const Reply& r) {
  const int64_t code = code_of(r);
  if (code == kOk) return std::optional<JobState>();
  if (code != kDuplicateId || r.elements.size() < 2) return bad_reply(kPush);
  return std::optional<JobState>(to_state(r.elements[1].as_int()));
}

Result<std::vector<std::optional<JobState>>> read_push_many(const Reply& r, size_t jobs) {
  if (code_of(r) != kOk || r.elements.size() != jobs + 1) return bad_reply(kPushMany);
  std::vector<std::optional<JobState>> out;
  out.reserve(jobs);
  for (size_t k = 1; k <= jobs; ++k) {
    // -1 for stored now; anything else is the state of the job holding the id.
    const int64_t state = r.elements[k].as_int(-2);
    out.push_back(state == -1 ? std::nullopt : std::optional<JobState>(to_state(state)));
  }
  return out;
}

Result<Claimed> read_claim(Reply r) {
  std::vector<Reply>& e = r.elements;
  const int64_t code = code_of(r);
  Claimed c;
  if (code == kNothingReady && e.size() >= 2) {
    c.next = read_next_wait(e);
    return c;
  }
  if (code == kAdmitFirst && e.size() >= 3 && e.size() % 2 == 1) {
    for (size_t i = 1; i + 1 < e.size(); i += 2) {
      const int64_t topic = e[i].as_int(0), ready = e[i + 1].as_int(0);
      if (topic < 1 || ready < 1 || ready > UINT32_MAX) return bad_reply(kClaim);
      c.admit.emplace_back(static_cast<size_t>(topic - 1), static_cast<uint32_t>(ready));
    }
    return c;
  }
  if (code != kOk || e.size() < 1 + kDeliveryFields || !read_deliveries(e, &c.jobs))
    return bad_reply(kClaim);
  return c;
}

Result<std::vector<Delivery>> read_ack_claim(Reply r) {
  std::vector<Delivery> out;
  if (!read_deliveries(r.elements, &out)) return bad_reply(kAckClaim);
  return out;
}

Result<TimePoint> read_touch(const Reply& r) {
  if (r.elements.size() < 2) return bad_reply(kTouch);
  return from_us(r.elements[1].as_int());
}

Result<JobInfo> read_get(Reply r) {
  std::vector<Reply>& e = r.elements;
  if (e.size() < 2 + kJobInfoFields) return bad_reply(kGet);
  return read_job_info(e, 1, std::move(e[1 + kJobInfoFields].str));
}

void read_dead_list(Reply r, std::string_view topic, std::vector<JobInfo>* out) {
  std::vector<Reply>& e = r.elements;
  for (size_t i = 1; i + kJobInfoFields <= e.size(); i += kJobInfoFields)
    out->push_back(read_job_info(e, i, std::string(topic)));
}

Result<DeadBatch> read_dead_batch(const Reply& r, ScriptId script) {
  if (r.elements.size() < 3) return bad_reply(script);
  return DeadBatch{static_cast<uint64_t>(r.elements[1].as_int()),
                   static_cast<uint64_t>(r.elements[2].as_int())};
}

std::vector<SlotRange> read_slot_map(const Reply& r) {
  std::vector<SlotRange> out;
  for (const Reply& e : r.elements) {
    if (e.elements.size() < 3 || e.elements[2].elements.size() < 2) continue;
    const int64_t lo = e.elements[0].as_int(-1), hi = e.elements[1].as_int(-1);
    const std::string& host = e.elements[2].elements[0].str;
    const int64_t port = e.elements[2].elements[1].as_int(-1);
    if (lo < 0 || hi > 16383 || lo > hi || port <= 0 || port > 65535) continue;
    out.push_back(SlotRange{static_cast<int>(lo), static_cast<int>(hi), host == "?" ? "" : host,
                            static_cast<int>(port)});
  }
  return out;
}

bool parse_address(std::string_view addr, std::string& host, int& port) {
  const size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view p = addr.substr(colon + 1);
  const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  if (ec != std::errc() || end != p.data() + p.size() || port <= 0 || port > 65535) return false;
  host = std::string(addr.substr(0, colon));
  return true;
}

}  // namespace delayq::redis
