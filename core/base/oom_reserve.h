#pragma once

namespace fusionscope {

// Keeps a reserve of address space for when an allocation fails. std::bad_alloc unwinds through destructors that
// allocate (nlohmann::json frees a deep tree through a heap stack) and through noexcept code; an allocation failing
// there ends in std::terminate. With the reserve installed, the first failed allocation gives the reserve back and
// throws std::bad_alloc at once, so the unwinding and the "out of memory" message have room. Call once at start.
void installOutOfMemoryReserve();

}  // namespace fusionscope
