// delayqd's log (log.h). Decision: a small function on fmt, not spdlog. Debian 12's
// libspdlog-dev is 1.10, itself built on libfmt 9: it would add a second library to link and
// ship (libspdlog1.1), and its headers cost every file that logs several times the compile time
// of <fmt/core.h>, while test.sh is near its time budget. delayqd needs none of what spdlog adds
// (sinks, rotation, async queues, runtime levels): it writes a few lines to stderr, which
// systemd's journal or the shell's redirection stores. What it needs is here: a UTC time to the
// millisecond, a level word, one line per event written whole.
#include "delayqd/log.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

namespace delayq::http {

std::string_view to_string(LogLevel level) {
  switch (level) {
    case LogLevel::info:
      return "info";
    case LogLevel::warn:
      return "warn";
    case LogLevel::error:
      return "error";
  }
  return "error";
}

std::string log_line(std::chrono::system_clock::time_point now, LogLevel level,
                     std::string_view message) {
  const auto ms = std::chrono::floor<std::chrono::milliseconds>(now.time_since_epoch()).count();
  // floor, not truncation: a time before 1970 still gets milliseconds from 0 to 999.
  const long long secs = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
  const std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  std::string line = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z {} ",
                                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                                 tm.tm_min, tm.tm_sec, ms - secs * 1000, to_string(level));
  for (const char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
  line += '\n';
  return line;
}

void log_message(LogLevel level, std::string_view message) {
  const std::string line = log_line(std::chrono::system_clock::now(), level, message);
  // One write(2) for the whole line (stderr is unbuffered, and a pipe or O_APPEND file takes it
  // whole); a short write (a full pipe) goes on from where it stopped.
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace delayq::http
