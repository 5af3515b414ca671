// Compiled into every program that links mimalloc (fs_use_fast_allocator in the top-level CMakeLists.txt).
//
// A big module's IR is a hundred MB or more of small objects (a 100k-instruction module: ~130 MB), and every pass
// walks it in dependency order, not in address order: on 4 KiB pages nearly every instruction visited is a TLB
// miss as well as a cache miss. mimalloc's large OS pages put its segments on 2 MiB transparent huge pages,
// so one TLB entry covers 512 times as much of the heap. Measured (docs/PERFORMANCE.md, "Huge pages"): most
// passes on the 100k module 5-20% faster, `dump` of it 11% faster, for 5-11 MB more peak RSS.
// A user's own MIMALLOC_LARGE_OS_PAGES setting wins.
#include <cstdlib>

#include <mimalloc.h>

namespace {

const bool kLargePages = [] {
  if (std::getenv("MIMALLOC_LARGE_OS_PAGES") == nullptr) mi_option_enable(mi_option_large_os_pages);
  return true;
}();

}  // namespace
