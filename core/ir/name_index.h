#pragma once

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

namespace fusionscope::core {

// Items by name, for a computation's instructions: open addressing over (hash, item) slots with linear probing
// and backward-shift erase. A probe compares the stored hash first and reads an item's name only when the
// hashes match, so the add/remove churn of the fusion passes on a 100k-instruction computation costs a slot
// access instead of a walk through std::unordered_map's node list. The name is read from the item
// (`item->name()`), so an item must be erased before it is renamed.
template <typename T>
class NameIndex {
 public:
  NameIndex() { m_slots.assign(16, Slot()); }

  T* find(std::string_view name) const {
    const size_t hash = hashOf(name);
    const size_t mask = m_slots.size() - 1;
    for (size_t i = hash & mask; m_slots[i].item != nullptr; i = (i + 1) & mask) {
      if (m_slots[i].hash == hash && m_slots[i].item->name() == name) return m_slots[i].item;
    }
    return nullptr;
  }
  bool contains(std::string_view name) const { return find(name) != nullptr; }

  // Adds `item` under its name; false (and nothing changes) when the name is taken.
  bool insert(T* item) {
    if (2 * (m_size + 1) > m_slots.size()) grow();
    const std::string_view name = item->name();
    const size_t hash = hashOf(name);
    const size_t mask = m_slots.size() - 1;
    size_t i = hash & mask;
    for (; m_slots[i].item != nullptr; i = (i + 1) & mask) {
      if (m_slots[i].hash == hash && m_slots[i].item->name() == name) return false;
    }
    m_slots[i] = Slot{hash, item};
    ++m_size;
    return true;
  }

  // Removes `item`'s entry; an entry of the same name held by another item stays.
  void erase(const T* item) {
    const size_t hash = hashOf(item->name());
    const size_t mask = m_slots.size() - 1;
    size_t hole = hash & mask;
    while (m_slots[hole].item != nullptr && m_slots[hole].item != item) hole = (hole + 1) & mask;
    if (m_slots[hole].item == nullptr) return;
    // Move each later entry of the run back into the hole unless its home slot lies cyclically in (hole, next].
    for (size_t next = (hole + 1) & mask; m_slots[next].item != nullptr; next = (next + 1) & mask) {
      const size_t home = m_slots[next].hash & mask;
      const bool staysPut = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next);
      if (!staysPut) {
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
    size_t hash = 0;
    T* item = nullptr;
  };
  static size_t hashOf(std::string_view name) {
    return std::hash<std::string_view>()(name);  // libstdc++: a Murmur-style hash, good in the low bits
  }
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

}  // namespace fusionscope::core
