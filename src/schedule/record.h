// A schedule as a durable store keeps it: one key per schedule in family "meta",
// "schedule/<id>", its value the spec, the anchor of an "every" rule, the pause and the
// planner's state (docs/journal-format.md has the bytes). The engine writes it in the same
// atomic batch as the job of each occurrence it fires, so that a job never exists without its
// schedule's state having moved past its occurrence, nor the reverse.
#pragma once

#include <string>
#include <string_view>

#include "delayq/error.h"
#include "delayq/schedule.h"
#include "schedule/planner.h"

namespace delayq::schedule {

inline constexpr char kSchedulePrefix[] = "schedule/";
inline constexpr uint8_t kScheduleVersion = 1;

struct StoredSchedule {
  ScheduleSpec spec{};
  TimePoint anchor{};  // the first occurrence of an "every" rule (Rule::parse's anchor)
  bool paused = false;
  ScheduleState state{};
};

std::string schedule_key(std::string_view id);
std::string encode_schedule(const StoredSchedule& s);
// Errors: corrupt, saying what is wrong (a length, a version or a flag it does not know).
Result<StoredSchedule> decode_schedule(std::string_view bytes);

}  // namespace delayq::schedule
