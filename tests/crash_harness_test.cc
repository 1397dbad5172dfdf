// The crash harness of the durable store.
//
// A driver (the test) forks a worker process that opens a store (system clock, delays of up to
// 300 ms, a 200 ms ttr) and runs a mixed load on it from two threads: push, reserve, ack, nack,
// cancel, reschedule. The worker reports over a pipe every call's outcome once the call has
// returned and, before each call, an intent record, so that the driver knows which calls were in
// flight when the worker died. The driver kills the worker with SIGKILL after a random 10-80 ms,
// reopens the store itself and checks what the reports promise:
//
//  - a push reported successful is in the store, its body byte for byte (binary bytes and NULs
//    included), unless an ack or cancel of it was reported or in flight;
//  - a job whose ack or cancel was reported successful never comes back: get() is not_found, it
//    is never delivered again, and the store holds no job the reports do not allow;
//  - attempts never go down, nor jump: get().attempts is the number of deliveries reported (one
//    more for at most one job per reserve() in flight at the kill), and each delivery's attempt
//    is the next one;
//  - nothing is delivered early: at each reservation the worker checks the clock and the instant
//    of the reservation against the delivery's due time and against a lower bound the harness
//    keeps for the job (push time + delay, the reschedule target, nack time + delay, reservation
//    + ttr + retry delay), and reports a violation, which fails the test;
//  - a dead-lettered job used up its max_attempts (nothing here dead-letters otherwise).
//
// What the reopened store shows settles the calls that were in flight (a job found present
// exists from then on, one found missing stays missing). Cycles alternate Sync::always and
// Sync::none, and 1 and 2 shards. After the last cycle the driver drains the store: every job
// still owed must be delivered (or be dead after max_attempts deliveries) within 10 s.
//
// Environment: DELAYQ_CRASH_CYCLES=N sets the number of kill cycles (default 200, 40 under
// AddressSanitizer; a soak: 10000). DELAYQ_CRASH_SEED=S replays a run's choices (its timings
// differ, so a replay is likely, not certain, to hit the same interleaving). Every failure
// message names the seed, and a failure about a job shows the job's recent history.
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "delayq/store.h"

#if defined(__SANITIZE_ADDRESS__)
#define DELAYQ_CRASH_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DELAYQ_CRASH_UNDER_ASAN 1
#endif
#endif
#ifndef DELAYQ_CRASH_UNDER_ASAN
#define DELAYQ_CRASH_UNDER_ASAN 0
#endif

namespace delayq {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

// ---- the load's parameters ----------------------------------------------------------------------

constexpr bool kUnderAsan = DELAYQ_CRASH_UNDER_ASAN != 0;
// Kill cycles by default: the ASan build's processes are several times slower.
constexpr int kDefaultCycles = kUnderAsan ? 40 : 200;
// How long a worker runs before the SIGKILL: counted from its report that the store is open,
// or (one cycle in four) from its fork.
constexpr int kMinRunMs = 10;
constexpr int kMaxRunMs = 80;
// The worker's threads: each owns two topics and the jobs on them (ids with job % kThreads ==
// its index), so its calls never race the other's on one job, while their writes to the store
// overlap (and share fsyncs, with Sync::always).
constexpr size_t kThreads = 2;
const std::array<std::string, 2 * kThreads> kTopics = {"crash-a", "crash-b", "crash-c", "crash-d"};
constexpr Duration kMaxPushDelay = 300ms;
constexpr Duration kTtr = 200ms;
constexpr Duration kRetryDelay = 20ms;
constexpr uint32_t kMaxAttempts = 50;  // generous: nothing dead-letters unless nacked that often
constexpr size_t kLiveCap = 96;        // the worker stops pushing above this many live jobs
constexpr auto kDrainLimit = 10s;

RetryPolicy harness_policy() {
  return RetryPolicy::fixed(kRetryDelay, kMaxAttempts);
}

TimePoint wall_now() {
  return SystemClock::instance().now();
}
int64_t ns_of(TimePoint t) {
  return t.time_since_epoch().count();
}
TimePoint at_ns(int64_t ns) {
  return TimePoint(Duration(ns));
}

std::string ms_text(Duration d) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f ms", static_cast<double>(d.count()) / 1e6);
  return buf;
}

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string job_id(uint64_t job) {
  return "job-" + std::to_string(job);
}

