#include "core/base/flat_ptr_map.h"

#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace fusionscope {
namespace {

TEST(FlatPtrMap, InsertFindErase) {
  std::vector<int> objects(4);
  FlatPtrMap<int, int> map;
  map[&objects[0]] = 10;
  map[&objects[1]] = 11;
  EXPECT_EQ(map.size(), 2u);
  ASSERT_NE(map.find(&objects[0]), nullptr);
  EXPECT_EQ(*map.find(&objects[0]), 10);
  EXPECT_EQ(map.find(&objects[2]), nullptr);
  map.erase(&objects[0]);
  EXPECT_EQ(map.size(), 1u);
  EXPECT_FALSE(map.contains(&objects[0]));
  EXPECT_TRUE(map.contains(&objects[1]));
  map.erase(&objects[3]);  // absent: no effect
  EXPECT_EQ(map.size(), 1u);
}

// Random inserts and erasures against std::map, in a table small enough that probe runs wrap around: every key
// must stay findable after the backward shifts.
TEST(FlatPtrMap, MatchesStdMapUnderRandomEraseAndInsert) {
  std::vector<char> objects(512);
  std::map<const char*, int> reference;
  FlatPtrMap<char, int> map(8);
  std::mt19937 rng(7);
  for (int step = 0; step < 20000; ++step) {
    const char* key = &objects[rng() % objects.size()];
    if (rng() % 3 == 0) {
      map.erase(key);
      reference.erase(key);
    } else {
      map[key] = step;
      reference[key] = step;
    }
    if (step % 997 == 0) {
      ASSERT_EQ(map.size(), reference.size());
      for (const char& object : objects) {
        auto it = reference.find(&object);
        const int* found = map.find(&object);
        ASSERT_EQ(found != nullptr, it != reference.end()) << "step " << step;
        if (found) {
          EXPECT_EQ(*found, it->second);
        }
      }
    }
  }
}

}  // namespace
}  // namespace fusionscope
