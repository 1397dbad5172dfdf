// The pieces of the Prometheus text format (0.0.4) that delayqd's /metrics is written with
// (metrics.cc, timing_metrics.cc).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>

namespace delayq::http::prom {

// Appends `s` and a newline.
void line(std::string& out, std::string_view s);
// The # HELP and # TYPE lines of a metric.
void help(std::string& out, std::string_view name, std::string_view type, std::string_view text);
// A metric without labels: its HELP, TYPE and value.
void counter(std::string& out, const char* name, const char* text, uint64_t v);
void gauge(std::string& out, const char* name, const char* text, int64_t v);
// A sample: "name{labels} value", or "name value" without labels. `labels` is what goes
// between the braces, its values already label()'s; `value` an integer or a number().
template <typename V>
void sample(std::string& out, std::string_view name, std::string_view labels, const V& value) {
  static_assert(!std::is_floating_point_v<V>, "a double is written with number()");
  if (labels.empty())
    fmt::format_to(std::back_inserter(out), "{} {}\n", name, value);
  else
    fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", name, labels, value);
}
// A number as Prometheus reads it: the shortest text that reads back as the same double.
std::string number(double d);
// A label value: backslash, quote and newline escaped, and the text kept valid UTF-8 (the format
// requires it): a byte that is not part of valid UTF-8 (a topic stored before topics had to be
// text) is shown as the four characters \xNN, its backslash escaped like any other.
std::string label(std::string_view s);

}  // namespace delayq::http::prom
