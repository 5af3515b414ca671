#include "core/ir/shape.h"

#include <gtest/gtest.h>

#include "core/ir/opcode.h"

namespace fusionscope::core {
namespace {

TEST(Shape, ArraysAndBytes) {
  Shape s(PrimitiveType::kF32, {100, 784});
  EXPECT_EQ(s.elementCount(), 78400);
  EXPECT_EQ(s.byteSize(), 313600);
  EXPECT_EQ(s.toString(), "f32[100,784]");
  s.setLayout(Layout{{1, 0}, ""});
  EXPECT_EQ(s.toString(), "f32[100,784]{1,0}");
  EXPECT_EQ(s.toString(false), "f32[100,784]");
  EXPECT_EQ(Shape(PrimitiveType::kBF16, {3}).byteSize(), 6);
  EXPECT_EQ(Shape(PrimitiveType::kS4, {3}).byteSize(), 2);  // sub-byte types round up
  EXPECT_EQ(Shape(PrimitiveType::kC64, {2}).byteSize(), 16);
  EXPECT_TRUE(Shape::scalar(PrimitiveType::kPred).isScalar());
}

TEST(Shape, ElementCountsOfEveryKind) {
  EXPECT_EQ(Shape::scalar(PrimitiveType::kF32).elementCount(), 1);
  EXPECT_EQ(Shape(PrimitiveType::kF32, {0, 5}).elementCount(), 0);
  EXPECT_EQ(Shape(PrimitiveType::kF32, {-1, 5}).elementCount(), 0);  // unknown dimension
  EXPECT_EQ(Shape::tuple({Shape(PrimitiveType::kF32, {4})}).elementCount(), 0);
  EXPECT_EQ(Shape(PrimitiveType::kToken, {}).elementCount(), 0);
  EXPECT_EQ(Shape().elementCount(), 1);
}

TEST(Shape, DynamicDimensionsSetAndCleared) {
  Shape s(PrimitiveType::kF32, {8, 4});
  EXPECT_FALSE(s.hasDynamicDimension());
  s.setDynamicDimension(1, true);
  EXPECT_TRUE(s.hasDynamicDimension());
  EXPECT_TRUE(s.isDynamicDimension(1));
  EXPECT_FALSE(s.isDynamicDimension(0));
  EXPECT_EQ(s.toString(), "f32[8,<=4]");
  s.setDynamicDimension(1, false);
  EXPECT_FALSE(s.hasDynamicDimension());
  EXPECT_FALSE(s.isDynamicDimension(1));
  EXPECT_EQ(s.toString(), "f32[8,4]");
}

TEST(Shape, TuplesCompareIgnoringLayout) {
  Shape a = Shape::tuple({Shape(PrimitiveType::kF32, {2}), Shape::scalar(PrimitiveType::kS32)});
  Shape b = a;
  b.mutableTupleElements()[0].setLayout(Layout{{0}, ""});
  EXPECT_TRUE(a.compatible(b));
  EXPECT_FALSE(a == b);
  EXPECT_EQ(a.byteSize(), 12);
  EXPECT_EQ(b.toString(), "(f32[2]{0}, s32[])");
  b.clearLayout();
  EXPECT_TRUE(a == b);
}

TEST(Shape, LongTuplesGetIndexComments) {
  std::vector<Shape> elements(6, Shape::scalar(PrimitiveType::kF32));
  EXPECT_EQ(Shape::tuple(elements).toString(), "(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[])");
}

TEST(PrimitiveType, NamesRoundTrip) {
  for (auto name : {"pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64", "c64",
                    "token", "f8e4m3fn", "c128"}) {
    EXPECT_EQ(primitiveTypeName(parsePrimitiveType(name)), name);
  }
  EXPECT_EQ(parsePrimitiveType("f33"), PrimitiveType::kInvalid);
  EXPECT_TRUE(isFloatingPoint(PrimitiveType::kBF16));
  EXPECT_FALSE(isFloatingPoint(PrimitiveType::kS32));
}

TEST(Opcode, SpellingAndCategory) {
  EXPECT_EQ(parseOpcode("get-tuple-element"), HloOpcode::kGetTupleElement);
  EXPECT_EQ(opcodeName(HloOpcode::kExp), "exponential");
  EXPECT_EQ(parseOpcode("no-such-op"), HloOpcode::kUnknown);
  EXPECT_EQ(opcodeCategory(HloOpcode::kDot), OpCategory::kContraction);
  EXPECT_EQ(opcodeCategory(HloOpcode::kReduce), OpCategory::kReduction);
  EXPECT_TRUE(isElementwise(HloOpcode::kAdd));
  EXPECT_FALSE(isElementwise(HloOpcode::kBroadcast));
  // Every opcode's spelling parses back to itself.
  for (int i = 0; i < static_cast<int>(HloOpcode::kUnknown); ++i) {
    auto op = static_cast<HloOpcode>(i);
    EXPECT_EQ(parseOpcode(opcodeName(op)), op) << opcodeName(op);
  }
}

}  // namespace
}  // namespace fusionscope::core
