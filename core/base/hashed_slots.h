#pragma once

#include <cstddef>
#include <vector>

namespace fusionscope {

// Backward-shift deletion in a linear-probing table: after emptying slot `hole`, the entry at `next` (later in
// the same run) must stay where it is when its home slot lies cyclically in (hole, next]; otherwise it moves
// into the hole and its old slot becomes the new hole.
inline bool backwardShiftKeeps(size_t hole, size_t next, size_t home) {
  return hole <= next ? (hole < home && home <= next) : (hole < home || home <= next);
}

// Size of a power-of-two table with at least `minimum` slots (16 or more): log2 of the capacity, so multiplicative
// hashing can take the top bits.
inline int tableBits(size_t minimum) {
  int bits = 4;
  while ((size_t{1} << bits) < minimum) ++bits;
  return bits;
}

// Non-null item pointers in one array of (hash, item) slots with linear probing, for tables whose key lives in
// the item (an instruction's name, an instruction's structure). The caller hashes the key and says what
// matches; a probe compares the stored hash first and calls `match` only when it is equal, so it reads one
// 16-byte slot per step instead of a heap node (std::unordered_map) and touches an item only on a likely hit.
// Erase shifts later entries back (no tombstones), so lookups stay short after many erasures.
template <typename T>
class HashedSlots {
 public:
  explicit HashedSlots(size_t expected = 0) { m_slots.assign(size_t{1} << tableBits(2 * expected), Slot()); }

  template <typename Match>
  T* find(size_t hash, Match match) const {
    const size_t mask = m_slots.size() - 1;
    for (size_t i = hash & mask; m_slots[i].item != nullptr; i = (i + 1) & mask) {
      if (m_slots[i].hash == hash && match(*m_slots[i].item)) return m_slots[i].item;
    }
    return nullptr;
  }

  // The item `match` accepts among those stored under `hash`, or nullptr after adding `item` under it.
  template <typename Match>
  T* findOrInsert(size_t hash, T* item, Match match) {
    if (2 * (m_size + 1) > m_slots.size()) grow();
    const size_t mask = m_slots.size() - 1;
    size_t i = hash & mask;
    for (; m_slots[i].item != nullptr; i = (i + 1) & mask) {
      if (m_slots[i].hash == hash && match(*m_slots[i].item)) return m_slots[i].item;
    }
    m_slots[i] = Slot{hash, item};
    ++m_size;
    return nullptr;
  }

  // Removes `item`, stored under `hash`; nothing happens when it is not there.
  void erase(size_t hash, const T* item) {
    const size_t mask = m_slots.size() - 1;
    size_t hole = hash & mask;
    while (m_slots[hole].item != nullptr && m_slots[hole].item != item) hole = (hole + 1) & mask;
    if (m_slots[hole].item == nullptr) return;
    for (size_t next = (hole + 1) & mask; m_slots[next].item != nullptr; next = (next + 1) & mask) {
      if (!backwardShiftKeeps(hole, next, m_slots[next].hash & mask)) {
        m_slots[hole] = m_slots[next];
        hole = next;
      }
    }
    m_slots[hole] = Slot();
    --m_size;
  }

  size_t size() const { return m_size; }

  // The slot a lookup of `hash` reads first, for asking for it ahead of the lookup.
  const void* home(size_t hash) const { return &m_slots[hash & (m_slots.size() - 1)]; }

 private:
  struct Slot {
    size_t hash = 0;
    T* item = nullptr;
  };
  void grow() {
    std::vector<Slot> old = std::move(m_slots);
    m_slots.assign(old.size() * 2, Slot());
    const size_t mask = m_slots.size() - 1;
    for (const Slot& slot : old) {
      if (slot.item == nullptr) continue;
      size_t i = slot.hash & mask;
      while (m_slots[i].item != nullptr) i = (i + 1) & mask;
      m_slots[i] = slot;
    }
  }
  std::vector<Slot> m_slots;
  size_t m_size = 0;
};

}  // namespace fusionscope
