// Slab<T>: an append-only array in fixed chunks. Growing never moves an element (no copies, no
// reallocation spikes at millions of jobs, references stay valid); indexing is a shift and a
// mask.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace delayq::engine {

template <class T, unsigned kChunkBits = 10>
class Slab {
 public:
  static constexpr uint32_t kChunk = 1u << kChunkBits;

  T& operator[](uint32_t i) { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
  const T& operator[](uint32_t i) const { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }

  // Appends a default-constructed element; returns its index.
  uint32_t emplace_back() {
    if (size_ == chunks_.size() * kChunk) chunks_.push_back(std::make_unique<T[]>(kChunk));
    return size_++;
  }
  uint32_t size() const { return size_; }
  size_t memory_bytes() const { return chunks_.size() * kChunk * sizeof(T); }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  uint32_t size_ = 0;
};

}  // namespace delayq::engine
