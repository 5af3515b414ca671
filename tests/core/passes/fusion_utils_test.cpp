#include "core/passes/fusion_utils.h"

#include <gtest/gtest.h>

#include "core/ir/hlo_verifier.h"
#include "core/passes/merge_tracking.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::entryInstruction;
using testing::fusedOpcodes;
using testing::parseOrFail;

constexpr std::string_view kChain = R"(
HloModule chain

ENTRY main {
  p0 = f32[8]{0} parameter(0)
  p1 = f32[8]{0} parameter(1)
  exp.1 = f32[8]{0} exponential(p0)
  add.2 = f32[8]{0} add(exp.1, p1)
  ROOT neg.3 = f32[8]{0} negate(add.2)
}
)";

void expectValid(const HloModule& module) {
  Status s = verifyModule(module);
  EXPECT_TRUE(s.ok()) << s.message() << "\n" << printModule(module);
}

TEST(FusionUtilsTest, WrapThenFuseProducersBuildsOneLoopFusion) {
  auto module = parseOrFail(kChain);
  HloInstruction* fusion = wrapInFusion(entryInstruction(*module, "neg.3"), FusionKind::kLoop);
  ASSERT_TRUE(fuseProducer(fusion, entryInstruction(*module, "add.2")).ok());
  ASSERT_TRUE(fuseProducer(fusion, entryInstruction(*module, "exp.1")).ok());
  expectValid(*module);
  EXPECT_EQ(module->entry()->root(), fusion);
  EXPECT_EQ(module->entry()->instructionCount(), 3);  // p0, p1, fusion
  EXPECT_EQ(fusedOpcodes(*fusion), (std::vector<std::string>{"add", "exponential", "negate"}));
  ASSERT_EQ(fusion->operandCount(), 2);
  EXPECT_EQ(fusion->operand(0)->name(), "p1");
  EXPECT_EQ(fusion->operand(1)->name(), "p0");
  // Fused instructions keep their names; parameters are numbered like the operands.
  EXPECT_NE(fusion->fusedComputation()->findInstruction("exp.1"), nullptr);
  auto params = fusion->fusedComputation()->parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[1]->users().front()->name(), "exp.1");
}

TEST(FusionUtilsTest, ProducerWithOtherUsersIsDuplicated) {
  auto module = parseOrFail(R"(
HloModule dup
ENTRY main {
  p0 = f32[8]{0} parameter(0)
  neg = f32[8]{0} negate(p0)
  a = f32[8]{0} abs(neg)
  ROOT t = (f32[8]{0}, f32[8]{0}) tuple(a, neg)
}
)");
  HloInstruction* fusion = wrapInFusion(entryInstruction(*module, "a"), FusionKind::kLoop);
  ASSERT_TRUE(fuseProducer(fusion, entryInstruction(*module, "neg")).ok());
  expectValid(*module);
  EXPECT_NE(entryInstruction(*module, "neg"), nullptr);
  EXPECT_EQ(fusion->operand(0)->name(), "p0");
  EXPECT_EQ(fusedOpcodes(*fusion), (std::vector<std::string>{"abs", "negate"}));
}

TEST(FusionUtilsTest, MultiOutputKeepsProducerValueForOtherUsers) {
  auto module = parseOrFail(R"(
HloModule mof
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  p0 = f32[8]{0} parameter(0)
  e = f32[8]{0} exponential(p0)
  zero = f32[] constant(0)
  r = f32[] reduce(e, zero), dimensions={0}, to_apply=add
  ROOT t = (f32[], f32[8]{0}) tuple(r, e)
}
)");
  HloInstruction* fusion = wrapInFusion(entryInstruction(*module, "r"), FusionKind::kInput);
  ASSERT_TRUE(fuseProducerMultiOutput(fusion, entryInstruction(*module, "e")).ok());
  expectValid(*module);
  EXPECT_EQ(entryInstruction(*module, "e"), nullptr);
  EXPECT_TRUE(isMultiOutputFusion(*fusion));
  EXPECT_EQ(fusion->shape().toString(false), "(f32[], f32[8])");
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kGetTupleElement);
  EXPECT_EQ(*root->operand(0)->attributes().tupleIndex, 0);
  EXPECT_EQ(*root->operand(1)->attributes().tupleIndex, 1);
  EXPECT_EQ(fusionOutputs(*fusion).size(), 2u);
}

TEST(FusionUtilsTest, MergingFusionProducerInlinesItsBodyAndDropsItsComputation) {
  auto module = parseOrFail(kChain);
  HloInstruction* inner = wrapInFusion(entryInstruction(*module, "add.2"), FusionKind::kLoop);
  ASSERT_TRUE(fuseProducer(inner, entryInstruction(*module, "exp.1")).ok());
  HloInstruction* outer = wrapInFusion(entryInstruction(*module, "neg.3"), FusionKind::kLoop);
  size_t computations = module->computations().size();
  ASSERT_TRUE(fuseProducer(outer, inner).ok());
  expectValid(*module);
  EXPECT_EQ(module->computations().size(), computations - 1);
  EXPECT_EQ(fusedOpcodes(*outer), (std::vector<std::string>{"add", "exponential", "negate"}));
  EXPECT_EQ(outer->operandCount(), 2);
}

TEST(FusionUtilsTest, SiblingMergeSharesTheCommonOperand) {
  auto module = parseOrFail(R"(
HloModule siblings
ENTRY main {
  p0 = f32[8]{0} parameter(0)
  p1 = f32[8]{0} parameter(1)
  a = f32[8]{0} exponential(p0)
  b = f32[8]{0} add(p0, p1)
  ROOT t = (f32[8]{0}, f32[8]{0}) tuple(a, b)
}
)");
  HloInstruction* fa = wrapInFusion(entryInstruction(*module, "a"), FusionKind::kLoop);
  HloInstruction* fb = wrapInFusion(entryInstruction(*module, "b"), FusionKind::kLoop);
  ASSERT_TRUE(mergeSiblingFusion(fa, fb).ok());
  expectValid(*module);
  EXPECT_EQ(fa->operandCount(), 2);  // p0 read once
  EXPECT_EQ(fusionOutputs(*fa).size(), 2u);
  EXPECT_EQ(testing::entryFusions(*module).size(), 1u);
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(*root->operand(1)->attributes().tupleIndex, 1);
}

TEST(FusionUtilsTest, ReachabilitySeesIndirectPaths) {
  auto module = parseOrFail(R"(
HloModule reach
ENTRY main {
  p0 = f32[8]{0} parameter(0)
  a = f32[8]{0} negate(p0)
  b = f32[8]{0} abs(a)
  ROOT c = f32[8]{0} add(a, b)
}
)");
  TopologicalOrder order = TopologicalOrder::of(*module->entry());
  HloInstruction* a = entryInstruction(*module, "a");
  HloInstruction* c = entryInstruction(*module, "c");
  EXPECT_TRUE(order.reaches(a, c));
  EXPECT_TRUE(order.reaches(a, c, /*skipDirect=*/true));  // through b: fusing a into c would need b inside too
  EXPECT_FALSE(order.reaches(entryInstruction(*module, "b"), a));
  EXPECT_FALSE(order.reaches(entryInstruction(*module, "b"), c, /*skipDirect=*/true));
}

}  // namespace
}  // namespace fusionscope::core
