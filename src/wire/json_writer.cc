// The JSON writer (see json.h): strings escaped so that the output is always valid JSON, and the
// commas and colons of a document placed as its values are added.
#include "wire/json.h"

#include <charconv>
#include <cmath>

#include "common/format.h"

namespace delayq::wire::json {

void append_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
      continue;
    }
    const size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    out.append(s.data() + i, n);
    i += n;
  }
  out += '"';
}

void Writer::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

Writer& Writer::open(char bracket) {
  before_value();
  out_ += bracket;
  first_.push_back(true);
  return *this;
}
Writer& Writer::close(char bracket) {
  out_ += bracket;
  first_.pop_back();
  return *this;
}
Writer& Writer::key(std::string_view k) {
  before_value();
  append_string(out_, k);
  out_ += ':';
  after_key_ = true;
  return *this;
}
Writer& Writer::value(std::string_view s) {
  before_value();
  append_string(out_, s);
  return *this;
}
Writer& Writer::value(int64_t n) {
  before_value();
  out_ += std::to_string(n);
  return *this;
}
Writer& Writer::value(uint64_t n) {
  before_value();
  out_ += std::to_string(n);
  return *this;
}
Writer& Writer::value(double d) {
  if (!std::isfinite(d)) return null();
  before_value();
  char buf[64];
  // The shortest text that reads back as the same double (0.1, not 0.10000000000000001).
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  out_.append(buf, ec == std::errc() ? end : buf);
  return *this;
}
Writer& Writer::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}
Writer& Writer::null() {
  before_value();
  out_ += "null";
  return *this;
}
Writer& Writer::raw(std::string_view json) {
  before_value();
  out_ += json;
  return *this;
}

}  // namespace delayq::wire::json
