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
// Power losses (the section "power losses" below): the same load on a file system that records
// what each sync made durable (power_loss_fs.h); after the SIGKILL the driver cuts every file of
// the store back to that, as a power loss would, and checks what each sync mode promises:
// Sync::always loses nothing answered; every mode comes back as the queue after some prefix of
// the calls; Sync::batch loses at most sync_batch_ops - 1 answered calls. 64 cycles, 6 in 10
// of them Sync::always. PowerLossChecksCatchAStoreThatDoesNotSync shows that these checks fail on
// a store that does not sync, and the PrefixCheck tests test the prefix search on its own.
//
// Environment: DELAYQ_CRASH_CYCLES=N sets the number of kill cycles (default 200, 40 under
// AddressSanitizer; a soak: 10000), DELAYQ_POWER_CYCLES=N the number of power-loss cycles
// (default 64, 32 under AddressSanitizer; a soak: 10000). DELAYQ_CRASH_SEED=S replays a run's
// choices (its timings differ, so a replay is likely, not certain, to hit the same
// interleaving). Every failure message names the seed, and a failure about a job shows the
// job's recent history.
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <rocksdb/env.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
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
#include "power_loss_fs.h"
#include "wal/store_testing.h"

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
    case Errc::cancelled:
      return "cancelled";
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

  // Power-loss cycles: the records of the current cycle, in the order they arrived (see
  // explain_by_prefix()), and what kind of cycle it is, for failure messages.
  bool keep_cycle_records = false;
  std::vector<Record> cycle_records;
  std::string cycle_label;

  void problem(std::string s) {
    problems.push_back("cycle " + std::to_string(cycle) +
                       (cycle_label.empty() ? "" : " (" + cycle_label + ")") + ": " + s);
  }
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

// How a worker runs its store.
struct WorkerSetup {
  Sync sync = Sync::always;
  size_t shards = 1;
  uint32_t sync_batch_ops = 1000;
  Duration sync_interval = 10ms;
  // Power-loss cycles: the store runs on a file system that records its syncs in this side log
  // (power_loss_fs.h). Empty: the real file system, as is.
  std::string sync_log;
};

// What the worker's threads share: the pipe, the store and the model (behind one lock).
class WorkerProcess {
 public:
  WorkerProcess(int fd, Model& model) : fd_(fd), m_(model) {}