std::optional<uint64_t> parse_job_id(std::string_view id) {
  constexpr std::string_view prefix = "job-";
  if (id.size() <= prefix.size() || id.substr(0, prefix.size()) != prefix) return std::nullopt;
  uint64_t v = 0;
  for (char c : id.substr(prefix.size())) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

size_t owner_of(uint64_t job) {
  return job % kThreads;
}
const std::string& topic_of(uint64_t job) {
  return kTopics[2 * owner_of(job) + (job / kThreads) % 2];
}
std::span<const std::string> topics_of_thread(size_t t) {
  return std::span<const std::string>(kTopics).subspan(2 * t, 2);
}

// The body pushed for a job: a function of the run's salt and the job, so both processes know
// it. Empty, short, or up to 16 KiB; arbitrary bytes, with a NUL and a 0xff in every body of two
// bytes or more.
std::string body_of(uint64_t salt, uint64_t job) {
  uint64_t s = mix(salt ^ mix(job));
  const uint64_t pick = s % 100;
  s = mix(s);
  size_t len;
  if (pick < 8)
    len = 0;
  else if (pick < 75)
    len = 1 + s % 64;
  else if (pick < 97)
    len = 65 + s % 960;
  else
    len = 1025 + s % 15360;
  std::string b(len, '\0');
  for (size_t i = 0; i < len; i += 8) {
    s = mix(s);
    for (size_t k = 0; k < 8 && i + k < len; ++k)
      b[i + k] = static_cast<char>((s >> (8 * k)) & 0xff);
  }
  if (len >= 2) {
    b[len / 2] = '\0';
    b[len - 1] = '\xff';
  }
  return b;
}

// ---- what the worker reports --------------------------------------------------------------------

enum class Kind : uint8_t {
  opened,          // the store is open; the load starts
  push_intent,     // job, a = clock before the call, b = delay (ns)
  push_done,       // code; a, b as in the intent
  reserved,        // job, attempt, a = clock before the call, b = due, c = lease deadline: the
                   // outcome of a reserve_intent
  ack_intent,      // job
  ack_done,        // code
  nack_intent,     // job, a = clock before the call, b = delay (ns), or -1: the policy's
  nack_done,       // code; a, b as in the intent
  cancel_intent,   // job
  cancel_done,     // code
  resched_intent,  // job, a = clock before the call, b = the new due time
  resched_done,    // code; a, b as in the intent
  violation,       // text: a broken promise the worker saw
  error,           // text: a call failed in a way the load does not allow
  reserve_intent,  // a reserve() call starts; `reserved` or `reserve_done` is its outcome
  reserve_done,    // code: nothing was delivered (timeout)
  // Never sent: entries of a job's history in the driver.
  seen,     // the driver's get(): code = JobState, attempt = attempts, b = due
  settled,  // the worker was killed during the call above
};

// One record, one write(): at most PIPE_BUF bytes, so a record is never split or interleaved,
// and a worker killed mid-write leaves a whole record or none.
struct Record {
  Kind kind;
  uint8_t code;    // the Errc of a *_done (0: ok)
  uint8_t thread;  // the worker thread that made the call
  uint8_t pad;
  uint32_t attempt;
  uint64_t job;
  int64_t a, b, c;
  char text[112];  // NUL-terminated
};
static_assert(sizeof(Record) <= PIPE_BUF);

Record make_record(Kind kind, uint64_t job = 0, int64_t a = 0, int64_t b = 0, int64_t c = 0) {
  Record r;
  std::memset(&r, 0, sizeof r);
  r.kind = kind;
  r.job = job;
  r.a = a;
  r.b = b;
  r.c = c;
  return r;
}

void set_text(Record& r, const std::string& s) {
  const size_t n = std::min(s.size(), sizeof r.text - 1);
  std::memcpy(r.text, s.data(), n);
  r.text[n] = '\0';
}

Record done_record(Kind kind, const Record& intent, const Status& s) {
  Record r = make_record(kind, intent.job, intent.a, intent.b);
  r.thread = intent.thread;
  r.code = static_cast<uint8_t>(s.ok() ? 0 : s.code().value());
  if (!s.ok()) set_text(r, s.to_string());
  return r;
}

std::string text_of(const Record& r) {
  return std::string(r.text, strnlen(r.text, sizeof r.text));
}

bool has_code(const Record& r, Errc e) {
  return r.code == static_cast<uint8_t>(e);
}

// ---- what the harness knows about each job ------------------------------------------------------

enum class Fate : uint8_t {
  live,          // exists: its push was reported, or the driver found it
  gone,          // does not exist and never will again: acked, cancelled, or never stored
  maybe_pushed,  // its push was in flight at a kill (or is in flight now)
  maybe_gone,    // an ack or cancel of it was in flight at a kill
};

const char* fate_text(Fate f) {
  switch (f) {
    case Fate::live:
      return "live";
    case Fate::gone:
      return "gone";
    case Fate::maybe_pushed:
      return "maybe pushed";
    case Fate::maybe_gone:
      return "maybe gone";
  }
  return "?";
}

struct JobModel {
  Fate fate = Fate::maybe_pushed;
  uint32_t attempts = 0;  // the highest attempt known: reported deliveries, and what get() showed
  TimePoint not_before;   // a lower bound of the job's next due time: no delivery before it
};

// One entry of a job's history, for failure messages.
struct Event {
  int cycle;
  Record r;
};

const char* errc_text(uint8_t code) {
  switch (static_cast<Errc>(code)) {
    case Errc::ok:
      return "ok";
    case Errc::invalid_argument:
      return "invalid_argument";
    case Errc::duplicate_id:
      return "duplicate_id";
    case Errc::not_found:
      return "not_found";
    case Errc::stale_token:
      return "stale_token";
    case Errc::invalid_state:
      return "invalid_state";
    case Errc::timeout:
      return "timeout";
    case Errc::closed:
      return "closed";
    case Errc::unavailable:
      return "unavailable";
    case Errc::io_error:
      return "io_error";
    case Errc::corrupt:
      return "corrupt";
  }
  return "?";
}

// The driver's picture of the store, which each worker inherits through fork() and keeps up to
// date by applying its own records, as the driver applies them when they arrive: one rule book,
// so the two cannot disagree.
struct Model {
  uint64_t salt = 0;
  int cycle = 0;
  TimePoint origin;  // times in failure messages count from here
  // Every job that may exist, and those that ceased to since the driver last looked. Jobs the
  // driver found gone are dropped (a soak must not grow without bound): an id below next_job
  // that is not listed here is gone for good.
  std::unordered_map<uint64_t, JobModel> jobs;
  uint64_t next_job = 1;  // ids are never reused
  // Per worker thread: its last intent without an outcome.
  std::array<std::optional<Record>, kThreads> in_flight;
  // How many reserve() calls were in flight at the last kill: as many jobs may have one delivery
  // more than reported.
  size_t reserves_in_flight = 0;
  std::vector<std::string> problems;
  // Violations the worker reported, by job, until report_violations() turns them into problems.
  std::map<uint64_t, std::vector<std::string>> violations;
  // The last events of each listed job.
  std::unordered_map<uint64_t, std::vector<Event>> history;
  static constexpr size_t kHistoryCap = 24;

  struct Counts {
    uint64_t opened = 0, pushes = 0, deliveries = 0, acks = 0, nacks = 0, cancels = 0,
             reschedules = 0, refused = 0, resolved_present = 0, resolved_missing = 0;
    // Kills during a call, by the call's intent kind.
    std::array<uint64_t, 32> killed_in{};
  } counts;

  void problem(std::string s) { problems.push_back("cycle " + std::to_string(cycle) + ": " + s); }
  void problem_about(uint64_t job, const std::string& s) { problem(s + explain(job)); }

  // One problem per delivery the worker found wrong, however many checks it failed.
  void report_violations() {
    for (const auto& [job, texts] : violations) {
      std::string s = "the worker saw a broken promise: ";
      for (size_t i = 0; i < texts.size(); ++i) s += (i ? "; " : "") + texts[i];
      problem_about(job, s);
    }
    violations.clear();
  }

  void note(uint64_t job, const Record& r) {
    std::vector<Event>& h = history[job];
    if (h.size() == kHistoryCap) h.erase(h.begin());
    h.push_back(Event{cycle, r});
  }

  std::string rel(int64_t ns) const {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%+.3f ms", static_cast<double>(ns - ns_of(origin)) / 1e6);
    return buf;
  }

  std::string explain(uint64_t job) const {
    auto it = history.find(job);
    if (it == history.end()) return "";
    std::string out = "\n  history of " + job_id(job) + " (times from the start of the run):";
    for (const Event& e : it->second) {
      const Record& r = e.r;
      std::string line = "\n    cycle " + std::to_string(e.cycle) + ": ";
      const std::string code = errc_text(r.code);
      switch (r.kind) {
        case Kind::push_intent:
          line += "push at " + rel(r.a) + ", delay " + ms_text(Duration(r.b));
          break;
        case Kind::reserved:
          line += "reserve called at " + rel(r.a) + ": attempt " + std::to_string(r.attempt) +
                  ", due " + rel(r.b) + ", lease until " + rel(r.c);
          break;
        case Kind::nack_intent:
          line += "nack at " + rel(r.a) + ", delay " +
                  (r.b >= 0 ? ms_text(Duration(r.b)) : std::string("of the policy"));
          break;
        case Kind::resched_intent:
          line += "reschedule at " + rel(r.a) + " to " + rel(r.b);
          break;
        case Kind::ack_intent:
          line += "ack";
          break;
        case Kind::cancel_intent:
          line += "cancel";
          break;
        case Kind::push_done:
          line += "  push returned " + code;
          break;
        case Kind::ack_done:
          line += "  ack returned " + code;
          break;
        case Kind::nack_done:
          line += "  nack returned " + code;
          break;
        case Kind::cancel_done:
          line += "  cancel returned " + code;
          break;
        case Kind::resched_done:
          line += "  reschedule returned " + code;
          break;
        case Kind::seen:
          line +=
              "driver's get() after the kill: " +
              (r.code == 255 ? std::string("not_found")
                             : std::string(to_string(static_cast<JobState>(r.code))) +
                                   ", attempts " + std::to_string(r.attempt) + ", due " + rel(r.b));
          break;
        case Kind::settled:
          line += "  killed during that call";
          break;
        default:
          line += "record kind " + std::to_string(static_cast<int>(r.kind));
          break;
      }
      out += line;
    }
    return out;
  }

  JobModel* find(uint64_t job) {
    auto it = jobs.find(job);
    return it == jobs.end() ? nullptr : &it->second;
  }

  std::vector<uint64_t> live_jobs() const {
    std::vector<uint64_t> out;
    for (const auto& [job, m] : jobs)
      if (m.fate == Fate::live) out.push_back(job);
    std::sort(out.begin(), out.end());
    return out;
  }

  // Applies one record. False when it breaks a promise (the reason is in `problems`).
  bool apply(const Record& r) {
    const std::string id = job_id(r.job);
    auto fail = [&](const std::string& why) {
      problem_about(r.job, why);
      return false;
    };
    auto outcome = [&] { return r.code == 0 ? std::string("ok") : text_of(r); };
    if (r.thread >= kThreads) return fail("a record from thread " + std::to_string(r.thread));
    std::optional<Record>& slot = in_flight[r.thread];
    if (r.kind != Kind::opened && r.kind != Kind::error && r.kind != Kind::reserve_intent &&
        r.kind != Kind::reserve_done && r.kind != Kind::violation && jobs.count(r.job))
      note(r.job, r);
    switch (r.kind) {
      case Kind::opened:
        ++counts.opened;
        return true;
      case Kind::reserve_intent:
        slot = r;
        return true;
      case Kind::reserve_done:
        slot.reset();
        if (has_code(r, Errc::timeout)) return true;
        return fail("reserve failed: " + text_of(r));
      case Kind::violation:
        violations[r.job].push_back(text_of(r));  // reported together, see report_violations()
        return false;
      case Kind::error:
        return fail("the worker failed: " + text_of(r));
      case Kind::push_intent: {
        if (r.job < next_job) return fail("the worker pushed " + id + " twice");
        if (owner_of(r.job) != r.thread) return fail(id + " pushed by the wrong thread");
        JobModel& j = jobs[r.job];
        note(r.job, r);
        j.fate = Fate::maybe_pushed;
        j.not_before = at_ns(r.a) + Duration(r.b);
        next_job = std::max(next_job, r.job + 1);
        slot = r;
        return true;
      }
      case Kind::reserved: {
        slot.reset();
        JobModel* j = find(r.job);
        if (!j && r.job > 0 && r.job < next_job)
          return fail("delivered " + id + " (attempt " + std::to_string(r.attempt) +
                      ") although a reopened store had shown it gone (after a reported ack or "
                      "cancel, or a push in flight at a kill)");
        if (!j) return fail("delivered " + id + ", which was never pushed");
        if (j->fate == Fate::gone)
          return fail("delivered " + id + " (attempt " + std::to_string(r.attempt) +
                      ") although its ack or cancel was reported successful, or it was found "
                      "missing after a kill");
        if (j->fate != Fate::live)
          return fail("delivered " + id + " while it was " + fate_text(j->fate));
        // Every delivery since the driver last looked was reported: this one is the next.
        if (r.attempt <= j->attempts)
          return fail("attempts went down: " + id + " delivered as attempt " +
                      std::to_string(r.attempt) + " after attempt " + std::to_string(j->attempts) +
                      " had been reported or seen (a reservation was lost)");
        if (r.attempt != j->attempts + 1)
          return fail(id + " delivered as attempt " + std::to_string(r.attempt) + ", but only " +
                      std::to_string(j->attempts) +
                      " deliveries of it were reported or seen (an attempt counted twice)");
        j->attempts = r.attempt;
        // Unless acked or nacked, it comes back once the lease has run out, a retry delay later.
        j->not_before = at_ns(r.a) + kTtr + kRetryDelay;
        ++counts.deliveries;
        return true;
      }
      case Kind::ack_intent:
      case Kind::nack_intent:
      case Kind::cancel_intent:
      case Kind::resched_intent: {
        JobModel* j = find(r.job);
        if (!j || j->fate != Fate::live) return fail("the worker acted on " + id + ", not live");
        slot = r;
        return true;
      }
      case Kind::seen:
      case Kind::settled:
        return fail("a history entry was sent as a record");
      case Kind::push_done:
      case Kind::ack_done:
      case Kind::nack_done:
      case Kind::cancel_done:
      case Kind::resched_done:
        break;
    }
    // An outcome.
    slot.reset();
    JobModel* j = find(r.job);
    if (!j) return fail("an outcome for " + id + ", never pushed");
    switch (r.kind) {
      case Kind::push_done:
        if (r.code != 0) {
          j->fate = Fate::gone;  // a call that fails changes nothing
          return fail("push of " + id + " failed: " + outcome());
        }
        j->fate = Fate::live;
        ++counts.pushes;
        return true;
      case Kind::ack_done:
        if (r.code == 0) {
          j->fate = Fate::gone;
          ++counts.acks;
          return true;
        }
        if (has_code(r, Errc::stale_token)) {  // the lease ran out first: nothing changed
          ++counts.refused;
          return true;
        }
        return fail("ack of " + id + ", a live job, failed: " + outcome());
      case Kind::nack_done:
        if (r.code == 0) {
          j->not_before = at_ns(r.a) + (r.b >= 0 ? Duration(r.b) : kRetryDelay);
          ++counts.nacks;
          return true;
        }
        if (has_code(r, Errc::stale_token)) {
          ++counts.refused;
          return true;
        }
        return fail("nack of " + id + ", a live job, failed: " + outcome());
      case Kind::cancel_done:
        if (r.code == 0) {
          j->fate = Fate::gone;
          ++counts.cancels;
          return true;
        }
        return fail("cancel of " + id + ", a live job, failed (a lost job?): " + outcome());
      case Kind::resched_done:
        if (r.code == 0) {
          j->not_before = std::max(at_ns(r.a), at_ns(r.b));  // the past means now
          ++counts.reschedules;
          return true;
        }
        if (has_code(r, Errc::invalid_state)) {  // reserved or dead: refused, nothing changed
          ++counts.refused;
          return true;
        }
        return fail("reschedule of " + id + ", a live job, failed (a lost job?): " + outcome());
      default:
        return fail("unknown record kind " + std::to_string(static_cast<int>(r.kind)));
    }
  }

  // The worker died: the calls in flight may or may not have happened.
  void settle_in_flight() {
    for (std::optional<Record>& slot : in_flight)
      if (slot) settle(*std::exchange(slot, std::nullopt));
  }

  void settle(const Record& r) {
    ++counts.killed_in[static_cast<size_t>(r.kind) % counts.killed_in.size()];
    if (r.kind == Kind::reserve_intent) {
      ++reserves_in_flight;  // some job may have been reserved, unreported
      return;
    }
    note(r.job, make_record(Kind::settled, r.job));
    JobModel& j = jobs[r.job];
    switch (r.kind) {
      case Kind::push_intent:
        break;  // maybe_pushed already
      case Kind::ack_intent:
      case Kind::cancel_intent:
        if (j.fate == Fate::live) j.fate = Fate::maybe_gone;
        break;
      case Kind::nack_intent:
        j.not_before =
            std::min(j.not_before, at_ns(r.a) + (r.b >= 0 ? Duration(r.b) : kRetryDelay));
        break;
      case Kind::resched_intent:
        j.not_before = std::min(j.not_before, std::max(at_ns(r.a), at_ns(r.b)));
        break;
      default:
        break;
    }
  }

  // Checks a delivery against what is known of its job (timing, body, topic); the promises about
  // its fate and attempts are checked when its `reserved` record is applied. `before`/`after`:
  // the clock around the reserve() call.
  std::vector<std::string> check_delivery(const Delivery& d, TimePoint before, TimePoint after,
                                          uint64_t* job_out) const {
    std::vector<std::string> out;
    const std::optional<uint64_t> job = parse_job_id(d.id);
    if (!job) {
      out.push_back("delivered an id this harness never uses: '" + d.id + "'");
      return out;
    }
    *job_out = *job;
    const std::string att = " (attempt " + std::to_string(d.attempt) + ")";
    if (d.body != body_of(salt, *job))
      out.push_back(d.id + att + " delivered with a body of " + std::to_string(d.body.size()) +
                    " bytes that differs from the " + std::to_string(body_of(salt, *job).size()) +
                    " bytes pushed");
    if (d.topic != topic_of(*job)) out.push_back(d.id + " delivered on topic " + d.topic);
    if (d.max_attempts != kMaxAttempts)
      out.push_back(d.id + " delivered with max_attempts " + std::to_string(d.max_attempts));
    const TimePoint reserved_at = d.lease_deadline - kTtr;  // the lease starts at the reservation
    if (reserved_at < before || reserved_at > after)
      out.push_back(d.id + att + " came with a lease deadline " +
                    ms_text(reserved_at < before ? before - reserved_at : reserved_at - after) +
                    (reserved_at < before ? " short of" : " beyond") +
                    " the ttr counted from the call");
    if (after < d.due)
      out.push_back(d.id + att + " delivered early: the clock was " + ms_text(d.due - after) +
                    " before its due time");
    if (reserved_at < d.due)
      out.push_back(d.id + att + " reserved " + ms_text(d.due - reserved_at) +
                    " before its due time");
    // (An unknown or gone job is reported when its `reserved` record is applied.)
    auto it = jobs.find(*job);
    if (it != jobs.end()) {
      const TimePoint not_before = it->second.not_before;
      if (after < not_before || reserved_at < not_before)
        out.push_back(d.id + att + " reserved " +
                      ms_text(not_before - std::min(after, reserved_at)) +
                      " before its bound (push/reschedule/nack/lease)");
    }
    return out;
  }
};

// ---- the worker ---------------------------------------------------------------------------------

// What the worker's threads share: the pipe, the store and the model (behind one lock).
class WorkerProcess {
 public:
  WorkerProcess(int fd, Model& model) : fd_(fd), m_(model) {}

  [[noreturn]] void run(const std::string& dir, Sync sync, size_t shards, uint64_t seed);

  // Reports a record and applies it to this process's copy of the model, under the lock, so
  // that the driver applies the records in the order this process did. A record the rule book
  // refuses ends the worker: the driver applies the same record and fails the test.
  void emit(const Record& r) {
    std::lock_guard lock(mu_);
    emit_locked(r);
  }
  void emit_locked(const Record& r) {
    send(r);
    if (!m_.apply(r)) _exit(4);
  }
  void send(const Record& r) {
    ssize_t n;
    do {
      n = ::write(fd_, &r, sizeof r);
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof r)) _exit(5);  // the driver is gone
  }
  [[noreturn]] void fail_with(const std::string& what, int code) {
    Record r = make_record(Kind::error);
    set_text(r, what);
    {
      std::lock_guard lock(mu_);
      send(r);
    }
    _exit(code);
  }

  std::mutex mu_;
  int fd_;
  Model& m_;
  std::unique_ptr<Engine> q_;
};

