// Slab<T>: an append-only array in fixed-size chunks of 2^kChunkBits elements.
//
// Growing never moves an element (no copies and no reallocation spikes at millions of entries;
// references stay valid), and an index is found with a shift and a mask. Chunks are fixed rather
// than geometric on purpose: locating a geometric chunk takes a bit scan (bsr on baseline
// x86-64), whose false dependency on its output register chains each lookup to the previous
// one's cache miss; measured, it made the wheel's cancel three times slower at 1M entries.
// An element is constructed by emplace_back() and lives until the slab does.
//
// Not part of the API: installed only because TimingWheel (delayq/timing_wheel.h) holds its nodes
// in one, by value.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace delayq::detail {

template <class T, unsigned kChunkBits = 12>
class Slab {
 public:
  static constexpr uint32_t kChunk = 1u << kChunkBits;

  Slab() = default;
  Slab(const Slab&) = delete;
  Slab& operator=(const Slab&) = delete;
  ~Slab() {
    for (uint32_t i = 0; i < size_; ++i) (*this)[i].~T();
    for (T* c : chunks_) std::free(c);
  }

  T& operator[](uint32_t i) { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
  const T& operator[](uint32_t i) const { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }

  // Appends a default-constructed element; returns its index.
  uint32_t emplace_back() {
    if (size_ == chunks_.size() * kChunk) {
      void* p = std::malloc(sizeof(T) * kChunk);
      if (!p) throw std::bad_alloc();
      chunks_.push_back(static_cast<T*>(p));
    }
    const uint32_t i = size_++;
    new (&(*this)[i]) T();
    return i;
  }
  // Allocates the chunks for `n` elements now and touches their pages (so that appending up to
  // n later neither allocates nor takes a page fault). Constructs nothing; size() is unchanged.
  void reserve(uint32_t n) {
    while (chunks_.size() * kChunk < n) {
      void* p = std::malloc(sizeof(T) * kChunk);
      if (!p) throw std::bad_alloc();
      std::memset(p, 0, sizeof(T) * kChunk);
      chunks_.push_back(static_cast<T*>(p));
    }
  }
  uint32_t size() const { return size_; }
  size_t memory_bytes() const { return chunks_.size() * sizeof(T) * kChunk; }

 private:
  std::vector<T*> chunks_;
  uint32_t size_ = 0;
};

}  // namespace delayq::detail
