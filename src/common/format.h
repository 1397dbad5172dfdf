// Small text helpers for error messages.
#pragma once

#include <string>

#include "delayq/clock.h"

namespace delayq {

// A duration as a person reads it: "250ms", "90s", "2h30m", "-5s".
std::string format_duration(Duration d);

}  // namespace delayq