// One thread's share of the load: calls on its own topics and jobs only.
class Loop {
 public:
  Loop(WorkerProcess& w, size_t thread, uint64_t seed)
      : w_(w), m_(w.m_), q_(*w.q_), t_(thread), rng_(mix(seed + thread)) {
    std::lock_guard lock(w_.mu_);
    for (uint64_t job : m_.live_jobs())
      if (owner_of(job) == t_) live_.push_back(job);
  }

  [[noreturn]] void run() {
    for (;;) step();
  }

 private:
  Record record(Kind kind, uint64_t job = 0, int64_t a = 0, int64_t b = 0, int64_t c = 0) const {
    Record r = make_record(kind, job, a, b, c);
    r.thread = static_cast<uint8_t>(t_);
    return r;
  }

  uint64_t below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  void drop_live(uint64_t job) {
    live_.erase(std::remove(live_.begin(), live_.end(), job), live_.end());
    held_.erase(std::remove_if(held_.begin(), held_.end(),
                               [job](const Token& t) { return t.id == job_id(job); }),
                held_.end());
  }

  void step() {
    // A call that has nothing to act on reserves instead.
    const uint64_t roll = below(100);
    if (roll < 25) return live_.size() < kLiveCap / kThreads ? push() : reserve();
    if (roll < 60) return reserve();
    if (roll < 80) return held_.empty() ? reserve() : ack();
    if (roll < 88) return held_.empty() ? reserve() : nack();
    if (roll < 93) return live_.empty() ? reserve() : cancel();
    return live_.empty() ? reserve() : reschedule();
  }

