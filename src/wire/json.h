// A small strict JSON reader and writer for delayqd and its clients (RFC 8259; Boost 1.74 has no
// Boost.JSON).
//
// Hand-written rather than one of Debian 12's libraries, because none keeps the rules below
// without a second pass of our own: nlohmann-json3-dev (3.11.2) takes an object with a key
// twice and keeps the last value, has no cap on depth or size, and builds its DOM of std::map
// before anything can be refused; rapidjson-dev (1.1.0) keeps both members of a duplicate key
// (lookups find the first), checks UTF-8 only when asked, recurses unless told to iterate, and
// has no caps either; libsimdjson-dev (3.0.1) caps depth but does not look for duplicate keys,
// wants its input copied into a padded buffer, and says what went wrong as an error code
// (TAPE_ERROR, ...) rather than "bad JSON at byte 12: expected ',' or '}' in object". With any
// of them the duplicate and cap checks would be a SAX handler or a walk over the result, about
// what this reader is, plus a dependency.
//
// The reader accepts exactly the JSON grammar: no comments, no trailing commas, no NaN, no
// leading zeros, no unescaped control characters, strings that are valid UTF-8 (escapes included:
// a lone surrogate is refused), and no duplicate keys in an object (two "delay" keys would make
// the request ambiguous). Parsing takes time linear in the input (duplicate keys are found by
// sorting each object's keys, not by comparing every pair), and what one document can make it
// allocate is bounded by Limits: nesting depth (so that hostile input cannot exhaust the stack),
// members per object, elements per array, values in all, and digits per number.
// Errors name the byte offset and what was expected, for the message sent back to the client.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "delayq/error.h"

namespace delayq::wire::json {

enum class Type : uint8_t { null, boolean, number, string, array, object };
const char* to_string(Type t) noexcept;

class Value {
 public:
  Value() = default;

  Type type() const noexcept { return type_; }
  bool is_null() const noexcept { return type_ == Type::null; }
  bool is_bool() const noexcept { return type_ == Type::boolean; }
  bool is_number() const noexcept { return type_ == Type::number; }
  bool is_string() const noexcept { return type_ == Type::string; }
  bool is_array() const noexcept { return type_ == Type::array; }
  bool is_object() const noexcept { return type_ == Type::object; }

  bool as_bool() const noexcept { return bool_; }
  double as_double() const noexcept { return number_; }
  // True when the number was written as an integer (no fraction, no exponent) that fits int64:
  // then as_int() is exact even beyond 2^53, where the double is not.
  bool is_int() const noexcept { return type_ == Type::number && integral_; }
  int64_t as_int() const noexcept { return int_; }
  const std::string& as_string() const noexcept { return string_; }
  const std::vector<Value>& as_array() const noexcept { return array_; }
  const std::vector<std::pair<std::string, Value>>& as_object() const noexcept { return object_; }

  // The member `key` of an object, or nullptr (also when this is not an object).
  const Value* find(std::string_view key) const noexcept;

 private:
  friend class Parser;
  Type type_ = Type::null;
  bool bool_ = false;
  bool integral_ = false;
  double number_ = 0;
  int64_t int_ = 0;
  std::string string_;
  std::vector<Value> array_;
  std::vector<std::pair<std::string, Value>> object_;  // in document order
};

// The member `key` of an object as an integer or a string: 0 or "" when it is missing, of another
// type, or `v` is not an object. For answers whose shape the reader trusts.
int64_t member_int(const Value& v, std::string_view key);
std::string member_string(const Value& v, std::string_view key);

// What one document may hold. The defaults are delayqd's caps for a request: far above what any
// route needs (a batch of 1000 jobs, a retry list of 1000 delays), far below what a 4 MiB body
// of tiny values would otherwise make the server allocate (about 100 bytes per value).
struct Limits {
  size_t max_depth = 64;
  size_t max_members = 256;     // per object
  size_t max_elements = 10000;  // per array
  size_t max_values = 100000;   // in the whole document, containers included
  size_t max_number_chars = 64;
};
// Limits for answers from a delayqd the caller trusts: a long dead-letter list, /stats of a
// queue with many topics (one member each).
inline constexpr Limits kReplyLimits{64, 100'000'000, 100'000'000, 100'000'000, 64};

// The work one parse did, for tests that check it grows linearly with the input.
struct ParseCounts {
  size_t values = 0;           // values made, containers included
  size_t key_comparisons = 0;  // comparisons of two keys while looking for duplicates
};

// Parses one JSON document (surrounding whitespace allowed, nothing else after it).
// Errors: invalid_argument, "bad JSON at byte N: ...", naming the cap a document goes over.
Result<Value> parse(std::string_view text, const Limits& limits = {},
                    ParseCounts* counts = nullptr);

// Appends `s` as a JSON string literal (quotes included). Bytes that are not valid UTF-8 are
// written as U+FFFD: the output is always valid JSON, even for a body pushed through the C++ API
// with arbitrary bytes.
void append_string(std::string& out, std::string_view s);

// A streaming writer: values, arrays and objects in order; commas and colons are placed for you.
//   Writer w; w.begin_object().key("code").value(0).key("data").null().end_object();
class Writer {
 public:
  Writer& begin_object() { return open('{'); }
  Writer& end_object() { return close('}'); }
  Writer& begin_array() { return open('['); }
  Writer& end_array() { return close(']'); }
  Writer& key(std::string_view k);
  Writer& value(std::string_view s);
  Writer& value(const char* s) { return value(std::string_view(s)); }
  Writer& value(const std::string& s) { return value(std::string_view(s)); }
  Writer& value(int64_t n);
  Writer& value(uint64_t n);
  Writer& value(int n) { return value(static_cast<int64_t>(n)); }
  Writer& value(unsigned n) { return value(static_cast<uint64_t>(n)); }
  Writer& value(double d);  // non-finite values are written as null
  Writer& value(bool b);
  Writer& null();
  // Inserts already-serialised JSON as one value.
  Writer& raw(std::string_view json);

  const std::string& str() const noexcept { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void before_value();
  Writer& open(char bracket);
  Writer& close(char bracket);
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace delayq::wire::json
