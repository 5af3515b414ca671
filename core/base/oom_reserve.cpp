#include "core/base/oom_reserve.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

// Standard library only: fusionscope-gpurun compiles this file in without fs_base.
namespace fusionscope {

namespace {

std::atomic<void*> g_reserve{nullptr};

void giveBackReserveAndThrow() {
  if (void* reserve = g_reserve.exchange(nullptr)) std::free(reserve);
  throw std::bad_alloc();
}

}  // namespace

void installOutOfMemoryReserve() {
  constexpr size_t kReserveBytes = size_t{64} << 20;  // address space only: the pages are never touched
  if (g_reserve.load() == nullptr) g_reserve.store(std::malloc(kReserveBytes));
  std::set_new_handler(giveBackReserveAndThrow);
}

}  // namespace fusionscope
