// Slab<T>: an append-only array that grows without moving anything.
//
// Chunk k holds kBase << k elements, so n elements need about log2(n / kBase) chunks and an
// index is located with one bit_width: growing never copies (no reallocation spikes at millions
// of entries), references stay valid, and small slabs stay small. An element is constructed by
// emplace_back() and lives until the slab does.
//
// (Advising big chunks as huge pages was tried and made filling slower on this project's
// machines: with THP defrag=madvise the kernel compacts memory synchronously on such faults.)
#pragma once

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <memory>

namespace delayq::detail {

template <class T, unsigned kBaseBits = 8>
class Slab {
 public:
  static constexpr uint64_t kBase = uint64_t{1} << kBaseBits;
  static constexpr int kMaxChunks = 32 - kBaseBits;  // enough for 2^32 elements

  Slab() = default;
  Slab(const Slab&) = delete;
  Slab& operator=(const Slab&) = delete;
  ~Slab() {
    for (uint64_t i = 0; i < size_; ++i) at(static_cast<uint32_t>(i)).~T();
    for (int k = 0; k < chunks_; ++k) std::free(chunk_[k]);
  }

  T& operator[](uint32_t i) { return at(i); }
  const T& operator[](uint32_t i) const { return const_cast<Slab*>(this)->at(i); }

  // Appends a default-constructed element; returns its index.
  uint32_t emplace_back() {
    if (size_ == capacity_) add_chunk();
    const uint32_t i = static_cast<uint32_t>(size_);
    new (&at(i)) T();
    ++size_;
    return i;
  }
  uint32_t size() const { return static_cast<uint32_t>(size_); }
  size_t memory_bytes() const { return capacity_ * sizeof(T); }

 private:
  T& at(uint32_t i) {
    const uint64_t j = uint64_t{i} + kBase;
    const int k = std::bit_width(j) - 1 - static_cast<int>(kBaseBits);
    return chunk_[k][j - (kBase << k)];
  }

  void add_chunk() {
    const uint64_t n = kBase << chunks_;
    void* p = std::malloc(n * sizeof(T));
    if (!p) throw std::bad_alloc();
    chunk_[chunks_++] = static_cast<T*>(p);
    capacity_ += n;
  }

  T* chunk_[kMaxChunks] = {};
  int chunks_ = 0;
  uint64_t size_ = 0;
  uint64_t capacity_ = 0;
};

}  // namespace delayq::detail
