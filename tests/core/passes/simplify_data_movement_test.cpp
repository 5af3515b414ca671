// The simplifier's data-movement rewrites in algebraic_simplifier.cpp that XLA's simplifier has too: a slice that lies
// within one operand of a concatenate slices that operand.
#include <string_view>

#include <gtest/gtest.h>

#include "core/passes/algebraic_simplifier.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

// A scatter's index vector built from a zero and the index (XLA's scatter expander), each start sliced from it.
constexpr std::string_view kIndexVector = R"(
HloModule m
ENTRY main {
  i = s32[1]{0} parameter(0)
  x = f32[3,4]{1,0} parameter(1)
  y = f32[3,2]{1,0} parameter(2)
  zero = s32[1]{0} constant({0})
  v = s32[2]{0} concatenate(zero, i), dimensions={0}
  first = s32[1]{0} slice(v), slice={[0:1]}
  second = s32[1]{0} slice(v), slice={[1:2]}
  a = s32[] reshape(first)
  b = s32[] reshape(second)
  xy = f32[3,6]{1,0} concatenate(x, y), dimensions={1}
  part = f32[2,2]{1,0} slice(xy), slice={[1:3], [4:6]}
  across = f32[3,2]{1,0} slice(xy), slice={[0:3], [3:5]}
  ROOT t = (s32[], s32[], f32[2,2]{1,0}, f32[3,2]{1,0}) tuple(a, b, part, across)
}
)";

TEST(SimplifyDataMovementTest, ASliceWithinOneOperandOfAConcatenateSlicesThatOperand) {
  auto module = testing::parseOrFail(kIndexVector);
  ASSERT_NE(module, nullptr);
  AlgebraicSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloInstruction* root = module->entry()->root();
  // The zero start is the constant, the other the index itself.
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kConstant) << printModule(*module);
  EXPECT_EQ(root->operand(1)->operand(0)->name(), "i") << printModule(*module);
  // A slice of the second operand alone reads it, at its own offsets.
  const HloInstruction* part = root->operand(2);
  ASSERT_EQ(part->opcode(), HloOpcode::kSlice) << printModule(*module);
  EXPECT_EQ(part->operand(0)->name(), "y");
  EXPECT_EQ(part->attributes().slice->at(1), (SliceDim{0, 2, 1}));
  // A slice across both operands stays a slice of the concatenate.
  EXPECT_EQ(root->operand(3)->operand(0)->opcode(), HloOpcode::kConcatenate) << printModule(*module);
  testing::expectSameResults(kIndexVector, *module);
}

}  // namespace
}  // namespace fusionscope::core