  [[noreturn]] void run(const std::string& dir, const WorkerSetup& setup, uint64_t seed);

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
  std::unique_ptr<rocksdb::Env> env_;  // power-loss cycles: outlives q_
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

void WorkerProcess::run(const std::string& dir, const WorkerSetup& setup, uint64_t seed) {
  StoreOptions o;
  o.dir = dir;
  o.sync = setup.sync;
  o.sync_batch_ops = setup.sync_batch_ops;
  o.sync_interval = setup.sync_interval;
  o.engine.shards = setup.shards;
  if (!setup.sync_log.empty()) {
    std::string error;
    env_ = power_loss::sync_recording_env(setup.sync_log, &error);
    if (!env_) fail_with("power-loss file system: " + error, 3);
  }
  Result<std::unique_ptr<Engine>> opened = wal::open_store_on(o, env_.get());
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
                              const WorkerSetup& setup) {
  // Never back into gtest: every way out of here is _exit(). A worker the driver forgot would
  // end on its own.
  alarm(120);
  WorkerProcess w(fd, model);
  try {
    w.run(dir, setup, seed);
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
    if (m.keep_cycle_records) m.cycle_records.push_back(r);
    m.apply(r);
  }
  buf.erase(0, used);
}

// Forks a worker, lets it run for `run` (counted from the fork, or from its report that the
// store is open), kills it and applies everything it reported.
void run_worker(Model& m, const std::string& dir, uint64_t worker_seed, const WorkerSetup& setup,
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
    worker_main(fds[1], m, worker_seed, dir, setup);
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
    run_worker(m, dir.path(), seed ^ mix(static_cast<uint64_t>(cycle) + 1),
               WorkerSetup{.sync = sync, .shards = shards}, run, from_open);
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

// ---- power losses -------------------------------------------------------------------------------
//
// The same load, worker and reports, with a power loss instead of a bare SIGKILL: the worker's
// store runs on a file system that records what each successful sync covered (power_loss_fs.h);
// after the kill the driver cuts every file back to what was durable, then reopens the store on
// the real file system and checks what the worker's sync mode promises. Between cycles the
// driver's own clean close counts as a shutdown that synced everything.
//
// What each mode promises (delayq/store.h), and how it is checked:
//  - Sync::always: nothing answered is lost. check_store(), exactly as after a SIGKILL, and the
//    prefix check below must find no answered call lost.
//  - every mode: what comes back is the queue as it was after some prefix of the calls. RocksDB
//    recovers a prefix of its write-ahead log, and each call's changes reach the log atomically
//    (alone, or in one write with the calls queued beside it) and in call order, so a lost call
//    is always among the latest ones. explain_by_prefix() searches for such a
//    prefix of each worker thread's calls (the threads own disjoint jobs), the two fitting the
//    order in which calls were made: a call that began after another thread's call had returned
//    was written after it, so it cannot be kept while that one is lost.
//  - Sync::batch: at most sync_batch_ops - 1 answered calls lost. sync_batch_ops is 8 here and
//    sync_interval 10 s, so that only the count can trigger a sync within a cycle.
//  - Sync::periodic and Sync::none: a prefix of any length.
// Bodies, topics, the absence of jobs never pushed, and early deliveries are checked as in the
// kill cycles; after a weaker mode's loss the driver's picture of the queue becomes the prefix
// found (attempts as stored, bounds for early delivery as low as any explaining prefix allows).

// A job as the reopened store shows it.
struct Seen {
  bool exists = false;
  uint32_t attempts = 0;
};

// A job as a prefix of the calls leaves it.
struct Expect {
  bool exists = false;
  uint32_t attempts = 0;
  TimePoint not_before;  // the harness's lower bound for its next delivery
};

bool matches(const Expect& e, const Seen& s) {
  return e.exists == s.exists && (!e.exists || e.attempts == s.attempts);
}

// One call of a worker thread: its intent and, if it returned before the kill, its outcome.
struct Call {
  Record intent;
  std::optional<Record> done;
  size_t intent_at = 0;  // positions in the cycle's records (the order the worker sent them in)
  size_t done_at = SIZE_MAX;
};

// Whether the call was answered and changed the queue: one atomic write to the store.
bool answered_write(const Call& c) {
  if (!c.done || c.done->code != 0) return false;
  switch (c.done->kind) {
    case Kind::push_done:
    case Kind::reserved:
    case Kind::ack_done:
    case Kind::nack_done:
    case Kind::cancel_done:
    case Kind::resched_done:
      return true;
    default:
      return false;  // a reserve that timed out, or a call refused: nothing was written
  }
}

std::string call_text(const Call& c) {
  const std::string id = job_id(c.intent.job);
  std::string what;
  switch (c.intent.kind) {
    case Kind::push_intent:
      what = "push of " + id;
      break;
    case Kind::reserve_intent:
      what = c.done && c.done->kind == Kind::reserved
                 ? "reserve that delivered " + job_id(c.done->job) + " (attempt " +
                       std::to_string(c.done->attempt) + ")"
                 : std::string("reserve");
      break;
    case Kind::ack_intent:
      what = "ack of " + id;
      break;
    case Kind::nack_intent:
      what = "nack of " + id;
      break;
    case Kind::cancel_intent:
      what = "cancel of " + id;
      break;
    case Kind::resched_intent:
      what = "reschedule of " + id;
      break;
    default:
      what = "call kind " + std::to_string(static_cast<int>(c.intent.kind));
      break;
  }
  if (!c.done) return what + " (in flight)";
  return what + " (returned " + errc_text(c.done->code) + ")";
}

std::string expect_text(const Expect& e) {
  return e.exists ? "present with " + std::to_string(e.attempts) + " attempts" : "absent";
}
std::string seen_text(const Seen& s) {
  return s.exists ? "present with " + std::to_string(s.attempts) + " attempts" : "absent";
}

struct PrefixVerdict {
  bool explained = false;  // some prefix of the calls (per thread, fitting their order) fits
  uint64_t lost = 0;       // answered calls that changed the queue and were lost, at the least
  std::array<size_t, kThreads> kept{};   // the best explanation: calls kept, per thread
  std::array<size_t, kThreads> calls{};  // calls made, per thread
  std::vector<std::string> lost_calls;   // the best explanation's lost answered calls (a few)
  std::string why;                       // !explained: what nothing explains
  std::vector<uint64_t> suspects;        // jobs that `why` is about
  // Per job present in some explaining prefix: its lowest bound for early delivery among them.
  std::unordered_map<uint64_t, TimePoint> not_before;
};

// Is `seen` (every job of `before` and every job pushed in `records`) the queue as it was after
// some prefix of the calls in `records`, starting from `before`? Calls that may matter: a
// thread's last call may have been in flight at the kill (kept or not; an ack in flight may have
// been refused, a reserve in flight may have delivered any one job of its thread's).
PrefixVerdict explain_by_prefix(const std::unordered_map<uint64_t, JobModel>& before,
                                const std::vector<Record>& records,
                                const std::unordered_map<uint64_t, Seen>& seen) {
  static_assert(kThreads == 2, "the search below pairs the prefixes of two threads");
  PrefixVerdict v;
  std::array<std::vector<Call>, kThreads> calls;
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (r.thread >= kThreads) continue;
    std::vector<Call>& mine = calls[r.thread];
    switch (r.kind) {
      case Kind::push_intent:
      case Kind::reserve_intent:
      case Kind::ack_intent:
      case Kind::nack_intent:
      case Kind::cancel_intent:
      case Kind::resched_intent:
        mine.push_back(Call{r, std::nullopt, i, SIZE_MAX});
        break;
      case Kind::push_done:
      case Kind::reserved:
      case Kind::reserve_done:
      case Kind::ack_done:
      case Kind::nack_done:
      case Kind::cancel_done:
      case Kind::resched_done:
        if (!mine.empty() && !mine.back().done) {
          mine.back().done = r;
          mine.back().done_at = i;
        }
        break;
      default:
        break;  // opened, violation, error: not calls (the last two fail the test anyway)
    }
  }
  auto seen_of = [&](uint64_t job) {
    auto it = seen.find(job);
    return it == seen.end() ? Seen{} : it->second;
  };

  // Per thread: the cuts c (its first c calls kept, the rest lost) that explain its jobs.
  std::array<std::vector<size_t>, kThreads> fits;
  // lost_from[t][c]: the answered writes among thread t's calls from c on.
  std::array<std::vector<uint64_t>, kThreads> lost_from;
  for (size_t t = 0; t < kThreads; ++t) {
    const std::vector<Call>& cs = calls[t];
    const size_t n = cs.size();
    v.calls[t] = n;
    lost_from[t].assign(n + 1, 0);
    for (size_t c = n; c-- > 0;) lost_from[t][c] = lost_from[t][c + 1] + answered_write(cs[c]);

    std::map<uint64_t, Expect> initial;  // the thread's jobs before the cycle
    for (const auto& [job, j] : before)
      if (owner_of(job) == t) initial[job] = Expect{j.fate == Fate::live, j.attempts, j.not_before};
    for (const Call& c : cs)
      if (c.intent.kind == Kind::push_intent) initial.try_emplace(c.intent.job);  // absent yet
    std::map<uint64_t, Expect> e = initial;  // ... and after the calls applied so far
    std::set<uint64_t> bad;                  // jobs that differ from what the store shows
    auto recheck = [&](uint64_t job) {
      if (matches(e[job], seen_of(job)))
        bad.erase(job);
      else
        bad.insert(job);
    };
    for (const auto& entry : e) recheck(entry.first);
    auto lower = [&](uint64_t job, TimePoint nb) {
      auto [it, fresh] = v.not_before.try_emplace(job, nb);
      if (!fresh) it->second = std::min(it->second, nb);
    };
    auto fold = [&] {  // the cut at hand explains the store: its bounds count
      for (const auto& [job, x] : e)
        if (x.exists) lower(job, x.not_before);
    };
    auto apply = [&](const Call& call) {
      const Record& in = call.intent;
      const Record& d = *call.done;
      if (d.code != 0) return;  // refused or failed: nothing written
      switch (d.kind) {
        case Kind::push_done:
          e[in.job] = Expect{true, 0, at_ns(in.a) + Duration(in.b)};
          recheck(in.job);
          break;
        case Kind::reserved: {
          Expect& x = e[d.job];
          x.attempts = d.attempt;
          x.not_before = at_ns(d.a) + kTtr + kRetryDelay;
          recheck(d.job);
          break;
        }
        case Kind::ack_done:
        case Kind::cancel_done:
          e[in.job].exists = false;
          recheck(in.job);
          break;
        case Kind::nack_done:
          e[in.job].not_before = at_ns(in.a) + (in.b >= 0 ? Duration(in.b) : kRetryDelay);
          break;
        case Kind::resched_done:
          e[in.job].not_before = std::max(at_ns(in.a), at_ns(in.b));
          break;
        default:
          break;
      }
    };

    size_t closest = 0;
    std::set<uint64_t> closest_bad = bad;
    const bool last_in_flight = n > 0 && !cs.back().done;
    for (size_t c = 0; c <= n; ++c) {
      if (c == n && last_in_flight) {
        // The call in flight was kept: the state above plus whatever it may have done.
        const Record& in = cs.back().intent;
        auto only = [&](uint64_t job) {
          return bad.empty() || (bad.size() == 1 && bad.count(job));
        };
        bool ok = false;
        std::optional<std::pair<uint64_t, TimePoint>> bound;
        switch (in.kind) {
          case Kind::push_intent: {
            const Expect pushed{true, 0, at_ns(in.a) + Duration(in.b)};
            ok = only(in.job) && matches(pushed, seen_of(in.job));
            bound = {in.job, pushed.not_before};
            break;
          }
          case Kind::ack_intent:
          case Kind::cancel_intent:
            // Done (gone), or refused (an ack after the lease ran out): unchanged.
            ok = only(in.job) && (matches(e[in.job], seen_of(in.job)) || !seen_of(in.job).exists);
            break;
          case Kind::nack_intent:
            ok = bad.empty();
            bound = {in.job, at_ns(in.a) + (in.b >= 0 ? Duration(in.b) : kRetryDelay)};
            break;
          case Kind::resched_intent:
            ok = bad.empty();
            bound = {in.job, std::max(at_ns(in.a), at_ns(in.b))};
            break;
          case Kind::reserve_intent:
            // It may have delivered one job of this thread's, unreported: one attempt more.
            if (bad.empty()) {
              ok = true;
            } else if (bad.size() == 1) {
              const uint64_t job = *bad.begin();
              const Seen s = seen_of(job);
              ok = e[job].exists && s.exists && s.attempts == e[job].attempts + 1;
            }
            break;
          default:
            break;
        }
        if (ok) {
          fits[t].push_back(c);
          fold();
          if (bound) lower(bound->first, bound->second);
        }
        break;
      }
      if (bad.empty()) {
        fits[t].push_back(c);
        fold();
      }
      if (bad.size() <= closest_bad.size()) {
        closest = c;
        closest_bad = bad;
      }
      if (c < n && cs[c].done) apply(cs[c]);
    }
    if (fits[t].empty() && v.why.empty()) {
      v.why = "no prefix of worker thread " + std::to_string(t) + "'s " + std::to_string(n) +
              " calls explains its jobs; the closest, its first " + std::to_string(closest) +
              " calls" +
              (closest > 0 ? " (up to the " + call_text(cs[closest - 1]) + ")" : std::string()) +
              ", leaves " + std::to_string(closest_bad.size()) + " jobs different:";
      // Replay up to `closest` once more to name what each differing job should be.
      e = initial;
      for (size_t c = 0; c < closest; ++c)
        if (cs[c].done) apply(cs[c]);
      size_t named = 0;
      for (uint64_t job : closest_bad) {
        if (named++ == 4) {
          v.why += " ...";
          break;
        }
        v.why += " " + job_id(job) + " should be " + expect_text(e[job]) + ", the store has it " +
                 seen_text(seen_of(job)) + ";";
        v.suspects.push_back(job);
      }
    }
  }
  if (fits[0].empty() || fits[1].empty()) return v;

  // need[t][c]: how many of the other thread's calls must be kept if thread t keeps c: those
  // that had returned before t's call c - 1 began (it was written after them).
  std::array<std::vector<size_t>, kThreads> need;
  for (size_t t = 0; t < kThreads; ++t) {
    const std::vector<Call>& mine = calls[t];
    const std::vector<Call>& other = calls[1 - t];
    need[t].assign(mine.size() + 1, 0);
    size_t k = 0;
    for (size_t c = 1; c <= mine.size(); ++c) {
      while (k < other.size() && other[k].done_at < mine[c - 1].intent_at) ++k;
      need[t][c] = k;
    }
  }
  // Keeping c0 calls of thread 0 and c1 of thread 1 fits their order iff c1 >= need[0][c0] and
  // c0 >= need[1][c1]. need[1] grows with c1, so for each c0 the c1 that fit form a range; the
  // largest one in fits[1] loses the least.
  std::optional<std::pair<size_t, size_t>> best;
  uint64_t best_lost = 0;
  for (size_t c0 : fits[0]) {
    const size_t lo = need[0][c0];
    // The largest c1 with need[1][c1] <= c0 (need[1][0] is 0, so there is one).
    const auto past = std::upper_bound(need[1].begin(), need[1].end(), c0);
    const size_t hi = static_cast<size_t>(past - need[1].begin()) - 1;
    auto it = std::upper_bound(fits[1].begin(), fits[1].end(), hi);
    if (it == fits[1].begin()) continue;
    const size_t c1 = *--it;
    if (c1 < lo) continue;
    const uint64_t lost = lost_from[0][c0] + lost_from[1][c1];
    if (!best || lost <= best_lost) {
      best = {c0, c1};
      best_lost = lost;
    }
  }
  if (!best) {
    const size_t c0 = fits[0].back(), c1 = fits[1].back();
    v.why = "each worker thread's calls are explained by a prefix of its own (at most " +
            std::to_string(c0) + " of thread 0's " + std::to_string(calls[0].size()) + " calls, " +
            std::to_string(c1) + " of thread 1's " + std::to_string(calls[1].size()) +
            "), but no two of them fit the order in which the calls were made: a call kept that "
            "began after a lost call of the other thread had returned";
    if (c1 < need[0][c0])
      v.why += " (thread 0's " + call_text(calls[0][c0 - 1]) + " began after thread 1's " +
               call_text(calls[1][need[0][c0] - 1]) + " had returned)";
    else if (c0 < need[1][c1])
      v.why += " (thread 1's " + call_text(calls[1][c1 - 1]) + " began after thread 0's " +
               call_text(calls[0][need[1][c1] - 1]) + " had returned)";
    return v;
  }
  v.explained = true;
  v.lost = best_lost;
  v.kept = {best->first, best->second};
  for (size_t t = 0; t < kThreads; ++t)
    for (size_t c = v.kept[t]; c < calls[t].size(); ++c)
      if (answered_write(calls[t][c]) && v.lost_calls.size() < 8)
        v.lost_calls.push_back("thread " + std::to_string(t) + ": " + call_text(calls[t][c]));
  return v;
}

// The power-loss cycles' settings.
constexpr int kDefaultPowerCycles = kUnderAsan ? 32 : 64;
constexpr uint32_t kPowerBatchOps = 8;         // small, so that Sync::batch's bound bites
constexpr Duration kPowerBatchInterval = 10s;  // long: within a cycle only the count syncs
constexpr Duration kPowerPeriodicInterval = 15ms;

// Mostly Sync::always (6 cycles in 10: its promise is the strongest), and every weaker mode in
// turn (batch twice, as its bound is the one that can be exceeded).
Sync power_mode(int cycle) {
  switch (cycle % 10) {
    case 1:
    case 6:
      return Sync::batch;
    case 3:
      return Sync::periodic;
    case 8:
      return Sync::none;
    default:
      return Sync::always;
  }
}

// How many answered calls a power loss may take; nullopt: any number (the latest ones).
std::optional<uint64_t> allowed_loss(Sync s) {
  switch (s) {
    case Sync::always:
      return 0;
    case Sync::batch:
      return kPowerBatchOps - 1;
    case Sync::periodic:
    case Sync::none:
      return std::nullopt;
  }
  return std::nullopt;
}

struct PowerPlan {
  int cycles = 0;
  uint64_t seed = 0;
  // The mode a cycle's worker runs in, and the mode whose promise the driver checks: the same,
  // but for the test of the checks themselves.
  std::function<Sync(int)> run_mode;
  std::function<Sync(int)> checked_mode;
  bool from_open_only = false;  // count every run from the worker's report that it opened
};

struct PowerTally {
  int done_cycles = 0;
  int killed_before_open = 0;
  std::array<int, 4> cycles{};         // per mode (checked)
  std::array<uint64_t, 4> max_lost{};  // the most answered calls one power loss took, per mode
  std::array<uint64_t, 4> lost{};      // all of them, per mode
  uint64_t syncs_recorded = 0;
  power_loss::PowerLossStats fs;
};

size_t mode_index(Sync s) {
  return static_cast<size_t>(s) % 4;
}

// After a power loss: the store must be the queue after some prefix of the calls, losing no
// more answered calls than `checked` allows, and keep every other promise (check_store()).
void check_after_power_loss(Model& m, Engine& q,
                            const std::unordered_map<uint64_t, JobModel>& before, Sync checked,
                            bool last, PowerTally& tally) {
  std::unordered_map<uint64_t, Seen> seen;
  for (const auto& entry : m.jobs) {
    const uint64_t job = entry.first;
    Result<JobInfo> got = q.get(job_id(job));
    if (got.ok()) {
      seen[job] = Seen{true, got->attempts};
    } else if (got.is(Errc::not_found)) {
      seen[job] = Seen{};
    } else {
      m.problem("get(" + job_id(job) + ") failed: " + got.status().to_string());
      return;
    }
  }
  const PrefixVerdict v = explain_by_prefix(before, m.cycle_records, seen);
  if (!v.explained) {
    std::string s = "after the power loss the store is not the queue as it was after any ";
    s += "prefix of the calls: " + v.why;
    for (uint64_t job : v.suspects) s += m.explain(job);
    m.problem(s);
    return;
  }
  const size_t mi = mode_index(checked);
  tally.max_lost[mi] = std::max(tally.max_lost[mi], v.lost);
  tally.lost[mi] += v.lost;
  if (const std::optional<uint64_t> allowed = allowed_loss(checked); allowed && v.lost > *allowed) {
    std::string s = "the power loss took " + std::to_string(v.lost) +
                    " answered calls that changed the queue, at the least (worker thread 0 kept " +
                    std::to_string(v.kept[0]) + " of its " + std::to_string(v.calls[0]) +
                    " calls, thread 1 " + std::to_string(v.kept[1]) + " of " +
                    std::to_string(v.calls[1]) + "); Sync::" + to_string(checked) + " allows " +
                    std::to_string(*allowed) + ". Lost:";
    for (const std::string& c : v.lost_calls) s += "\n    " + c;
    if (v.lost > v.lost_calls.size()) s += "\n    ...";
    m.problem(s);
  }
  if (checked != Sync::always) {
    // The prefix found is the queue now: fates and attempts as stored, and bounds for early
    // delivery as low as any explaining prefix allows (which one it was cannot be known).
    for (auto& [job, j] : m.jobs) {
      const Seen& s = seen[job];
      if (!s.exists) {
        j.fate = Fate::gone;
        continue;
      }
      j.fate = Fate::live;
      j.attempts = s.attempts;
      if (auto it = v.not_before.find(job); it != v.not_before.end()) j.not_before = it->second;
    }
    m.reserves_in_flight = 0;
  }
  check_store(m, q, last);
}

void run_power_cycles(Model& m, const PowerPlan& plan, const std::string& root, PowerTally& tally) {
  const std::string store = root + "/store";
  const std::string side_log = root + "/synced.log";  // outside the store: no power loss cuts it
  std::mt19937_64 rng(plan.seed);
  power_loss::Ledger ledger;
  for (int cycle = 0; cycle < plan.cycles && m.problems.empty(); ++cycle) {
    m.cycle = cycle;
    const Sync mode = plan.run_mode(cycle);
    const Sync checked = plan.checked_mode(cycle);
    const size_t shards = cycle % 3 == 2 ? 2 : 1;
    m.cycle_label =
        std::string("power loss, Sync::") + to_string(checked) +
        (mode != checked ? std::string(" promised, the worker ran Sync::") + to_string(mode)
                         : std::string()) +
        ", " + std::to_string(shards) + (shards == 1 ? " shard" : " shards");
    const auto run = std::chrono::milliseconds(kMinRunMs + rng() % (kMaxRunMs - kMinRunMs + 1));
    const bool from_open = plan.from_open_only || rng() % 4 != 0;
    const uint64_t cut_seed = rng();  // the power loss's own choices (power_loss_fs.cc)
    // Everything in the directory is durable now: the store was closed cleanly (by the last
    // cycle's driver) and, in this simulation, fully synced.
    if (Status s = ledger.reset_to(store); !s.ok()) {
      m.problem("power-loss ledger: " + s.to_string());
      break;
    }
    if (::truncate(side_log.c_str(), 0) != 0 && errno != ENOENT) {
      m.problem("truncating the side log: " + std::string(std::strerror(errno)));
      break;
    }
    WorkerSetup setup;
    setup.sync = mode;
    setup.shards = shards;
    setup.sync_batch_ops = kPowerBatchOps;
    setup.sync_interval = mode == Sync::periodic ? kPowerPeriodicInterval : kPowerBatchInterval;
    setup.sync_log = side_log;

    const std::unordered_map<uint64_t, JobModel> before = m.jobs;
    m.cycle_records.clear();
    m.keep_cycle_records = true;
    const uint64_t opened_before = m.counts.opened;
    run_worker(m, store, plan.seed ^ mix(static_cast<uint64_t>(cycle) + 1), setup, run, from_open);
    m.keep_cycle_records = false;
    if (m.counts.opened == opened_before) ++tally.killed_before_open;
    m.settle_in_flight();
    ++tally.done_cycles;
    ++tally.cycles[mode_index(checked)];
    if (!m.problems.empty()) break;

    // The power goes out: every file keeps only what was durable.
    Status cut = ledger.apply_log(side_log);
    tally.syncs_recorded += ledger.counts().synced;
    if (cut.ok()) {
      std::mt19937_64 cut_rng(cut_seed);
      cut = power_loss::simulate_power_loss(store, ledger, cut_rng, tally.fs);
    }
    if (!cut.ok()) {
      m.problem("simulating the power loss: " + cut.to_string());
      break;
    }
    std::unique_ptr<Engine> q = open_for_check(m, store);
    if (q) check_after_power_loss(m, *q, before, checked, cycle + 1 == plan.cycles, tally);
  }  // the driver's store is closed before the next worker starts
  m.cycle_label.clear();
  m.cycle_records.clear();
}

// `cycles`: 0 when the test's cycle count is fixed.
std::string replay_text(uint64_t seed, int cycles, const char* filter) {
  return "seed " + std::to_string(seed) + " (replay: DELAYQ_CRASH_SEED=" + std::to_string(seed) +
         (cycles > 0 ? " DELAYQ_POWER_CYCLES=" + std::to_string(cycles) : std::string()) +
         " --gtest_filter=" + filter + ")";
}

TEST(CrashHarness, PowerLossesLoseNoMoreThanEachSyncModePromises) {
  const uint64_t seed = env_u64("DELAYQ_CRASH_SEED",
                                (uint64_t{std::random_device()()} << 32) ^ std::random_device()());
  const int cycles = static_cast<int>(env_u64("DELAYQ_POWER_CYCLES", kDefaultPowerCycles));
  const std::string replay =
      replay_text(seed, cycles, "CrashHarness.PowerLossesLoseNoMoreThanEachSyncModePromises");
  SCOPED_TRACE(replay);
  TempDir root;
  ASSERT_FALSE(root.path().empty()) << "mkdtemp failed";

  Model m;
  m.salt = mix(seed ^ 0x5eed);
  m.origin = wall_now();
  const Steady::time_point t0 = Steady::now();
  PowerTally tally;
  run_power_cycles(m, PowerPlan{cycles, seed, power_mode, power_mode, false}, root.path(), tally);

  uint64_t drained = 0;
  size_t owed_at_drain = 0;
  if (m.problems.empty()) {
    m.cycle = tally.done_cycles;  // problems of the drain count as the cycle after the last
    owed_at_drain = m.live_jobs().size();
    std::unique_ptr<Engine> q = open_for_check(m, root.path() + "/store");
    if (q) drain(m, *q, &drained);
  }
  const double secs = std::chrono::duration<double>(Steady::now() - t0).count();

  for (size_t i = 0; i < m.problems.size() && i < 20; ++i) ADD_FAILURE() << m.problems[i];
  if (m.problems.size() > 20) ADD_FAILURE() << "... and " << (m.problems.size() - 20) << " more";

  const PowerTally& t = tally;
  auto per_mode = [&](Sync s) {
    const size_t i = mode_index(s);
    return std::to_string(t.cycles[i]) + " " + to_string(s) +
           " (answered calls lost: " + std::to_string(t.lost[i]) + ", at most " +
           std::to_string(t.max_lost[i]) + " at once)";
  };
  const Model::Counts& c = m.counts;
  std::printf(
      "[ harness  ] %s%d power-loss cycles in %.1f s, %s\n"
      "[ harness  ] cycles: %s, %s, %s, %s\n"
      "[ harness  ] calls that returned: %llu pushes, %llu deliveries, %llu acks, %llu nacks, "
      "%llu cancels, %llu reschedules; %d workers died before the store was open\n"
      "[ harness  ] power losses: %llu syncs recorded; %llu of %llu files cut, %llu bytes "
      "dropped; %llu unsynced tails partly kept; never-synced files: %llu deleted, %llu "
      "emptied\n"
      "[ harness  ] drain: %llu of %zu owed jobs delivered\n",
      kUnderAsan ? "ASan, " : "", t.done_cycles, secs, replay.c_str(),
      per_mode(Sync::always).c_str(), per_mode(Sync::batch).c_str(),
      per_mode(Sync::periodic).c_str(), per_mode(Sync::none).c_str(),
      static_cast<unsigned long long>(c.pushes), static_cast<unsigned long long>(c.deliveries),
      static_cast<unsigned long long>(c.acks), static_cast<unsigned long long>(c.nacks),
      static_cast<unsigned long long>(c.cancels), static_cast<unsigned long long>(c.reschedules),
      t.killed_before_open, static_cast<unsigned long long>(t.syncs_recorded),
      static_cast<unsigned long long>(t.fs.cut), static_cast<unsigned long long>(t.fs.files),
      static_cast<unsigned long long>(t.fs.bytes_dropped),
      static_cast<unsigned long long>(t.fs.unsynced_tails_kept),
      static_cast<unsigned long long>(t.fs.never_synced_deleted),
      static_cast<unsigned long long>(t.fs.never_synced_emptied),
      static_cast<unsigned long long>(drained), owed_at_drain);

  if (m.problems.empty() && t.done_cycles >= 16) {
    // A simulation that never dropped a byte, or workers that never got going, would pass
    // without proving anything.
    EXPECT_GT(t.syncs_recorded, 0u) << "no sync was recorded: is the recording file system used?";
    EXPECT_GT(t.fs.bytes_dropped, 0u) << "no power loss dropped anything";
    EXPECT_GE(c.opened, static_cast<uint64_t>(t.done_cycles / 2)) << "few workers opened";
    EXPECT_GE(c.pushes, static_cast<uint64_t>(t.done_cycles)) << "the workers pushed too little";
  }
}

// The checks above can fail: a worker that never syncs (Sync::none), checked as if it ran
// Sync::always and then Sync::batch, loses answered calls to a power loss, and the driver must
// say so within a few cycles.
TEST(CrashHarness, PowerLossChecksCatchAStoreThatDoesNotSync) {
  const uint64_t seed = env_u64("DELAYQ_CRASH_SEED",
                                (uint64_t{std::random_device()()} << 32) ^ std::random_device()());
  constexpr int kCycles = 20;
  SCOPED_TRACE(replay_text(seed, 0, "CrashHarness.PowerLossChecksCatchAStoreThatDoesNotSync"));
  for (const Sync promised : {Sync::always, Sync::batch}) {
    TempDir root;
    ASSERT_FALSE(root.path().empty()) << "mkdtemp failed";
    Model m;
    m.salt = mix(seed ^ 0x5eed);
    m.origin = wall_now();
    PowerTally tally;
    const PowerPlan plan{kCycles, seed ^ mix(static_cast<uint64_t>(promised)),
                         [](int) { return Sync::none; }, [promised](int) { return promised; },
                         /*from_open_only=*/true};
    run_power_cycles(m, plan, root.path(), tally);
    ASSERT_FALSE(m.problems.empty())
        << tally.done_cycles
        << " power losses of a store that never syncs, checked as Sync::" << to_string(promised)
        << ", found nothing wrong";
    // The failure must be the lost calls, not something else that went wrong.
    const std::string& first = m.problems.front();
    EXPECT_NE(first.find("answered calls that changed the queue"), std::string::npos) << first;
    std::printf("[ harness  ] Sync::none checked as Sync::%s: caught in cycle %d: %s\n",
                to_string(promised), tally.done_cycles - 1,
                first.substr(0, first.find('\n')).c_str());
  }
}

// explain_by_prefix() on hand-made reports: it accepts the latest calls lost and nothing else.
class PrefixCheck : public ::testing::Test {
 protected:
  // Thread t starts a call (kind: an intent) on `job` and, unless in flight, returns.
  void call(uint8_t t, Kind intent, Kind done, uint64_t job, uint8_t code = 0,
            uint32_t attempt = 0) {
    start(t, intent, job);
    finish(t, done, job, code, attempt);
  }
  void start(uint8_t t, Kind intent, uint64_t job) {
    Record r = make_record(intent, job, 1'000'000, 0);
    r.thread = t;
    records.push_back(r);
  }
  void finish(uint8_t t, Kind done, uint64_t job, uint8_t code = 0, uint32_t attempt = 0) {
    Record r = make_record(done, job, 1'000'000, 0);
    r.thread = t;
    r.code = code;
    r.attempt = attempt;
    records.push_back(r);
  }
  void push(uint8_t t, uint64_t job) { call(t, Kind::push_intent, Kind::push_done, job); }
  void deliver(uint8_t t, uint64_t job, uint32_t attempt) {
    start(t, Kind::reserve_intent, 0);
    finish(t, Kind::reserved, job, 0, attempt);
  }
  void ack(uint8_t t, uint64_t job) { call(t, Kind::ack_intent, Kind::ack_done, job); }
  PrefixVerdict verdict() const { return explain_by_prefix(before, records, seen); }

