// occurrence_job_id() (delayq/schedule.h).
#include <date/date.h>
#include <fmt/format.h>

#include "delayq/schedule.h"

namespace delayq {

std::string occurrence_job_id(std::string_view schedule_id, TimePoint instant) {
  using namespace std::chrono;
  const date::sys_days day = date::floor<date::days>(instant);
  const date::year_month_day ymd{day};
  const date::hh_mm_ss<Duration> tod{instant - day};
  std::string id = fmt::format("{}@{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", schedule_id,
                               static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                               static_cast<unsigned>(ymd.day()), tod.hours().count(),
                               tod.minutes().count(), tod.seconds().count());
  // As few digits of the fraction as show it exactly: 3, 6 or 9.
  const int64_t ns = tod.subseconds().count();
  if (ns % 1'000'000 == 0) {
    if (ns != 0) id += fmt::format(".{:03}", ns / 1'000'000);
  } else if (ns % 1'000 == 0) {
    id += fmt::format(".{:06}", ns / 1'000);
  } else {
    id += fmt::format(".{:09}", ns);
  }
  id += 'Z';
  return id;
}

}  // namespace delayq
