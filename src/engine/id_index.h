// IdIndex: job id -> job slot, an open-addressing hash table of 8-byte slots.
//
// A slot packs the low 32 bits of the id's hash with (slot index + 1); 0 is empty. The ids
// themselves live in the jobs, so the table holds no strings and allocates nothing per insert.
// Linear probing; erase shifts the following entries back (no tombstones), so lookups stay short
// however many jobs come and go. Grows at 3/4 load.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace delayq::engine {

class IdIndex {
 public:
  static uint64_t hash(std::string_view id) { return std::hash<std::string_view>()(id); }

  // The job slot stored for `id`, or -1. key_of(slot) returns a stored slot's id.
  template <class KeyOf>
  int64_t find(std::string_view id, uint64_t h, KeyOf&& key_of) const {
    if (slots_.empty()) return -1;
    const uint32_t tag = static_cast<uint32_t>(h);
    for (size_t i = tag & mask_;; i = (i + 1) & mask_) {
      const uint64_t s = slots_[i];
      if (s == 0) return -1;
      if (static_cast<uint32_t>(s >> 32) == tag) {
        const uint32_t job = static_cast<uint32_t>(s) - 1;
        if (key_of(job) == id) return job;
      }
    }
  }

  // Precondition: no entry for this id.
  void insert(uint64_t h, uint32_t job) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    place(static_cast<uint32_t>(h), job);
    ++size_;
  }

  // Removes the entry of `job` (whose id hashes to h). Returns false if absent.
  bool erase(uint64_t h, uint32_t job) {
    if (slots_.empty()) return false;
    const uint32_t tag = static_cast<uint32_t>(h);
    const uint64_t want = (uint64_t{tag} << 32) | (uint64_t{job} + 1);
    size_t i = tag & mask_;
    for (;; i = (i + 1) & mask_) {
      if (slots_[i] == 0) return false;
      if (slots_[i] == want) break;
    }
    // Backward shift: move later entries of the probe run into the hole when their home slot
    // allows it.
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      const uint64_t s = slots_[j];
      if (s == 0) break;
      const size_t home = static_cast<uint32_t>(s >> 32) & mask_;
      // Can s move to i? Yes unless its home lies cyclically in (i, j].
      const bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (!stays) {
        slots_[i] = s;
        i = j;
      }
    }
    slots_[i] = 0;
    --size_;
    return true;
  }

  // Sizes the table for `n` entries, so that it grows only past them.
  void reserve(size_t n) {
    size_t cap = 64;
    while (n * 4 > cap * 3) cap *= 2;
    if (cap > slots_.size()) rehash(cap);
  }

  size_t size() const { return size_; }
  size_t memory_bytes() const { return slots_.capacity() * sizeof(uint64_t); }

 private:
  void place(uint32_t tag, uint32_t job) {
    size_t i = tag & mask_;
    while (slots_[i] != 0) i = (i + 1) & mask_;
    slots_[i] = (uint64_t{tag} << 32) | (uint64_t{job} + 1);
  }

  void grow() { rehash(slots_.empty() ? 64 : slots_.size() * 2); }

  // Moves every entry into a table of `cap` slots (a power of two).
  void rehash(size_t cap) {
    std::vector<uint64_t> old;
    old.swap(slots_);
    slots_.assign(cap, 0);
    mask_ = cap - 1;
    for (uint64_t s : old)
      if (s) place(static_cast<uint32_t>(s >> 32), static_cast<uint32_t>(s) - 1);
  }

  std::vector<uint64_t> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace delayq::engine
