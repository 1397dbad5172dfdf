// The version of this build (CMake's project version): what `delayqd --version` and
// `delayq --version` print, /health's data.version and /metrics' delayq_build_info show.
#pragma once

#include <string_view>

namespace delayq::wire {

std::string_view version() noexcept;

}  // namespace delayq::wire
