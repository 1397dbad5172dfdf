// delayqd's log: one line on stderr per event, "2026-11-27T17:50:01.123Z info listening on
// 127.0.0.1:9277" (log.cc says why this is a function on fmt, not spdlog).
#pragma once

#include <fmt/core.h>

#include <chrono>
#include <string>
#include <string_view>
#include <utility>

namespace delayq::http {

enum class LogLevel { info, warn, error };

// "info", "warn", "error": the word a line carries.
std::string_view to_string(LogLevel level);

// The line for `message` at `now`: "<UTC time to the millisecond>Z <level> <message>\n". A line
// break inside the message becomes a space, so that one event is one line.
std::string log_line(std::chrono::system_clock::time_point now, LogLevel level,
                     std::string_view message);

// Writes log_line(now, level, message) to stderr in one write, so that the lines of several
// threads never interleave.
void log_message(LogLevel level, std::string_view message);

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  log_message(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace delayq::http
