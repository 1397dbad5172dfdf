// libFuzzer target: arbitrary bytes as a schedule's rule (a cron expression, a macro, "every
// ..."), read in a time zone the first byte picks, the way Rule::parse gets them from a
// ScheduleSpec; then, for a rule that parses, its occurrences around instants taken from the
// input (src/schedule/rule.h).
//
// What it looks for: crashes and sanitizer reports (any undefined behaviour stops the run) in
// the field parser (numbers of any length, names, ranges, steps, empty items) and in the search
// for the next local time; a search that does not end; and answers that break the contract:
// next_after(t) not after t, next_at_or_after(t) before t, count() disagreeing with stepping.
// Build and run: scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "delayq/schedule.h"
#include "schedule/rule.h"

namespace {

using delayq::Duration;
using delayq::TimePoint;

// Zones with DST changes of 1 h, 30 min and at midnight, a 45-minute offset, and none.
constexpr const char* kZones[] = {"UTC",           "Europe/Berlin",     "America/New_York",
                                  "Australia/Lord_Howe", "America/Santiago", "Pacific/Chatham",
                                  "Asia/Kathmandu", "", "Not/AZone"};

// An instant between 1970 and 2262 from 8 bytes of input (or a fixed one when too short).
TimePoint instant(const uint8_t* p, size_t n) {
  uint64_t v = 0x1234'5678'9abc'def0;
  if (n >= 8) std::memcpy(&v, p, 8);
  return TimePoint(Duration(static_cast<int64_t>(v >> 1)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const char* zone = kZones[data[0] % std::size(kZones)];
  // The rule is the text up to a NUL; the 8 bytes after it, if any, give an instant.
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t nul = rest.find('\0');
  const std::string_view text = rest.substr(0, nul);
  const uint8_t* tail = nul == std::string_view::npos ? nullptr : data + 2 + nul;
  const size_t tail_size = tail ? size - 2 - nul : 0;
  const TimePoint t = instant(tail, tail_size);

  delayq::Result<delayq::schedule::Rule> r = delayq::schedule::Rule::parse(text, zone, t);
  if (!r.ok()) {
    if (r.status().message().empty()) std::abort();  // every refusal says why
    return 0;
  }
  const std::optional<TimePoint> next = r->next_after(t);
  if (next && *next <= t) std::abort();
  const std::optional<TimePoint> at_or_after = r->next_at_or_after(t);
  if (at_or_after && *at_or_after < t) std::abort();
  // A few steps on, each after the last, and count() agreeing with them.
  std::optional<TimePoint> o = next;
  uint64_t steps = 0;
  for (; o && steps < 5; ++steps) {
    const std::optional<TimePoint> after = r->next_after(*o);
    if (after && *after <= *o) std::abort();
    (void)delayq::occurrence_job_id("s", *o);
    if (!after) break;
    o = after;
  }
  if (next && o && steps == 5 && r->count(*next, *o) != 5) std::abort();
  return 0;
}