  void push() {
    const Duration delay =
        below(3) == 0 ? Duration::zero() : Duration(below(kMaxPushDelay.count() + 1));
    Record intent;
    {
      // The next unused id of this thread's.
      std::lock_guard lock(w_.mu_);
      uint64_t job = m_.next_job;
      while (owner_of(job) != t_) ++job;
      intent = record(Kind::push_intent, job, ns_of(wall_now()), delay.count());
      w_.emit_locked(intent);
    }
    const uint64_t job = intent.job;
    const Status s = q_.push({.topic = topic_of(job),
                              .id = job_id(job),
                              .delay = delay,
                              .ttr = kTtr,
                              .body = body_of(m_.salt, job),
                              .retry = harness_policy()})
                         .status();
    w_.emit(done_record(Kind::push_done, intent, s));
    live_.push_back(job);
  }

  void reserve() {
    // Most calls do not wait (a worker that waits is mostly killed while waiting); one in five
    // waits up to 3 ms for a job to fall due.
    const Duration timeout = below(5) != 0 ? Duration::zero() : Duration(below(3'000'001));
    const Record intent = record(Kind::reserve_intent);
    w_.emit(intent);
    const TimePoint before = wall_now();
    Result<Delivery> r = q_.reserve(topics_of_thread(t_), timeout);
    const TimePoint after = wall_now();
    if (!r.ok()) return w_.emit(done_record(Kind::reserve_done, intent, r.status()));
    bool kept;
    std::vector<std::string> violations;
    {
      std::lock_guard lock(w_.mu_);
      uint64_t job = 0;
      // Checked against what was known before this delivery; reported after it.
      violations = m_.check_delivery(*r, before, after, &job);
      Record rec =
          record(Kind::reserved, job, ns_of(before), ns_of(r->due), ns_of(r->lease_deadline));
      rec.attempt = r->attempt;
      w_.send(rec);
      kept = m_.apply(rec);
      for (const std::string& v : violations) {
        Record e = record(Kind::violation, job);
        set_text(e, v);
        w_.send(e);
      }
    }
    if (!kept || !violations.empty()) _exit(4);
    held_.push_back(r->token);
  }

