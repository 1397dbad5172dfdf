// Errors as values: every fallible call returns a Status or a Result<T>.
//
// A Status carries a std::error_code (category "delayq", values from Errc) and a message meant
// for a person: it names what was wrong and, where it can, what to do about it. Nothing throws
// for bad input; exceptions are reserved for programming errors (e.g. reading the value of a
// failed Result) and for std::bad_alloc.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>

namespace delayq {

enum class Errc {
  ok = 0,
  invalid_argument = 1,  // a malformed request: empty topic, negative delay, oversized body, ...
  duplicate_id = 2,      // push with an id that is already in the queue
  not_found = 3,         // no job with that id (never pushed, acknowledged, or cancelled)
  stale_token = 4,       // ack/nack/touch with a token of an earlier delivery
  invalid_state = 5,     // the job exists but is not in a state that allows the call
  timeout = 6,           // a bounded wait ended with nothing to return
  closed = 7,            // the queue was closed
  unavailable = 8,       // a backend could not be reached (Redis, disk); retry later
  io_error = 9,          // a write or read failed; the call changed nothing
  corrupt = 10,          // stored data could not be read
  cancelled = 11,        // a wait was withdrawn by its caller (reserve_async with a stop_token)
};

const std::error_category& error_category() noexcept;
std::error_code make_error_code(Errc e) noexcept;

// The outcome of a call that returns no value. Cheap to copy on success (no allocation).
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Errc code, std::string message) : code_(make_error_code(code)), message_(std::move(message)) {}

  // Mind the two opposite truths: a Status converts to true on SUCCESS (`if (st)` means ok),
  // while its code(), a std::error_code, converts to true on FAILURE (`if (st.code())` means
  // failed), as every error_code does. Prefer ok() and is() to either conversion.
  bool ok() const noexcept { return !code_; }
  explicit operator bool() const noexcept { return ok(); }
  std::error_code code() const noexcept { return code_; }
  // True when this status carries the given Errc.
  bool is(Errc e) const noexcept { return code_ == make_error_code(e); }
  const std::string& message() const noexcept { return message_; }
  // "<category>: <message>", or "ok".
  std::string to_string() const;

 private:
  std::error_code code_;
  std::string message_;
};

// Thrown only by Result::value() on a failed Result: reading a value that is not there is a
// programming error, not an input error.
class BadResultAccess : public std::runtime_error {
 public:
  explicit BadResultAccess(const Status& s) : std::runtime_error(s.to_string()) {}
};

// Either a T or a failed Status.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status error) : v_(std::move(error)) {}     // NOLINT: must not be ok()
  Result(Errc code, std::string message) : v_(Status(code, std::move(message))) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & { check(); return std::get<0>(v_); }
  const T& value() const& { check(); return std::get<0>(v_); }
  T&& value() && { check(); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // The failure; an ok Status when the Result holds a value.
  Status status() const { return ok() ? Status() : std::get<1>(v_); }
  // As Status's: true on failure, where the Result itself is true on success.
  std::error_code code() const noexcept { return ok() ? std::error_code() : std::get<1>(v_).code(); }
  bool is(Errc e) const noexcept { return !ok() && std::get<1>(v_).is(e); }

 private:
  void check() const {
    if (!ok()) throw BadResultAccess(std::get<1>(v_));
  }
  std::variant<T, Status> v_;
};

// The code's name as the enumerator spells it ("invalid_argument", "io_error"): the word that
// delayqd's answers and the command line carry. "error" for a value that is no Errc.
const char* to_string(Errc e) noexcept;
// The Errc named by `name` (one of to_string's words, "ok" included).
// Errors: invalid_argument, naming the accepted words.
Result<Errc> parse_errc(std::string_view name);

}  // namespace delayq

namespace std {
template <>
struct is_error_code_enum<delayq::Errc> : true_type {};
}  // namespace std
