// tree-reduction: long reductions reduce windows of 32 first, as XLA CPU's TreeReductionRewriter.
#include "core/passes/tree_reduction.h"

#include <string>

#include <gtest/gtest.h>

#include "core/ir/hlo_computation.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

constexpr std::string_view kAdd = R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
)";

bool rewrite(HloModule& module) {
  TreeReduction pass;
  return testing::runPass(pass, module);
}

// TF's bias gradient over a batch of 100, as XLA CPU's dump of tf_mnist shows it.
TEST(TreeReductionTest, AReductionOverAHundredRowsReducesWindowsOf32First) {
  auto module = testing::parseOrFail(std::string(kAdd) + R"(
ENTRY main {
  p = f32[100,10]{1,0} parameter(0)
  zero = f32[] constant(0)
  ROOT s = f32[10]{0} reduce(p, zero), dimensions={0}, to_apply=add
}
)");
  ASSERT_TRUE(rewrite(*module)) << printModule(*module);
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kReduce);
  const HloInstruction* window = root->operand(0);
  ASSERT_EQ(window->opcode(), HloOpcode::kReduceWindow) << printModule(*module);
  EXPECT_EQ(window->shape().toString(), "f32[4,10]{1,0}");
  const std::string text = printModule(*module);
  EXPECT_NE(text.find("window={size=32x1 stride=32x1 pad=14_14x0_0}"), std::string::npos) << text;
  EXPECT_EQ(window->toApply(), root->toApply());
  EXPECT_EQ(window->operand(0)->name(), "p");
}

TEST(TreeReductionTest, ShortReductionsAreLeftAlone) {
  auto module = testing::parseOrFail(std::string(kAdd) + R"(
ENTRY main {
  p = f32[1000,32]{1,0} parameter(0)
  zero = f32[] constant(0)
  ROOT s = f32[1000]{0} reduce(p, zero), dimensions={1}, to_apply=add
}
)");
  EXPECT_FALSE(rewrite(*module)) << printModule(*module);
}

// 5,000 elements: 5000 -> 157 -> 5 windows, so a second run finds nothing longer than 32.
TEST(TreeReductionTest, VeryLongReductionsBecomeATreeAndASecondRunChangesNothing) {
  auto module = testing::parseOrFail(std::string(kAdd) + R"(
ENTRY main {
  p = f32[5000]{0} parameter(0)
  zero = f32[] constant(0)
  ROOT s = f32[] reduce(p, zero), dimensions={0}, to_apply=add
}
)");
  ASSERT_TRUE(rewrite(*module));
  const HloInstruction* outer = module->entry()->root()->operand(0);
  ASSERT_EQ(outer->opcode(), HloOpcode::kReduceWindow) << printModule(*module);
  EXPECT_EQ(outer->shape().dimensions(), (std::vector<int64_t>{5}));
  ASSERT_EQ(outer->operand(0)->opcode(), HloOpcode::kReduceWindow);
  EXPECT_EQ(outer->operand(0)->shape().dimensions(), (std::vector<int64_t>{157}));
  EXPECT_FALSE(rewrite(*module)) << printModule(*module);
}

TEST(TreeReductionTest, ReductionsInsideFusionsAreLeftAlone) {
  auto module = testing::parseOrFail(std::string(kAdd) + R"(
fused {
  a = f32[100]{0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=add
}
ENTRY main {
  p = f32[100]{0} parameter(0)
  ROOT f = f32[] fusion(p), kind=kCustom, calls=fused
}
)");
  EXPECT_FALSE(rewrite(*module)) << printModule(*module);
}

}  // namespace
}  // namespace fusionscope::core