  Token take_held() {
    const size_t i = below(held_.size());
    Token t = held_[i];
    held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
    return t;
  }

  void ack() {
    const Token t = take_held();
    const uint64_t job = *parse_job_id(t.id);
    const Record intent = record(Kind::ack_intent, job);
    w_.emit(intent);
    const Status s = q_.ack(t);
    w_.emit(done_record(Kind::ack_done, intent, s));
    if (s.ok()) drop_live(job);
  }

  void nack() {
    const Token t = take_held();
    const uint64_t job = *parse_job_id(t.id);
    std::optional<Duration> delay;
    if (below(3) != 0) delay = Duration(below(100'000'001));  // up to 100 ms; else the policy's
    const Record intent =
        record(Kind::nack_intent, job, ns_of(wall_now()), delay ? delay->count() : -1);
    w_.emit(intent);
    const Status s = q_.nack(t, delay);
    w_.emit(done_record(Kind::nack_done, intent, s));
  }

  void cancel() {
    const uint64_t job = live_[below(live_.size())];
    const Record intent = record(Kind::cancel_intent, job);
    w_.emit(intent);
    const Status s = q_.cancel(job_id(job));
    w_.emit(done_record(Kind::cancel_done, intent, s));
    if (s.ok()) drop_live(job);
  }

  void reschedule() {
    const uint64_t job = live_[below(live_.size())];
    const TimePoint now = wall_now();
    // From 50 ms in the past (meaning now) to 300 ms ahead.
    const TimePoint when = now - 50ms + Duration(below(350'000'001));
    const Record intent = record(Kind::resched_intent, job, ns_of(now), ns_of(when));
    w_.emit(intent);
    const Status s = q_.reschedule(job_id(job), when);
    w_.emit(done_record(Kind::resched_done, intent, s));
  }

