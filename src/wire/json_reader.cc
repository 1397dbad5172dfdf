// The strict JSON reader (see json.h for what "strict" means here, and why it is not
// nlohmann-json, RapidJSON or simdjson): a recursive descent that counts what it makes against
// the caps as it goes.
#include "wire/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>

#include "common/format.h"

namespace delayq::wire::json {

const char* to_string(Type t) noexcept {
  switch (t) {
    case Type::null: return "null";
    case Type::boolean: return "boolean";
    case Type::number: return "number";
    case Type::string: return "string";
    case Type::array: return "array";
    case Type::object: return "object";
  }
  return "unknown";
}

const Value* Value::find(std::string_view key) const noexcept {
  if (type_ != Type::object) return nullptr;
  for (const auto& [k, v] : object_)
    if (k == key) return &v;
  return nullptr;
}

int64_t member_int(const Value& v, std::string_view key) {
  const Value* m = v.find(key);
  return m != nullptr && m->is_int() ? m->as_int() : 0;
}

std::string member_string(const Value& v, std::string_view key) {
  const Value* m = v.find(key);
  return m != nullptr && m->is_string() ? m->as_string() : std::string();
}

namespace {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

// Recursive descent over the text; depth is counted so that "[[[[..." cannot overflow the stack,
// and values, members and elements are counted against the caps as they are made.
class Parser {
 public:
  Parser(std::string_view text, const Limits& limits, ParseCounts& counts)
      : s_(text), limits_(limits), counts_(counts) {}

  Result<Value> run() {
    Value v;
    skip_ws();
    if (!parse_value(v, 0)) return fail();
    skip_ws();
    if (pos_ != s_.size()) {
      error_ = "unexpected data after the JSON value";
      return fail();
    }
    return v;
  }

 private:
  Status fail() const {
    return Status(Errc::invalid_argument,
                  "bad JSON at byte " + std::to_string(err_pos_ ? *err_pos_ : pos_) + ": " +
                      error_);
  }
  bool error(std::string message) {
    error_ = std::move(message);
    return false;
  }
  void skip_ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word)
      return error("expected '" + std::string(word) + "'");
    pos_ += word.size();
    return true;
  }

  bool over_cap(size_t cap, std::string_view what) {
    return error("over the cap of " + std::to_string(cap) + " " + std::string(what));
  }

  bool parse_value(Value& v, size_t depth) {
    if (pos_ >= s_.size()) return error("unexpected end of input, expected a value");
    if (++counts_.values > limits_.max_values)
      return over_cap(limits_.max_values, "values in one document");
    switch (s_[pos_]) {
      case '{': return parse_object(v, depth + 1);
      case '[': return parse_array(v, depth + 1);
      case '"': v.type_ = Type::string; return parse_string(v.string_);
      case 't': v.type_ = Type::boolean; v.bool_ = true; return literal("true");
      case 'f': v.type_ = Type::boolean; v.bool_ = false; return literal("false");
      case 'n': v.type_ = Type::null; return literal("null");
      default:
        if (s_[pos_] == '-' || (s_[pos_] >= '0' && s_[pos_] <= '9')) return parse_number(v);
        return error("unexpected character, expected a value");
    }
  }

  bool at(char c) const { return pos_ < s_.size() && s_[pos_] == c; }

  // At the '{' or '[' of a container: checks the depth and makes `v` one; `more` says whether a
  // member or element follows (false when the container closes at once).
  bool enter(Value& v, Type type, size_t depth, char close, bool& more) {
    if (depth > limits_.max_depth)
      return error("nested deeper than " + std::to_string(limits_.max_depth));
    v.type_ = type;
    ++pos_;
    skip_ws();
    more = !at(close);
    if (!more) ++pos_;
    return true;
  }
  // After a member or an element: a ',' (`more`), or `close`, which ends the container.
  bool after_item(char close, bool& more, std::string_view container) {
    skip_ws();
    if (!at(',') && !at(close))
      return error(std::string("expected ',' or '") + close + "' in " + std::string(container));
    more = s_[pos_++] == ',';
    return true;
  }

  bool parse_object(Value& v, size_t depth) {
    bool more = false;
    if (!enter(v, Type::object, depth, '}', more)) return false;
    std::vector<size_t> key_pos;  // where each member's key starts, for the duplicate check
    while (more) {
      skip_ws();
      if (!at('"')) return error("expected a string key");
      if (v.object_.size() == limits_.max_members)
        return over_cap(limits_.max_members, "members in one object");
      key_pos.push_back(pos_);
      std::string key;
      if (!parse_string(key)) return false;
      skip_ws();
      if (!at(':')) return error("expected ':' after a key");
      ++pos_;
      skip_ws();
      Value member;
      if (!parse_value(member, depth)) return false;
      v.object_.emplace_back(std::move(key), std::move(member));
      if (!after_item('}', more, "an object")) return false;
    }
    return unique_keys(v, key_pos);
  }

