// The timing part of `delayq stats` (stats_timing.h).
#include "cli/stats_timing.h"

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <vector>

#include "cli/human_text.h"
#include "common/timing.h"
#include "wire/stats.h"

namespace delayq::cli {

namespace {

// A duration short enough for a table cell: "100µs", "2.5ms", "209ms", "12.3s", "1m30s".
std::string span(Duration d) {
  using namespace std::chrono;
  // %g's three significant digits, as the tables always showed them (not fmt's shortest "{}").
  const auto three_digits = [](double v) { return fmt::format("{:.3g}", v); };
  if (d < 1ms) return std::to_string(duration_cast<microseconds>(d).count()) + "µs";
  if (d < 1s) return three_digits(duration<double, std::milli>(d).count()) + "ms";
  if (d < 1min) return three_digits(duration<double>(d).count()) + "s";
  return format_span(floor<seconds>(d));
}

// "≤25ms": the bucket bound a quantile lies under; ">4h" past the last; "-" without deliveries.
std::string quantile(const Lateness& l, double q) {
  const std::optional<Duration> b = timing::quantile_bound(l, q);
  if (!b) return "-";
  if (*b == Duration::max()) return ">" + span(Lateness::kBounds.back());
  return "≤" + span(*b);
}

}  // namespace

std::string timing_tables(const Stats& st) {
  if (st.timing.empty()) return "";
  std::vector<std::vector<std::string>> due = {
      {"TOPIC", "NEXT MINUTE", "NEXT HOUR", "NEXT DAY", "NEXT WEEK", "BEYOND", "OLDEST READY"}};
  std::vector<std::vector<std::string>> late = {
      {"TOPIC", "FIRST ATTEMPTS", "P50", "P99", "RETRIES", "P50", "P99"}};
  for (const auto& [name, t] : st.timing) {
    due.push_back({printable(name), std::to_string(t.due.next_minute),
                   std::to_string(t.due.next_hour), std::to_string(t.due.next_day),
                   std::to_string(t.due.next_week), std::to_string(t.due.beyond),
                   t.oldest_ready > Duration::zero() ? span(t.oldest_ready) : "-"});
    late.push_back({printable(name), std::to_string(t.first.count), quantile(t.first, 0.5),
                    quantile(t.first, 0.99), std::to_string(t.retry.count), quantile(t.retry, 0.5),
                    quantile(t.retry, 0.99)});
  }
  return "\n" + table(due, {false, true, true, true, true, true, true}) + "\n" +
         table(late, {false, true, true, true, true, true, true});
}

void write_timing_json(wire::json::Writer& w, const Stats& st) {
  w.key("timing").begin_object();
  for (const auto& [name, t] : st.timing) {
    w.key(name).begin_object();
    wire::write_timing(w, t);
    w.end_object();
  }
  w.end_object();
  wire::write_lateness_bounds(w.key("lateness_bounds_s"));
}

}  // namespace delayq::cli
