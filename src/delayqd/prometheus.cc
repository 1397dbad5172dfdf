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
  line(out, "# HELP " + std::string(name) + " " + std::string(text));
  line(out, "# TYPE " + std::string(name) + " " + std::string(type));
}

void counter(std::string& out, const char* name, const char* text, uint64_t v) {
  help(out, name, "counter", text);
  line(out, std::string(name) + " " + std::to_string(v));
}

void gauge(std::string& out, const char* name, const char* text, int64_t v) {
  help(out, name, "gauge", text);
  line(out, std::string(name) + " " + std::to_string(v));
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
