// The simplifier's data-movement rewrites in algebraic_simplifier.cpp that XLA's simplifier has too: a slice that lies
// within one operand of a concatenate slices that operand; a convert of a broadcast converts the broadcast's operand;
// a round trip through a wider type is no convert at all; a broadcast that adds only dimensions of size 1 is a reshape.
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

// bf16-normalization writes a bf16 broadcast of a constant as an f32 broadcast of the converted constant, converted
// back to bf16, and each reader converts it to f32 again (XLA CPU's float normalization does the same). XLA's
// simplifier then converts before broadcasting, and a bf16 -> f32 -> bf16 round trip is the bf16 value itself: what
// is left is an f32 broadcast of an f32 constant in each reader, which fusion copies into it.
constexpr std::string_view kNormalizedOne = R"(
HloModule m
ENTRY main {
  x = f32[16,64]{1,0} parameter(0)
  one = bf16[] constant(1)
  wide = f32[] convert(one)
  b = f32[16,64]{1,0} broadcast(wide), dimensions={}
  stored = bf16[16,64]{1,0} convert(b)
  read = f32[16,64]{1,0} convert(stored)
  ROOT sum = f32[16,64]{1,0} add(x, read)
}
)";

TEST(SimplifyDataMovementTest, AConvertOfABroadcastConvertsTheScalarAndARoundTripIsNoConvert) {
  auto module = testing::parseOrFail(kNormalizedOne);
  ASSERT_NE(module, nullptr);
  AlgebraicSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloInstruction* read = module->entry()->root()->operand(1);
  ASSERT_EQ(read->opcode(), HloOpcode::kBroadcast) << printModule(*module);
  EXPECT_EQ(read->shape().elementType(), PrimitiveType::kF32);
  EXPECT_EQ(read->operand(0)->opcode(), HloOpcode::kConstant) << printModule(*module);
  testing::expectSameResults(kNormalizedOne, *module);
}

// A round trip through a narrower type rounds, and one from f32 through bf16 is not the f32 value: both stay.
TEST(SimplifyDataMovementTest, ARoundTripThroughANarrowerTypeStays) {
  auto module = testing::parseOrFail(R"(
HloModule m
ENTRY main {
  x = f32[8]{0} parameter(0)
  n = bf16[8]{0} convert(x)
  ROOT back = f32[8]{0} convert(n)
}
)");
  ASSERT_NE(module, nullptr);
  AlgebraicSimplifier pass;
  EXPECT_FALSE(testing::runPass(pass, *module));
}

// A scalar broadcast to a window of one element (an expanded scatter's bounds check) and a vector given a unit
// dimension are reshapes, as XLA's simplifier writes them; a broadcast that repeats elements stays.
TEST(SimplifyDataMovementTest, ABroadcastThatAddsOnlyUnitDimensionsIsAReshape) {
  constexpr std::string_view kBroadcasts = R"(
HloModule m
ENTRY main {
  p = pred[] parameter(0)
  v = f32[8]{0} parameter(1)
  one = pred[1]{0} broadcast(p), dimensions={}
  column = f32[8,1]{1,0} broadcast(v), dimensions={0}
  rows = f32[2,8]{1,0} broadcast(v), dimensions={1}
  ROOT t = (pred[1]{0}, f32[8,1]{1,0}, f32[2,8]{1,0}) tuple(one, column, rows)
}
)";
  auto module = testing::parseOrFail(kBroadcasts);
  ASSERT_NE(module, nullptr);
  AlgebraicSimplifier pass;
  EXPECT_TRUE(testing::runPass(pass, *module));
  const HloInstruction* root = module->entry()->root();
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kReshape) << printModule(*module);
  EXPECT_EQ(root->operand(1)->opcode(), HloOpcode::kReshape) << printModule(*module);
  EXPECT_EQ(root->operand(2)->opcode(), HloOpcode::kBroadcast) << printModule(*module);
  testing::expectSameResults(kBroadcasts, *module);
}

}  // namespace
}  // namespace fusionscope::core
