#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/base/hashed_slots.h"

namespace fusionscope {

// Open-addressing map from a pointer to a small value, for per-pass tables keyed by instruction (post
// order, ranks, node ids). One contiguous array instead of a heap node per entry: on a 100k-instruction
// computation std::unordered_map spends most of its time in cache misses and allocation. Values are
// default-constructed on first access with operator[]; erase shifts the following entries back (no tombstones),
// so lookups stay short after many erasures.
template <typename Key, typename Value>
class FlatPtrMap {
 public:
  explicit FlatPtrMap(size_t expected = 0) { rehash(expected * 2); }

  Value& operator[](const Key* key) {
    if (2 * (m_size + 1) > m_slots.size()) rehash(m_slots.size() * 2);
    Slot& slot = m_slots[probe(key)];
    if (slot.key == nullptr) {
      slot.key = key;
      ++m_size;
    }
    return slot.value;
  }
  const Value* find(const Key* key) const {
    const Slot& slot = m_slots[probe(key)];
    return slot.key == nullptr ? nullptr : &slot.value;
  }
  Value* find(const Key* key) {
    Slot& slot = m_slots[probe(key)];
    return slot.key == nullptr ? nullptr : &slot.value;
  }
  bool contains(const Key* key) const { return find(key) != nullptr; }
  void erase(const Key* key) {
    size_t mask = m_slots.size() - 1;
    size_t hole = probe(key);
    if (m_slots[hole].key == nullptr) return;
    for (size_t next = (hole + 1) & mask; m_slots[next].key != nullptr; next = (next + 1) & mask) {
      if (!backwardShiftKeeps(hole, next, homeSlot(m_slots[next].key))) {
        m_slots[hole] = m_slots[next];
        hole = next;
      }
    }
    m_slots[hole] = Slot();
    --m_size;
  }
  size_t size() const { return m_size; }

 private:
  struct Slot {
    const Key* key = nullptr;
    Value value{};
  };
  size_t homeSlot(const Key* key) const {
    return (reinterpret_cast<uintptr_t>(key) * 0x9E3779B97F4A7C15ull) >> m_shift;
  }
  size_t probe(const Key* key) const {
    size_t mask = m_slots.size() - 1;
    size_t i = homeSlot(key);
    while (m_slots[i].key != nullptr && m_slots[i].key != key) i = (i + 1) & mask;
    return i;
  }
  void rehash(size_t minimum) {
    const int bits = tableBits(minimum);
    const size_t capacity = size_t{1} << bits;
    std::vector<Slot> old = std::move(m_slots);
    m_slots.assign(capacity, Slot());
    m_shift = 64 - bits;
    m_size = 0;
    for (const Slot& slot : old) {
      if (slot.key != nullptr) (*this)[slot.key] = slot.value;
    }
  }
  std::vector<Slot> m_slots;
  size_t m_size = 0;
  int m_shift = 60;
};

}  // namespace fusionscope
