// Schedules: a job pushed again and again by a rule (every fixed interval, or a cron expression
// in a time zone). Plain structs, the same for every backend; docs/semantics.md, "Schedules", has
// the long form.
//
// Each occurrence of a schedule makes at most one job, whose id is the schedule's id and the
// occurrence's instant (occurrence_job_id()): however many times an occurrence is fired (a
// retry after a crash, two processes racing on one Redis queue), one job comes of it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "delayq/clock.h"
#include "delayq/job.h"

namespace delayq {

// Schedule ids are at most this long, so that an occurrence's job id (the schedule id, '@' and
// the instant, at most 31 bytes) fits kMaxIdBytes.
inline constexpr size_t kMaxScheduleIdBytes = 200;

struct ScheduleSpec {
  // Unique among the queue's schedules: schedule() with an id that exists replaces that
  // schedule. 1 to 200 bytes, no '@'.
  std::string id{};
  // When occurrences fall, one of:
  //  - "every <duration>": a fixed span of real time ("every 90s", "every 15m", "every 24h";
  //    units ms, s, m, h, d), the first occurrence at `start` (or when the schedule was created,
  //    without a start). Unaffected by time zones and DST: "every 24h" stays 24 h apart.
  //  - a cron expression of 5 fields (minute hour day-of-month month day-of-week), or 6 with
  //    seconds first; lists, ranges, steps and names (JAN, MON); or @yearly, @annually,
  //    @monthly, @weekly, @daily, @midnight, @hourly. Evaluated in `zone`.
  std::string rule{};
  // The IANA time zone a cron rule is read in ("Europe/Berlin"); the system's tz database.
  // "UTC" when empty. A local time that does not exist (spring forward) runs once, at the first
  // valid instant after it; one that exists twice (fall back) runs once, at the first.
  std::string zone{};
  // The job each occurrence pushes: topic, body, ttr, retry, priority. Its id, delay and due_at
  // must be empty: the job's id is the occurrence's, and it is due at the occurrence.
  JobSpec job{};
  // Occurrences at or after `start` and before `end` (both optional; end after start).
  std::optional<TimePoint> start{};
  std::optional<TimePoint> end{};

  // What to do with the occurrences that fell while the queue was down (or the schedule paused),
  // once it runs again.
  enum class CatchUp : uint8_t {
    skip,  // none of them: the schedule goes on at its next future occurrence
    one,   // one job, for the latest of them
    all,   // one job each, oldest first, at most catch_up_max (the latest ones)
  };
  CatchUp catch_up = CatchUp::one;
  uint32_t catch_up_max = 100;  // 1 to 10 000

  // What to do at an occurrence while the job of the previous occurrence still lives (delayed,
  // ready, reserved; dead letters do not count).
  enum class Overlap : uint8_t {
    allow,  // push it anyway
    skip,   // push nothing for this occurrence (counted in ScheduleInfo::skipped_overlap)
  };
  Overlap overlap = Overlap::allow;
  // (No operator==: JobSpec has none, so a defaulted one would be deleted.)
};

// A schedule as get_schedule() and list_schedules() see it.
struct ScheduleInfo {
  ScheduleSpec spec{};
  bool paused = false;
  // The instant of the latest occurrence that pushed a job; empty before the first.
  std::optional<TimePoint> last_fired{};
  // The next occurrences, soonest first (up to 5; fewer when the schedule ends).
  std::vector<TimePoint> next{};
  // The ids of this schedule's jobs that still live (delayed, ready or reserved), oldest first.
  std::vector<std::string> live_jobs{};
  // Since the schedule was created: occurrences that pushed a job, occurrences skipped because
  // the previous job still lived, and occurrences the catch-up policy passed over.
  uint64_t fired = 0, skipped_overlap = 0, skipped_catch_up = 0;
};

struct SchedulePage {
  std::vector<ScheduleInfo> schedules{};
  std::string cursor{};  // empty when this page is the last
};

// The id of the job that the occurrence of schedule `schedule_id` at `instant` pushes:
// "<schedule id>@<instant in UTC, ISO 8601>", e.g. "nightly@2026-12-01T09:00:00Z", with
// fractional seconds only when the instant has them ("@2026-12-01T09:00:00.250Z").
std::string occurrence_job_id(std::string_view schedule_id, TimePoint instant);

}  // namespace delayq
