// What a queue reports, checked field by field: a job (for tests that compare two views of one
// job) and the totals of stats().
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <tuple>
#include <utility>

#include "common/totals.h"
#include "delayq/job.h"

namespace delayq::testing {

// Every field of a JobInfo but its two instants (due, lease_deadline), which callers compare
// under their own rules: exactly, within a range, or only in some states.
inline void expect_same_fields(const JobInfo& got, const JobInfo& want) {
  const auto fields = [](const JobInfo& j) {
    return std::tie(j.id, j.topic, j.state, j.attempts, j.max_attempts, j.ttr, j.body);
  };
  EXPECT_EQ(fields(got), fields(want)) << "(id, topic, state, attempts, max_attempts, ttr, body)";
}

// The totals of stats() that a test expects, by their names in common/totals.h ("pushed",
// "acked", ...); the others are not checked. A failure names the total; a name that is not a
// total fails too.
inline void expect_totals(const Stats& got,
                          std::initializer_list<std::pair<std::string_view, uint64_t>> want) {
  for (const auto& [name, value] : want) {
    const TotalName* total = nullptr;
    for (const TotalName& t : kTotalNames)
      if (t.name == name) total = &t;
    if (total == nullptr) {
      ADD_FAILURE() << name << " is not a total of Stats";
      continue;
    }
    EXPECT_EQ(got.*total->field, value) << "Stats::" << name;
  }
}

}  // namespace delayq::testing
