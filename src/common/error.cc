// Errc's two spellings, in one table: the name (to_string, parse_errc: the word delayqd and the
// CLI carry) and the phrase a Status shows a person (the error category's message).
#include "delayq/error.h"

namespace delayq {
namespace {

struct Spelling {
  Errc code;
  const char* name;
  const char* phrase;
};

constexpr Spelling kSpellings[] = {
    {Errc::ok, "ok", "ok"},
    {Errc::invalid_argument, "invalid_argument", "invalid argument"},
    {Errc::duplicate_id, "duplicate_id", "duplicate id"},
    {Errc::not_found, "not_found", "not found"},
    {Errc::stale_token, "stale_token", "stale token"},
    {Errc::invalid_state, "invalid_state", "invalid state"},
    {Errc::timeout, "timeout", "timeout"},
    {Errc::closed, "closed", "closed"},
    {Errc::unavailable, "unavailable", "unavailable"},
    {Errc::io_error, "io_error", "I/O error"},
    {Errc::corrupt, "corrupt", "corrupt data"},
    {Errc::cancelled, "cancelled", "cancelled"},
};

const Spelling* spelling(Errc e) {
  for (const Spelling& s : kSpellings)
    if (s.code == e) return &s;
  return nullptr;
}

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "delayq"; }
  std::string message(int v) const override {
    const Spelling* s = spelling(static_cast<Errc>(v));
    return s ? s->phrase : "unknown delayq error";
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const Category c;
  return c;
}

std::error_code make_error_code(Errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

const char* to_string(Errc e) noexcept {
  const Spelling* s = spelling(e);
  return s ? s->name : "error";
}

Result<Errc> parse_errc(std::string_view name) {
  std::string words;
  for (const Spelling& s : kSpellings) {
    if (name == s.name) return s.code;
    words += words.empty() ? "" : ", ";
    words += s.name;
  }
  return Status(Errc::invalid_argument,
                "unknown error code '" + std::string(name) + "': use one of " + words);
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return code_.message() + ": " + message_;
}

}  // namespace delayq
