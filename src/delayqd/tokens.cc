// The latest token per job id (see tokens.h).
#include "delayqd/tokens.h"

namespace delayq::http {

void TokenMemory::remember(const Token& token) {
  if (capacity_ == 0) return;
  std::lock_guard lock(mu_);
  if (fences_.size() >= capacity_ && !fences_.contains(token.id)) fences_.erase(fences_.begin());
  fences_[token.id] = token.fence;
}

std::optional<Token> TokenMemory::latest(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = fences_.find(id);
  if (it == fences_.end()) return std::nullopt;
  return Token{id, it->second};
}

void TokenMemory::forget(const std::string& id) {
  std::lock_guard lock(mu_);
  fences_.erase(id);
}

}  // namespace delayq::http
