// app/fast_allocator.cpp, linked into this test as into fusionscope-cli, turns on mimalloc's large OS pages
// before main() unless the user set MIMALLOC_LARGE_OS_PAGES.
#include <cstdlib>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <mimalloc.h>

namespace {

TEST(FastAllocatorTest, LargeOsPagesAreOnUnlessTheUserChose) {
  if (std::getenv("MIMALLOC_LARGE_OS_PAGES")) GTEST_SKIP() << "MIMALLOC_LARGE_OS_PAGES is set: the user's choice wins";
  EXPECT_TRUE(mi_option_is_enabled(mi_option_large_os_pages));
}

TEST(FastAllocatorTest, MallocIsMimalloc) {
  // The override works through the exported malloc: a block from new is one mimalloc knows.
  auto block = std::make_unique<std::vector<char>>(1 << 20);
  EXPECT_TRUE(mi_is_in_heap_region(block->data()));
}

}  // namespace