  WorkerProcess& w_;
  Model& m_;
  Engine& q_;
  const size_t t_;
  std::mt19937_64 rng_;
  std::vector<uint64_t> live_;  // this thread's jobs known to exist
  std::vector<Token> held_;     // deliveries to this thread not yet acked or nacked
};

void WorkerProcess::run(const std::string& dir, Sync sync, size_t shards, uint64_t seed) {
  StoreOptions o;
  o.dir = dir;
  o.sync = sync;
  o.engine.shards = shards;
  Result<std::unique_ptr<Engine>> opened = open_store(o);
  if (!opened) fail_with("open_store: " + opened.status().to_string(), 3);
  q_ = std::move(opened).value();
  emit(make_record(Kind::opened));
  std::vector<std::thread> others;
  for (size_t t = 1; t < kThreads; ++t)
    others.emplace_back([this, t, seed] {
      try {
        Loop(*this, t, seed).run();
      } catch (const std::exception& e) {
        fail_with(std::string("exception: ") + e.what(), 70);
      }
    });
  Loop(*this, 0, seed).run();  // never returns: the driver's SIGKILL ends the process
}

[[noreturn]] void worker_main(int fd, Model& model, uint64_t seed, const std::string& dir,
                              Sync sync, size_t shards) {
  // Never back into gtest: every way out of here is _exit(). A worker the driver forgot would
  // end on its own.
  alarm(120);
  WorkerProcess w(fd, model);
  try {
    w.run(dir, sync, shards, seed);
  } catch (const std::exception& e) {
    w.fail_with(std::string("exception: ") + e.what(), 70);
  } catch (...) {
  }
  _exit(70);
}

// ---- the driver ---------------------------------------------------------------------------------

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "delayq-crash-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    if (!path_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 0);
  return (end != nullptr && *end == '\0') ? x : fallback;
}

// Reads whole records out of `buf` and applies them.
void apply_records(Model& m, std::string& buf) {
  size_t used = 0;
  while (buf.size() - used >= sizeof(Record)) {
    Record r;
    std::memcpy(&r, buf.data() + used, sizeof r);
    used += sizeof r;
    m.apply(r);
  }
  buf.erase(0, used);
}

// Forks a worker, lets it run for `run` (counted from the fork, or from its report that the
// store is open), kills it and applies everything it reported.
void run_worker(Model& m, const std::string& dir, uint64_t worker_seed, Sync sync, size_t shards,
                std::chrono::milliseconds run, bool from_open) {
  int fds[2];
  if (pipe(fds) != 0) {
    m.problem(std::string("pipe: ") + std::strerror(errno));
    return;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  // The child gets only this thread: RocksDB's background pool of this process (started by the
  // driver's own opens) does not run there, so the worker's store neither flushes nor compacts
  // in the background. Harmless for the few MB a worker writes (a 10000-cycle soak ends with
  // two table files).
  const pid_t pid = fork();
  if (pid < 0) {
    m.problem(std::string("fork: ") + std::strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid == 0) {
    close(fds[0]);
    worker_main(fds[1], m, worker_seed, dir, sync, shards);
  }
  close(fds[1]);
  // A worker that takes this long to open the store is stuck: kill it anyway.
  const Steady::time_point open_limit = Steady::now() + 5s;
  Steady::time_point deadline = from_open ? open_limit : Steady::now() + run;
  const uint64_t opened_before = m.counts.opened;
  std::string buf;
  char chunk[16 * sizeof(Record)];
  bool eof = false;
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Steady::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const ssize_t k = read(fds[0], chunk, sizeof chunk);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      eof = true;  // the worker ended before the kill
      break;
    }
    buf.append(chunk, static_cast<size_t>(k));
    apply_records(m, buf);
    if (from_open && deadline == open_limit && m.counts.opened != opened_before)
      deadline = Steady::now() + run;
  }
  kill(pid, SIGKILL);
  if (!eof) {
    // Records already in the pipe were reported before the kill: they count.
    for (;;) {
      const ssize_t k = read(fds[0], chunk, sizeof chunk);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;
      buf.append(chunk, static_cast<size_t>(k));
      apply_records(m, buf);
    }
  }
  close(fds[0]);
  if (!buf.empty()) m.problem("a partial record of " + std::to_string(buf.size()) + " bytes");
  m.report_violations();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Anything but our SIGKILL means the worker ended on its own (its records say why).
  if (WIFEXITED(status))
    m.problem("the worker exited by itself with status " + std::to_string(WEXITSTATUS(status)));
  else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
    m.problem("the worker died of signal " + std::to_string(WTERMSIG(status)));
}

std::unique_ptr<Engine> open_for_check(Model& m, const std::string& dir) {
  StoreOptions o;
  o.dir = dir;
  o.sync = Sync::always;
  Result<std::unique_ptr<Engine>> q = open_store(o);
  if (!q) {
    m.problem("the driver could not reopen the store: " + q.status().to_string());
    return nullptr;
  }
  return std::move(q).value();
}

// A present job as get() shows it: the body pushed, as many attempts as deliveries were reported
// (one more if a reserve() was in flight at the kill: returns true then), and dead only after
// max_attempts deliveries.
bool check_present(Model& m, uint64_t job, JobModel& j, const JobInfo& info) {
  const std::string id = job_id(job);
  const std::string pushed = body_of(m.salt, job);
  if (info.body != pushed)
    m.problem_about(job, id + ": the stored body (" + std::to_string(info.body.size()) +
                             " bytes) differs from the one pushed (" +
                             std::to_string(pushed.size()) + " bytes)");
  if (info.topic != topic_of(job)) m.problem_about(job, id + ": stored on topic " + info.topic);
  if (info.attempts < j.attempts)
    m.problem_about(job, "attempts went down: " + id + " has " + std::to_string(info.attempts) +
                             " attempts after a reopen, but attempt " + std::to_string(j.attempts) +
                             " was reported or seen");
  const bool one_more = info.attempts == j.attempts + 1;
  if (info.attempts > j.attempts + (m.reserves_in_flight > 0 ? 1 : 0))
    m.problem_about(job, id + " has " + std::to_string(info.attempts) +
                             " attempts after a reopen, "
                             "but only " +
                             std::to_string(j.attempts) +
                             " deliveries of it were reported or seen" +
                             (m.reserves_in_flight > 0 ? " (one more was possible)" : ""));
  if (info.state == JobState::dead && info.attempts < info.max_attempts)
    m.problem_about(job, id + " is dead after " + std::to_string(info.attempts) + " of " +
                             std::to_string(info.max_attempts) +
                             " attempts; nothing here dead-letters a job early");
  j.attempts = std::max(j.attempts, info.attempts);
  return one_more;
}

