// delayq-crashtest's final report: what the cycles did, the calls made, and the verdict on each
// promise, as text or as one JSON object.
#pragma once

#include <array>
#include <string>

#include "crashtest/options.h"
#include "crashtest/run.h"

namespace delayq::crashtest {

// The promises the report gives a verdict on; every problem the harness found is one of them.
enum class Promise : size_t {
  lost,         // an answered call lost (after a kill: any; after a power loss: beyond the mode)
  resurrected,  // a job back after it was shown gone, or delivered after it was gone
  early,        // a job delivered before its due time
  wrong,        // a job's state, due time, attempts or lease (or the store's counts) wrong
  batch_bound,  // Sync::batch lost more than sync_batch_ops - 1 answered calls at once
  other,        // a call failed, a worker died on its own: the run could not test
};
constexpr size_t kPromises = 6;

// Which promise a problem of the harness (Model::problems) is about, by what it says.
Promise promise_of(const std::string& problem);

// The report, as text (or JSON with o.json); returns the exit status: 0 every promise held, 1
// some broke.
int print_report(const Options& o, const RunResult& r);

}  // namespace delayq::crashtest
