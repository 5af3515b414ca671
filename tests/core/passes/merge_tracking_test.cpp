#include "core/passes/merge_tracking.h"

#include <gtest/gtest.h>

#include "core/ir/hlo_computation.h"
#include "core/ir/hlo_module.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::entryInstruction;
using testing::parseOrFail;

// p0 feeds a and y; a feeds x; y feeds b. In post order: p0 a x y b r.
constexpr std::string_view kModule = R"(
HloModule merge_tracking

ENTRY main {
  p0 = f32[8]{0} parameter(0)
  a = f32[8]{0} exponential(p0)
  x = f32[8]{0} negate(a)
  y = f32[8]{0} abs(p0)
  b = f32[8]{0} add(p0, y)
  ROOT r = (f32[8]{0}, f32[8]{0}) tuple(x, b)
}
)";

struct Fixture {
  std::unique_ptr<HloModule> module = parseOrFail(kModule);
  HloComputation* entry = module->entry();
  HloInstruction* get(std::string_view name) const { return entryInstruction(*module, name); }
  TopologicalOrder order() const { return TopologicalOrder(*entry->postOrder(), entry->idBound()); }
};

TEST(TopologicalOrderTest, NumbersThePostOrder) {
  Fixture f;
  TopologicalOrder order = f.order();
  std::vector<HloInstruction*> post = *f.entry->postOrder();
  for (size_t i = 0; i < post.size(); ++i) EXPECT_EQ(order.position(post[i]), static_cast<int64_t>(i));
  EXPECT_LT(order.position(f.get("a")), order.position(f.get("x")));
  EXPECT_EQ(order.positionOfId(f.entry->idBound() + 10), -1);
  EXPECT_EQ(order.positionOfId(-1), -1);
}

TEST(TopologicalOrderTest, ReachesFollowsUsesNotOperands) {
  Fixture f;
  TopologicalOrder order = f.order();
  EXPECT_TRUE(order.reaches(f.get("p0"), f.get("b"), false));
  EXPECT_TRUE(order.reaches(f.get("a"), f.get("r"), false));
  EXPECT_FALSE(order.reaches(f.get("a"), f.get("b"), false));
  EXPECT_FALSE(order.reaches(f.get("b"), f.get("p0"), false));
  // p0 -> b directly and through y; y -> b only directly.
  EXPECT_TRUE(order.reaches(f.get("p0"), f.get("b"), /*skipDirect=*/true));
  EXPECT_FALSE(order.reaches(f.get("y"), f.get("b"), /*skipDirect=*/true));
}

TEST(TopologicalOrderTest, ReachesFollowsControlEdges) {
  Fixture f;
  f.get("x")->addControlDependencyTo(f.get("y"));
  TopologicalOrder order = f.order();
  EXPECT_TRUE(order.reaches(f.get("a"), f.get("b"), false));
}

TEST(TopologicalOrderTest, MergeKeepsWhatTheFirstReachesAfterTheMergedInstruction) {
  Fixture f;
  TopologicalOrder order = f.order();
  HloInstruction* a = f.get("a");
  HloInstruction* b = f.get("b");
  HloInstruction* x = f.get("x");
  HloInstruction* y = f.get("y");
  const int64_t first = order.position(a);
  const int64_t second = order.position(b);
  ASSERT_EQ(second - first, 3);  // a x y b

  TopologicalOrder::MergePlan plan = order.planMerge(a, b);
  EXPECT_EQ(plan.first, first);
  EXPECT_EQ(plan.second, second);
  EXPECT_EQ(plan.before, std::vector<HloInstruction*>{y});  // b reads it: it must stay before the merge
  EXPECT_EQ(plan.after, std::vector<HloInstruction*>{x});   // a's user: after the merge

  // b merges into a (the IR surgery is not this class's business: only the numbering is checked).
  order.forget(b->id());
  order.applyMerge(plan, a);
  EXPECT_EQ(order.position(y), first);
  EXPECT_EQ(order.position(a), first + 1);
  EXPECT_EQ(order.position(x), first + 2);
  EXPECT_EQ(order.position(b), -1);
  EXPECT_EQ(order.position(f.get("r")), second + 1);  // outside the range: unchanged
}

TEST(TopologicalOrderTest, ReplaceHandsThePositionOver) {
  Fixture f;
  TopologicalOrder order = f.order();
  HloInstruction* y = f.get("y");
  const int64_t pos = order.position(y);
  HloInstruction* copy = f.entry->addInstruction("y_copy", HloOpcode::kAbs, y->shape(), {f.get("p0")});
  EXPECT_EQ(order.position(copy), -1);  // created after the numbering
  order.replace(y->id(), copy);
  EXPECT_EQ(order.position(copy), pos);
  EXPECT_EQ(order.position(y), -1);
}

TEST(TopologicalOrderTest, WalkExploresUnnumberedInstructions) {
  Fixture f;
  TopologicalOrder order = f.order();
  // a -> n (new, unnumbered) -> b: the walk may not prune n, or it would miss the path.
  HloInstruction* n = f.entry->addInstruction("n", HloOpcode::kNegate, f.get("a")->shape(), {f.get("a")});
  f.get("b")->replaceOperand(1, n);
  EXPECT_TRUE(order.reaches(f.get("a"), f.get("b"), false));
  EXPECT_FALSE(order.reaches(f.get("y"), f.get("b"), false));
}

TEST(CandidateIdsTest, IdsAreStableAndForwardAfterMerges) {
  Fixture f;
  CandidateIds ids;
  HloInstruction* a = f.get("a");
  HloInstruction* b = f.get("b");
  HloInstruction* y = f.get("y");
  const int idA = ids.id(a);
  const int idB = ids.id(b);
  const int idY = ids.id(y);
  EXPECT_NE(idA, idB);
  EXPECT_EQ(ids.id(a), idA);
  EXPECT_EQ(ids.instruction(idB), b);

  ids.mergeInto(idB, idA);  // b merged into a
  EXPECT_TRUE(ids.forwarded(idB));
  EXPECT_FALSE(ids.forwarded(idA));
  EXPECT_EQ(ids.instruction(idB), a);
  ids.mergeInto(idA, idY);  // then a into y: b follows the chain
  EXPECT_EQ(ids.find(idB), idY);
  EXPECT_EQ(ids.instruction(idB), y);
}

TEST(CandidateIdsTest, ReplacementKeepsTheId) {
  Fixture f;
  CandidateIds ids;
  HloInstruction* y = f.get("y");
  const int id = ids.id(y);
  HloInstruction* copy = f.entry->addInstruction("y_copy", HloOpcode::kAbs, y->shape(), {f.get("p0")});
  ids.replace(id, copy);
  EXPECT_EQ(ids.id(copy), id);
  EXPECT_EQ(ids.instruction(id), copy);
  EXPECT_NE(ids.id(y), id);  // the replaced instruction, if asked again, is a new candidate
}

}  // namespace
}  // namespace fusionscope::core