// After a kill: the store must hold exactly the jobs the reports allow. Settles the calls that
// were in flight by what it finds, and forgets the jobs it finds gone. `sweep_all` also checks
// every job forgotten before (the job count below catches those anyway; the sweep names them).
void check_store(Model& m, Engine& q, bool sweep_all) {
  size_t unreported_deliveries = 0;
  std::vector<uint64_t> gone;
  std::vector<uint64_t> ids;
  for (const auto& entry : m.jobs) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  for (uint64_t job : ids) {
    JobModel& j = m.jobs[job];
    const std::string id = job_id(job);
    Result<JobInfo> got = q.get(id);
    if (!got.ok() && !got.is(Errc::not_found)) {
      m.problem("get(" + id + ") failed: " + got.status().to_string());
      continue;
    }
    Record seen = make_record(Kind::seen, job, 0, got.ok() ? ns_of(got->due) : 0);
    seen.code = got.ok() ? static_cast<uint8_t>(got->state) : 255;
    seen.attempt = got.ok() ? got->attempts : 0;
    m.note(job, seen);
    switch (j.fate) {
      case Fate::gone:
        if (got.ok())
          m.problem_about(job, id + " came back (" + to_string(got->state) + ", " +
                                   std::to_string(got->attempts) +
                                   " attempts) although its ack or cancel was reported "
                                   "successful");
        break;
      case Fate::live:
        if (!got.ok())
          m.problem_about(job, id + " is lost: its push was reported successful (or it was "
                                    "found after a kill) and no ack or cancel of it was reported "
                                    "or in flight");
        else
          unreported_deliveries += check_present(m, job, j, *got);
        break;
      case Fate::maybe_pushed:
      case Fate::maybe_gone:
        if (got.ok()) {
          unreported_deliveries += check_present(m, job, j, *got);
          j.fate = Fate::live;
          ++m.counts.resolved_present;
        } else {
          j.fate = Fate::gone;
          ++m.counts.resolved_missing;
        }
        break;
    }
    if (j.fate == Fate::gone && !got.ok()) gone.push_back(job);
  }
  if (unreported_deliveries > m.reserves_in_flight)
    m.problem(std::to_string(unreported_deliveries) +
              " jobs have one attempt more than reported; "
              "the " +
              std::to_string(m.reserves_in_flight) +
              " reserve() calls in flight at the kill explain at most as many");
  m.reserves_in_flight = 0;
  if (m.problems.empty())
    for (uint64_t job : gone) {
      m.jobs.erase(job);
      m.history.erase(job);
    }

  // Nothing else is in the store: no acked, cancelled or never-pushed job slipped in unseen.
  uint64_t stored = 0;
  for (const auto& [topic, c] : q.stats().topics)
    stored += c.delayed + c.ready + c.reserved + c.dead;
  const uint64_t expected = m.live_jobs().size();
  if (stored != expected)
    m.problem("the store holds " + std::to_string(stored) + " jobs; the reports allow exactly " +
              std::to_string(expected));
  if (sweep_all || stored != expected) {
    int named = 0;
    for (uint64_t job = 1; job < m.next_job && named < 5; ++job) {
      if (m.jobs.count(job)) continue;
      Result<JobInfo> got = q.get(job_id(job));
      if (got.is(Errc::not_found)) continue;
      ++named;
      m.problem(job_id(job) + " is in the store (" +
                (got.ok() ? std::string(to_string(got->state)) : got.status().to_string()) +
                ") although a reopened store had shown it gone earlier (after a reported ack or "
                "cancel, or a push in flight at a kill)");
    }
  }
}

// The last step: reserve and ack until every job still owed has been delivered.
void drain(Model& m, Engine& q, uint64_t* delivered_count) {
  const std::vector<uint64_t> owed = m.live_jobs();
  std::set<uint64_t> delivered;
  auto settled = [&](uint64_t job) {  // acked, or dead after its max_attempts
    Result<JobInfo> g = q.get(job_id(job));
    if (g.is(Errc::not_found)) return true;
    return g.ok() && g->state == JobState::dead && g->attempts >= g->max_attempts;
  };
  const Steady::time_point limit = Steady::now() + kDrainLimit;
  bool all_settled = owed.empty();
  while (!all_settled && Steady::now() < limit && m.problems.empty()) {
    const TimePoint before = wall_now();
    Result<Delivery> r = q.reserve(kTopics, 50ms);
    const TimePoint after = wall_now();
    if (r.ok()) {
      uint64_t job = 0;
      const std::vector<std::string> wrong = m.check_delivery(*r, before, after, &job);
      if (!wrong.empty()) {
        std::string s = "drain: ";
        for (size_t i = 0; i < wrong.size(); ++i) s += (i ? "; " : "") + wrong[i];
        m.problem_about(job, s);
      }
      Record rec =
          make_record(Kind::reserved, job, ns_of(before), ns_of(r->due), ns_of(r->lease_deadline));
      rec.attempt = r->attempt;
      if (!m.apply(rec)) break;
      delivered.insert(job);
      const Record intent = make_record(Kind::ack_intent, job);
      m.apply(intent);
      m.apply(done_record(Kind::ack_done, intent, q.ack(r->token)));
      continue;
    }
    if (!r.is(Errc::timeout)) {
      m.problem("drain: reserve failed: " + r.status().to_string());
      break;
    }
    all_settled = std::all_of(owed.begin(), owed.end(), settled);
  }
  *delivered_count = delivered.size();
  for (uint64_t job : owed) {
    if (delivered.count(job)) continue;
    Result<JobInfo> g = q.get(job_id(job));
    if (g.ok() && g->state == JobState::dead && g->attempts >= g->max_attempts) continue;
    m.problem_about(
        job,
        "drain: " + job_id(job) + " was owed and never delivered within " +
            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kDrainLimit).count()) +
            " s (" +
            (g.ok() ? std::string(to_string(g->state)) + ", " + std::to_string(g->attempts) +
                          " attempts, due in " + ms_text(g->due - wall_now())
                    : g.status().to_string()) +
            ")");
  }
  uint64_t dead = 0;
  for (uint64_t job : owed) {
    if (!settled(job))
      m.problem_about(job, "drain: " + job_id(job) + " is still in the store after the drain");
    dead += q.get(job_id(job)).ok();
  }
  // Only the dead letters are left.
  uint64_t stored = 0;
  for (const auto& [topic, c] : q.stats().topics)
    stored += c.delayed + c.ready + c.reserved + c.dead;
  if (stored != dead)
    m.problem("drain: the store still holds " + std::to_string(stored) + " jobs, " +
              std::to_string(dead) + " of them dead letters of owed jobs");
}