  static Seen present(uint32_t attempts = 0) { return Seen{true, attempts}; }
  std::unordered_map<uint64_t, JobModel> before;
  std::vector<Record> records;
  std::unordered_map<uint64_t, Seen> seen;
};

// Jobs 2, 4, 6 are thread 0's; 1, 3, 5 thread 1's (owner_of).
TEST_F(PrefixCheck, EverythingKeptLosesNothing) {
  push(0, 2);
  push(0, 4);
  deliver(0, 2, 1);
  seen = {{2, present(1)}, {4, present()}};
  const PrefixVerdict v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 0u);
}

TEST_F(PrefixCheck, TheLatestCallsLostAreAPrefix) {
  push(0, 2);
  push(0, 4);
  deliver(0, 2, 1);
  ack(0, 2);
  seen = {{2, present(1)}, {4, present()}};  // the ack is lost
  PrefixVerdict v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 1u);
  seen = {{2, present()}, {4, present()}};  // and the delivery
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 2u);
  seen = {{2, Seen{}}, {4, Seen{}}};  // everything
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 4u);
}

TEST_F(PrefixCheck, ALostCallBeforeAKeptOneIsNoPrefix) {
  push(0, 2);
  push(0, 4);
  push(0, 6);
  seen = {{2, present()}, {4, Seen{}}, {6, present()}};
  PrefixVerdict v = verdict();
  EXPECT_FALSE(v.explained);
  EXPECT_NE(v.why.find("job-4 should be present"), std::string::npos) << v.why;
  // An ack lost while a later push was kept: the acked job came back.
  records.clear();
  push(0, 2);
  deliver(0, 2, 1);
  ack(0, 2);
  push(0, 4);
  seen = {{2, present(1)}, {4, present()}};
  v = verdict();
  EXPECT_FALSE(v.explained);
  // Attempts that went down while a later call was kept.
  seen = {{2, Seen{}}, {4, present()}};
  EXPECT_TRUE(verdict().explained);
  records.clear();
  push(0, 2);
  deliver(0, 2, 1);
  push(0, 4);
  seen = {{2, present(0)}, {4, present()}};
  EXPECT_FALSE(verdict().explained);
}

