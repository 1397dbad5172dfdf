// Small text helpers for error messages.
#pragma once

#include <cstdint>
#include <string>

#include "delayq/clock.h"

namespace delayq {

// A duration as a person reads it: "250ms", "90s", "2h30m", "-5s".
std::string format_duration(Duration d);

// n in base 36 (digits, then lower-case letters): short text for generated ids.
std::string to_base36(uint64_t n);

}  // namespace delayq