TEST(CrashHarness, MixedLoadKeepsEveryPromiseAcrossSigkills) {
  const uint64_t seed = env_u64("DELAYQ_CRASH_SEED",
                                (uint64_t{std::random_device()()} << 32) ^ std::random_device()());
  const int cycles = static_cast<int>(env_u64("DELAYQ_CRASH_CYCLES", kDefaultCycles));
  const std::string replay = "seed " + std::to_string(seed) +
                             " (replay: DELAYQ_CRASH_SEED=" + std::to_string(seed) +
                             " DELAYQ_CRASH_CYCLES=" + std::to_string(cycles) + ")";
  SCOPED_TRACE(replay);
  TempDir dir;
  ASSERT_FALSE(dir.path().empty()) << "mkdtemp failed";

  Model m;
  m.salt = mix(seed ^ 0x5eed);
  m.origin = wall_now();
  std::mt19937_64 rng(seed);
  const Steady::time_point t0 = Steady::now();
  int done_cycles = 0;
  int killed_before_open = 0;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    m.cycle = cycle;  // every problem names its cycle
    const Sync sync = cycle % 2 == 0 ? Sync::always : Sync::none;
    const size_t shards = (cycle / 2) % 2 == 0 ? 1 : 2;
    const auto run = std::chrono::milliseconds(kMinRunMs + rng() % (kMaxRunMs - kMinRunMs + 1));
    const uint64_t opened_before = m.counts.opened;
    // The driver's own store is closed here: the worker is the only process on the directory.
    // Most kills land in the load; one cycle in four counts from the fork, so that some land
    // while the worker is still opening (recovering) the store.
    const bool from_open = rng() % 4 != 0;
    run_worker(m, dir.path(), seed ^ mix(static_cast<uint64_t>(cycle) + 1), sync, shards, run,
               from_open);
    if (m.counts.opened == opened_before) ++killed_before_open;
    m.settle_in_flight();
    if (m.problems.empty()) {
      std::unique_ptr<Engine> q = open_for_check(m, dir.path());
      if (q) check_store(m, *q, cycle + 1 == cycles);
    }  // closed before the next worker starts
    ++done_cycles;
    if (!m.problems.empty()) break;
  }

  uint64_t drained = 0;
  size_t owed_at_drain = 0;
  if (m.problems.empty()) {
    m.cycle = done_cycles;  // problems of the drain are reported as of the cycle after the last
    owed_at_drain = m.live_jobs().size();
    std::unique_ptr<Engine> q = open_for_check(m, dir.path());
    if (q) drain(m, *q, &drained);
  }
  const double secs = std::chrono::duration<double>(Steady::now() - t0).count();

  for (size_t i = 0; i < m.problems.size() && i < 20; ++i) ADD_FAILURE() << m.problems[i];
  if (m.problems.size() > 20) ADD_FAILURE() << "... and " << (m.problems.size() - 20) << " more";

  const Model::Counts& c = m.counts;
  auto n = [](uint64_t v) { return std::to_string(v); };
  auto killed = [&](Kind k) { return n(c.killed_in[static_cast<size_t>(k)]); };
  char timing[96];
  std::snprintf(timing, sizeof timing, "%d kill cycles in %.1f s", done_cycles, secs);
  std::printf(
      "[ harness  ] %s%s, %s\n"
      "[ harness  ] calls that returned: %s pushes, %s deliveries, %s acks, %s nacks, "
      "%s cancels, %s reschedules, %s refused (stale token, reserved or dead)\n"
      "[ harness  ] kills: %d before the store was open; during a push %s, reserve %s, "
      "ack %s, nack %s, cancel %s, reschedule %s; in-flight pushes, acks and cancels "
      "found done %s, not done %s\n"
      "[ harness  ] drain: %s of %zu owed jobs delivered\n",
      kUnderAsan ? "ASan, " : "", timing, replay.c_str(), n(c.pushes).c_str(),
      n(c.deliveries).c_str(), n(c.acks).c_str(), n(c.nacks).c_str(), n(c.cancels).c_str(),
      n(c.reschedules).c_str(), n(c.refused).c_str(), killed_before_open,
      killed(Kind::push_intent).c_str(), killed(Kind::reserve_intent).c_str(),
      killed(Kind::ack_intent).c_str(), killed(Kind::nack_intent).c_str(),
      killed(Kind::cancel_intent).c_str(), killed(Kind::resched_intent).c_str(),
      n(c.resolved_present).c_str(), n(c.resolved_missing).c_str(), n(drained).c_str(),
      owed_at_drain);

  if (m.problems.empty() && done_cycles >= 20) {
    // A harness whose workers never got going would pass without proving anything.
    EXPECT_GE(c.opened, static_cast<uint64_t>(done_cycles / 2)) << "few workers opened the store";
    EXPECT_GE(c.pushes, static_cast<uint64_t>(done_cycles)) << "the workers pushed too little";
    EXPECT_GE(c.deliveries, static_cast<uint64_t>(done_cycles / 2)) << "too few deliveries";
    EXPECT_GT(c.acks + c.cancels, 0u);
    EXPECT_GT(c.nacks, 0u);
    EXPECT_GT(c.reschedules, 0u);
  }
}

}  // namespace
}  // namespace delayq
