#pragma once

#include <cstddef>
#include <memory>

namespace fusionscope {

// Walks over big modules are bound by memory latency: a 100k-instruction module is several times the size of
// the last-level cache, and each instruction visited is a miss. Asking for the instructions a few steps ahead
// (or for all operands of one at once) lets those misses overlap instead of queueing one after another.
// A hint only: it never faults, whatever the address.

// How many instructions ahead a linear walk asks for: enough to cover a DRAM access at a few tens of
// nanoseconds per step, few enough that the lines are still in L1 when the walk gets there.
inline constexpr size_t kPrefetchDistance = 8;

inline void prefetch(const void* address) {
  __builtin_prefetch(address);
}

// In a walk over `items` (raw or smart pointers) at index `i`: asks for the item kPrefetchDistance ahead.
template <typename Container>
inline void prefetchAhead(const Container& items, size_t i) {
  if (i + kPrefetchDistance < items.size()) prefetch(std::to_address(items[i + kPrefetchDistance]));
}

}  // namespace fusionscope
