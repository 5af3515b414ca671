#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/base/hashed_slots.h"

namespace fusionscope {

// Open-addressing set of 64-bit keys (every value but the reserved ~0), for per-pass "seen" sets that take
// tens of thousands of inserts: one contiguous array with linear probing instead of a heap node per key.
// Insert-only: the passes that use it drop the whole set at the end of a round or of the pass.
class FlatU64Set {
 public:
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  explicit FlatU64Set(size_t expected = 0) { rehash(expected * 2); }

  // True when `key` was not there yet (it is now).
  bool insert(uint64_t key) {
    if (2 * (m_size + 1) > m_slots.size()) rehash(m_slots.size() * 2);
    uint64_t& slot = m_slots[probe(key)];
    if (slot == key) return false;
    slot = key;
    ++m_size;
    return true;
  }
  bool contains(uint64_t key) const { return m_slots[probe(key)] == key; }
  size_t size() const { return m_size; }

 private:
  size_t probe(uint64_t key) const {
    const size_t mask = m_slots.size() - 1;
    size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> m_shift);
    while (m_slots[i] != kEmpty && m_slots[i] != key) i = (i + 1) & mask;
    return i;
  }
  void rehash(size_t minimum) {
    const int bits = tableBits(minimum);
    const size_t capacity = size_t{1} << bits;
    std::vector<uint64_t> old = std::move(m_slots);
    m_slots.assign(capacity, kEmpty);
    m_shift = 64 - bits;
    m_size = 0;
    for (uint64_t key : old) {
      if (key != kEmpty) insert(key);
    }
  }
  std::vector<uint64_t> m_slots;
  size_t m_size = 0;
  int m_shift = 60;
};

}  // namespace fusionscope
