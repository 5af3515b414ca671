#include "core/base/flat_u64_set.h"

#include <random>
#include <set>

#include <gtest/gtest.h>

namespace fusionscope {
namespace {

TEST(FlatU64Set, InsertReportsWhetherTheKeyIsNew) {
  FlatU64Set set;
  EXPECT_TRUE(set.insert(0));
  EXPECT_FALSE(set.insert(0));
  EXPECT_TRUE(set.insert(1ull << 63));
  EXPECT_TRUE(set.contains(0));
  EXPECT_TRUE(set.contains(1ull << 63));
  EXPECT_FALSE(set.contains(5));
  EXPECT_EQ(set.size(), 2u);
}

// Random keys from a small range (so probe runs collide and wrap) against std::set, through several growths.
TEST(FlatU64Set, MatchesStdSet) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<uint64_t> key(0, 5000);
  FlatU64Set set;
  std::set<uint64_t> reference;
  for (int i = 0; i < 20000; ++i) {
    uint64_t k = key(rng) * 1024;  // equal low bits: the hash must still spread them
    ASSERT_EQ(set.insert(k), reference.insert(k).second) << k;
  }
  EXPECT_EQ(set.size(), reference.size());
  for (uint64_t k = 0; k <= 5000 * 1024; k += 512) EXPECT_EQ(set.contains(k), reference.count(k) == 1) << k;
}

}  // namespace
}  // namespace fusionscope
