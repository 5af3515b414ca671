#include "core/ir/name_index.h"

#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace fusionscope::core {
namespace {

struct Named {
  std::string text;
  const std::string& name() const { return text; }
};

TEST(NameIndex, InsertFindEraseAndTakenNames) {
  Named a{"exp.1"}, b{"exp.2"}, sameAsA{"exp.1"};
  NameIndex<Named> index;
  EXPECT_TRUE(index.insert(&a));
  EXPECT_TRUE(index.insert(&b));
  EXPECT_FALSE(index.insert(&sameAsA));  // the name is taken: nothing changes
  EXPECT_EQ(index.size(), 2u);
  EXPECT_EQ(index.find("exp.1"), &a);
  EXPECT_EQ(index.find("exp.3"), nullptr);
  index.erase(&sameAsA);  // not the holder of "exp.1": no effect
  EXPECT_EQ(index.find("exp.1"), &a);
  index.erase(&a);
  EXPECT_FALSE(index.contains("exp.1"));
  EXPECT_TRUE(index.contains("exp.2"));
  EXPECT_EQ(index.size(), 1u);
}

// Random inserts and erasures against std::map, over few enough names that probe runs cluster and wrap: every
// name must stay findable after the backward shifts, and the table must grow past its first size.
TEST(NameIndex, MatchesStdMapUnderRandomEraseAndInsert) {
  std::vector<Named> items;
  for (int i = 0; i < 700; ++i) items.push_back(Named{"fusion." + std::to_string(i)});
  std::map<std::string, const Named*> reference;
  NameIndex<Named> index;
  std::mt19937 rng(11);
  for (int step = 0; step < 40000; ++step) {
    Named* item = &items[rng() % items.size()];
    if (rng() % 3 == 0) {
      index.erase(item);
      reference.erase(item->text);
    } else {
      EXPECT_EQ(index.insert(item), reference.emplace(item->text, item).second);
    }
    if (step % 997 == 0) {
      ASSERT_EQ(index.size(), reference.size());
      for (const Named& named : items) {
        auto it = reference.find(named.text);
        ASSERT_EQ(index.find(named.text), it == reference.end() ? nullptr : it->second) << "step " << step;
      }
    }
  }
}

}  // namespace
}  // namespace fusionscope::core