TEST_F(PrefixCheck, PrefixesOfTwoThreadsMustFitTheOrderOfTheCalls) {
  push(1, 1);  // returned before thread 0's push began: written first
  push(0, 2);
  seen = {{1, Seen{}}, {2, present()}};
  PrefixVerdict v = verdict();
  EXPECT_FALSE(v.explained);
  EXPECT_NE(v.why.find("push of job-2 (returned ok) began after thread 1's push of job-1"),
            std::string::npos)
      << v.why;
  // Overlapping calls may be written in either order.
  records.clear();
  start(1, Kind::push_intent, 1);
  start(0, Kind::push_intent, 2);
  finish(1, Kind::push_done, 1);
  finish(0, Kind::push_done, 2);
  v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 1u);
}

TEST_F(PrefixCheck, CallsInFlightMayOrMayNotBeKept) {
  before[2] = JobModel{Fate::live, 0, {}};
  before[4] = JobModel{Fate::live, 0, {}};
  start(0, Kind::reserve_intent, 0);  // in flight: any one job of thread 0's, one attempt more
  seen = {{2, present()}, {4, present(1)}};
  PrefixVerdict v = verdict();
  ASSERT_TRUE(v.explained) << v.why;
  EXPECT_EQ(v.lost, 0u);
  seen = {{2, present(1)}, {4, present(1)}};  // but not two
  EXPECT_FALSE(verdict().explained);
  records.clear();
  start(0, Kind::ack_intent, 2);  // in flight: done or not
  seen = {{2, Seen{}}, {4, present()}};
  EXPECT_TRUE(verdict().explained);
  seen = {{2, present()}, {4, present()}};
  EXPECT_TRUE(verdict().explained);
  seen = {{2, present()}, {4, Seen{}}};  // but it touched job 2 only
  EXPECT_FALSE(verdict().explained);
}

}  // namespace
}  // namespace delayq
