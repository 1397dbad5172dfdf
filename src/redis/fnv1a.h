// FNV-1a over bytes, in its 32- and 64-bit forms: a hash that is the same in every process,
// platform and version (std::hash is not), for what clients sharing a server must agree on.
#pragma once

#include <cstdint>
#include <string_view>

namespace delayq::redis {

template <typename U>
constexpr U fnv1a(std::string_view s, U offset_basis, U prime) {
  U h = offset_basis;
  for (unsigned char c : s) {
    h ^= c;
    h *= prime;
  }
  return h;
}

constexpr uint32_t fnv1a32(std::string_view s) {
  return fnv1a<uint32_t>(s, 2166136261u, 16777619u);
}
constexpr uint64_t fnv1a64(std::string_view s) {
  return fnv1a<uint64_t>(s, 14695981039346656037ull, 1099511628211ull);
}

}  // namespace delayq::redis