  // Two members with one key make a request ambiguous. Found by sorting the keys (n log n
  // comparisons, each at most as long as the shorter key): a linear scan per key made an object
  // of many keys quadratic. Reports the duplicate that comes first in the text.
  bool unique_keys(const Value& v, const std::vector<size_t>& key_pos) {
    const auto& members = v.object_;
    if (members.size() < 2) return true;
    std::vector<size_t> order(members.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      ++counts_.key_comparisons;
      const int c = members[a].first.compare(members[b].first);
      return c != 0 ? c < 0 : a < b;
    });
    std::optional<size_t> later;  // the member index of the first duplicate in the text
    for (size_t i = 1; i < order.size(); ++i) {
      ++counts_.key_comparisons;
      if (members[order[i]].first == members[order[i - 1]].first)
        later = std::min(later.value_or(order[i]), order[i]);
    }
    if (!later) return true;
    err_pos_ = key_pos[*later];
    std::string key = members[*later].first;
    if (key.size() > 64) key = key.substr(0, 64) + "...";
    return error("duplicate key \"" + key + "\"");
  }

  bool parse_array(Value& v, size_t depth) {
    bool more = false;
    if (!enter(v, Type::array, depth, ']', more)) return false;
    while (more) {
      skip_ws();
      if (v.array_.size() == limits_.max_elements)
        return over_cap(limits_.max_elements, "elements in one array");
      Value element;
      if (!parse_value(element, depth)) return false;
      v.array_.push_back(std::move(element));
      if (!after_item(']', more, "an array")) return false;
    }
    return true;
  }

  bool hex4(uint32_t& out) {
    if (pos_ + 4 > s_.size()) return error("truncated \\u escape");
    out = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[pos_++];
      out <<= 4;
      if (c >= '0' && c <= '9') out |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') out |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') out |= static_cast<uint32_t>(c - 'A' + 10);
      else return error("bad hex digit in a \\u escape");
    }
    return true;
  }

  bool parse_string(std::string& out) {
    ++pos_;  // opening quote
    for (;;) {
      if (pos_ >= s_.size()) return error("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return error("unescaped control character in a string");
      if (c == '\\') {
        if (++pos_ >= s_.size()) return error("unterminated escape");
        const char e = s_[pos_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            uint32_t cp;
            if (!hex4(cp)) return false;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return error("lone low surrogate in a \\u escape");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              uint32_t low;
              if (s_.substr(pos_, 2) != "\\u") return error("high surrogate without a low one");
              pos_ += 2;
              if (!hex4(low)) return false;
              if (low < 0xDC00 || low > 0xDFFF) return error("high surrogate without a low one");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            }
            append_utf8(out, cp);
            break;
          }
          default: --pos_; return error("unknown escape");
        }
        continue;
      }
      const size_t n = utf8_sequence(s_, pos_);
      if (n == 0) return error("invalid UTF-8 in a string");
      out.append(s_.data() + pos_, n);
      pos_ += n;
    }
  }

  bool parse_number(Value& v) {
    const size_t start = pos_;
    bool integral = true;
    if (s_[pos_] == '-') ++pos_;
    const auto digit = [&] { return pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9'; };
    if (!digit()) return error("expected a digit");
    if (s_[pos_] == '0') {
      ++pos_;
      if (digit()) return error("leading zero in a number");
    } else {
      while (digit()) ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (!digit()) return error("expected a digit after '.'");
      while (digit()) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digit()) return error("expected a digit in the exponent");
      while (digit()) ++pos_;
    }
    const std::string_view text = s_.substr(start, pos_ - start);
    if (text.size() > limits_.max_number_chars) {
      err_pos_ = start;
      return over_cap(limits_.max_number_chars, "characters in one number");
    }
    v.type_ = Type::number;
    // strtod needs a terminated string; numbers are short, so a copy is cheap.
    const std::string copy(text);
    v.number_ = std::strtod(copy.c_str(), nullptr);
    if (!std::isfinite(v.number_)) {
      err_pos_ = start;
      return error("number out of range");
    }
    if (integral) {
      const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v.int_);
      v.integral_ = ec == std::errc() && ptr == text.data() + text.size();
    }
    return true;
  }

  std::string_view s_;
  const Limits& limits_;
  ParseCounts& counts_;
  size_t pos_ = 0;
  std::optional<size_t> err_pos_;
  std::string error_;
};

Result<Value> parse(std::string_view text, const Limits& limits, ParseCounts* counts) {
  ParseCounts local;
  return Parser(text, limits, counts != nullptr ? *counts : local).run();
}

}  // namespace delayq::wire::json
