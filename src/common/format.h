// Small text helpers for error messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "delayq/clock.h"

namespace delayq {

// A duration as a person reads it: "250ms", "90s", "2h30m", "-5s".
std::string format_duration(Duration d);

// The length of the UTF-8 sequence that starts at s[i] if it is valid (shortest form, no
// surrogates, at most U+10FFFF), else 0. Precondition: i < s.size().
size_t utf8_sequence(std::string_view s, size_t i);
// The offset of the first byte of `s` that is not part of valid UTF-8, or npos.
size_t invalid_utf8_at(std::string_view s);

// n in base 36 (digits, then lower-case letters): short text for generated ids.
std::string to_base36(uint64_t n);

}  // namespace delayq
