#include "delayq/error.h"

namespace delayq {
namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "delayq"; }
  std::string message(int v) const override {
    switch (static_cast<Errc>(v)) {
      case Errc::ok: return "ok";
      case Errc::invalid_argument: return "invalid argument";
      case Errc::duplicate_id: return "duplicate id";
      case Errc::not_found: return "not found";
      case Errc::stale_token: return "stale token";
      case Errc::invalid_state: return "invalid state";
      case Errc::timeout: return "timeout";
      case Errc::closed: return "closed";
      case Errc::unavailable: return "unavailable";
      case Errc::io_error: return "I/O error";
      case Errc::corrupt: return "corrupt data";
    }
    return "unknown delayq error";
  }
};

}  // namespace

const char* errc_name(Errc e) noexcept {
  switch (e) {
    case Errc::ok: return "ok";
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::duplicate_id: return "duplicate_id";
    case Errc::not_found: return "not_found";
    case Errc::stale_token: return "stale_token";
    case Errc::invalid_state: return "invalid_state";
    case Errc::timeout: return "timeout";
    case Errc::closed: return "closed";
    case Errc::unavailable: return "unavailable";
    case Errc::io_error: return "io_error";
    case Errc::corrupt: return "corrupt";
  }
  return "error";
}

const std::error_category& error_category() noexcept {
  static const Category c;
  return c;
}

std::error_code make_error_code(Errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return code_.message() + ": " + message_;
}

}  // namespace delayq
