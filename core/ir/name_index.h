#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include "core/base/hashed_slots.h"

namespace fusionscope::core {

// Items by name, for a computation's instructions (HashedSlots keyed by `item->name()`): the add/remove churn of
// the fusion passes on a 100k-instruction computation costs a slot access instead of a walk through
// std::unordered_map's node list. The name is read from the item, so an item must be erased before it is
// renamed.
template <typename T>
class NameIndex {
 public:
  T* find(std::string_view name) const {
    return m_slots.find(hashOf(name), [&](const T& item) { return item.name() == name; });
  }
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  // Adds `item` under its name; false (and nothing changes) when the name is taken.
  bool insert(T* item) {
    const std::string_view name = item->name();
    return m_slots.findOrInsert(hashOf(name), item, [&](const T& other) { return other.name() == name; }) == nullptr;
  }
  // Removes `item`'s entry; an entry of the same name held by another item stays.
  void erase(const T* item) { m_slots.erase(hashOf(item->name()), item); }
  size_t size() const { return m_slots.size(); }
  // Where a lookup, insertion or erasure of `name` starts (see prefetch.h).
  const void* home(std::string_view name) const { return m_slots.home(hashOf(name)); }

 private:
  static size_t hashOf(std::string_view name) { return std::hash<std::string_view>()(name); }
  HashedSlots<T> m_slots;
};

}  // namespace fusionscope::core
