// The Prometheus text format's pieces (prometheus.h).
#include "delayqd/prometheus.h"

#include <fmt/format.h>

#include <iterator>

#include "common/format.h"
#include "wire/json.h"

namespace delayq::http::prom {

void line(std::string& out, std::string_view s) {
  out += s;
  out += '\n';
}

void help(std::string& out, std::string_view name, std::string_view type, std::string_view text) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, text, name, type);
}

void counter(std::string& out, const char* name, const char* text, uint64_t v) {
  help(out, name, "counter", text);
  sample(out, name, "", v);
}

void gauge(std::string& out, const char* name, const char* text, int64_t v) {
  help(out, name, "gauge", text);
  sample(out, name, "", v);
}

std::string number(double d) {
  wire::json::Writer w;
  w.value(d);
  return w.take();
}

std::string label(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const size_t n = utf8_sequence(s, i);
    if (n == 0) {
      fmt::format_to(std::back_inserter(out), "\\\\x{:02x}", static_cast<unsigned char>(c));
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.append(s.substr(i, n));
    }
    i += n == 0 ? 1 : n;
  }
  return out;
}

}  // namespace delayq::http::prom
