// Value, compareValues, toleranceFor and randomArguments.

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "core/eval/scalar_ops.h"
#include "tests/core/eval/eval_testing.h"

namespace fusionscope::core {
namespace {

using testing::f32;
using testing::f64;
using testing::s32;
using testing::typed;

TEST(ValueTest, ConstructorsRoundAndWrapToTheElementType) {
  EXPECT_EQ(f32({2}, {0.1, 1e40}).doubleAt(0), 0.10000000149011612);
  EXPECT_TRUE(std::isinf(f32({2}, {0.1, 1e40}).doubleAt(1)));
  EXPECT_EQ(typed(PrimitiveType::kF16, {}, {0.1}).doubleAt(0), 0.0999755859375);
  EXPECT_EQ(typed(PrimitiveType::kBF16, {}, {3.14159265}).doubleAt(0), 3.140625);
  EXPECT_EQ(Value::integers(Shape(PrimitiveType::kU8, {2}), {256 + 7, -1}).toString(0), "u8[2] {7, 255}");
  EXPECT_EQ(Value::integers(Shape(PrimitiveType::kS16, {1}), {32768}).toString(0), "s16[1] {-32768}");
  EXPECT_EQ(Value::integers(Shape(PrimitiveType::kPred, {2}), {5, 0}).toString(0), "pred[2] {true, false}");
  // fromDoubles converts like `convert`: truncation toward zero, saturation.
  EXPECT_EQ(typed(PrimitiveType::kS8, {3}, {2.9, -300, 1e9}).toString(0), "s8[3] {2, -128, 127}");
}

TEST(ValueTest, EightBitFloatFormats) {
  // f8e5m2: 2 mantissa bits, max 57344; f8e4m3fn: 3 mantissa bits, max 448, no infinity (overflow is NaN).
  Value e5m2 = typed(PrimitiveType::kF8E5M2, {3}, {1.1, 62000, 0.3});
  EXPECT_EQ(e5m2.doubleAt(0), 1.0);
  EXPECT_TRUE(std::isinf(e5m2.doubleAt(1)));
  EXPECT_EQ(e5m2.doubleAt(2), 0.3125);
  Value e4m3 = typed(PrimitiveType::kF8E4M3FN, {3}, {1.1, 460, 500});
  EXPECT_EQ(e4m3.doubleAt(0), 1.125);
  EXPECT_EQ(e4m3.doubleAt(1), 448.0);
  EXPECT_TRUE(std::isnan(e4m3.doubleAt(2)));
}

// Every byte of every 8-bit float format decodes to a value that encodes back to it (NaNs to the format's one NaN),
// and the formats' landmarks are where their definitions put them.
TEST(ValueTest, EightBitFloatEncodingsRoundTrip) {
  struct Format {
    PrimitiveType type;
    int nans;
  };
  // NaN bytes: e5m2 3 of each sign, e4m3 7, e3m4 15 (exponent all ones, mantissa nonzero); e4m3fn S.1111.111; fnuz
  // 0x80 alone.
  for (const Format& f :
       {Format{PrimitiveType::kF8E5M2, 6}, Format{PrimitiveType::kF8E4M3, 14}, Format{PrimitiveType::kF8E3M4, 30},
        Format{PrimitiveType::kF8E4M3FN, 2}, Format{PrimitiveType::kF8E4M3FNUZ, 1},
        Format{PrimitiveType::kF8E5M2FNUZ, 1}, Format{PrimitiveType::kF8E4M3B11FNUZ, 1}}) {
    int nans = 0;
    uint64_t nanByte = 0;
    ASSERT_TRUE(eval::floatToBits(f.type, std::nan(""), nanByte));
    for (uint64_t byte = 0; byte < 256; ++byte) {
      double value = 0;
      ASSERT_TRUE(eval::bitsToFloat(f.type, byte, value));
      uint64_t back = 0;
      ASSERT_TRUE(eval::floatToBits(f.type, value, back));
      if (std::isnan(value)) {
        ++nans;
        EXPECT_EQ(back, nanByte) << primitiveTypeName(f.type) << " " << byte;
      } else {
        EXPECT_EQ(back, byte) << primitiveTypeName(f.type) << " " << byte << " " << value;
        EXPECT_EQ(eval::roundFloat(f.type, value), value) << primitiveTypeName(f.type) << " " << byte;
      }
    }
    EXPECT_EQ(nans, f.nans) << primitiveTypeName(f.type);
  }
  auto decoded = [](PrimitiveType type, uint64_t byte) {
    double value = 0;
    EXPECT_TRUE(eval::bitsToFloat(type, byte, value));
    return value;
  };
  EXPECT_EQ(decoded(PrimitiveType::kF8E4M3FN, 0x7e), 448.0);
  EXPECT_EQ(decoded(PrimitiveType::kF8E4M3FN, 0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(decoded(PrimitiveType::kF8E4M3FN, 0x38), 1.0);
  EXPECT_EQ(decoded(PrimitiveType::kF8E5M2, 0x7b), 57344.0);
  EXPECT_TRUE(std::isinf(decoded(PrimitiveType::kF8E5M2, 0xfc)));
  EXPECT_EQ(decoded(PrimitiveType::kF8E4M3FNUZ, 0x7f), 240.0);
  EXPECT_EQ(decoded(PrimitiveType::kF8E4M3B11FNUZ, 0x7f), 30.0);
  EXPECT_TRUE(std::isnan(decoded(PrimitiveType::kF8E5M2FNUZ, 0x80)));
  EXPECT_EQ(decoded(PrimitiveType::kF8E3M4, 0x30), 1.0);
}

TEST(ValueTest, AccessAndShapes) {
  Value v = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(v.elementCount(), 6);
  EXPECT_EQ(v.at({1, 2}), 6);
  EXPECT_EQ(v.int64At(4), 5);
  EXPECT_EQ(v.doubleAt(99), 0);  // out of range reads 0
  EXPECT_TRUE(v.holdsFloats());
  EXPECT_FALSE(v.isTuple());
  Value t = Value::tuple({v, s32({}, {7})});
  EXPECT_TRUE(t.isTuple());
  EXPECT_EQ(t.tupleSize(), 2);
  EXPECT_EQ(t.shape().toString(false), "(f32[2,3], s32[])");
  EXPECT_EQ(t.tupleElement(1).int64At(0), 7);
  EXPECT_EQ(v.withShape(Shape(PrimitiveType::kF32, {3, 2})).toString(0), "f32[3,2] {{1, 2}, {3, 4}, {5, 6}}");
  EXPECT_EQ(Value::zeros(Shape::tuple({Shape(PrimitiveType::kS32, {2}), Shape(PrimitiveType::kF32, {})})).toString(0),
            "(s32[2] {0, 0}, f32[] 0)");
}

TEST(ValueTest, ToStringCutsLongArrays) {
  Value v = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(v.toString(3), "f32[2,4] {{1, 2, 3, ...}, ...}");
  EXPECT_EQ(v.toString(0), "f32[2,4] {{1, 2, 3, 4}, {5, 6, 7, 8}}");
  EXPECT_EQ(Value::scalar(PrimitiveType::kU64, 0).toString(), "u64[] 0");
  EXPECT_EQ(Value::token().toString(), "token[]");
}

TEST(CompareValuesTest, EqualWithinToleranceAndNaNEqualsNaN) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(compareValues(f32({3}, {1, nan, 100}), f32({3}, {1.000001, nan, 100.0005})), "");
  EXPECT_EQ(compareValues(f32({1}, {0}), f32({1}, {9e-6})), "");
}

TEST(CompareValuesTest, NamesTheFirstDifference) {
  Value expected = f32({2, 4}, {0, 0, 0, 0, 0, 0, 0, 0.5});
  Value actual = f32({2, 4}, {0, 0, 0, 0, 0, 0, 0, 0.75});
  EXPECT_EQ(compareValues(expected, actual), "element {1,3}: 0.5 vs 0.75 (tolerance 1e-05 relative, 1e-05 absolute)");
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(compareValues(f32({1}, {inf}), f32({1}, {-inf})),
            "element {0}: inf vs -inf (tolerance 1e-05 relative, 1e-05 absolute)");
  EXPECT_EQ(compareValues(f32({1}, {1}), f32({1}, {std::numeric_limits<double>::quiet_NaN()})),
            "element {0}: 1 vs nan (tolerance 1e-05 relative, 1e-05 absolute)");
}

TEST(CompareValuesTest, IntegersAreExact) {
  EXPECT_EQ(compareValues(s32({3}, {1, 2, 3}), s32({3}, {1, 2, 4})), "element {2}: 3 vs 4 (exact)");
  EXPECT_EQ(compareValues(s32({}, {5}), s32({}, {5})), "");
}

TEST(CompareValuesTest, ShapesMustBeCompatible) {
  EXPECT_EQ(compareValues(f32({2}, {1, 2}), f32({3}, {1, 2, 3})), "shape mismatch: expected f32[2], got f32[3]");
  EXPECT_EQ(compareValues(f32({2}, {1, 2}), f64({2}, {1, 2})), "shape mismatch: expected f32[2], got f64[2]");
  Value a = Value::tuple({s32({}, {1}), f32({1}, {2})});
  Value b = Value::tuple({s32({}, {1}), f32({1}, {3})});
  EXPECT_EQ(compareValues(a, b), "tuple element 1: element {0}: 2 vs 3 (tolerance 1e-05 relative, 1e-05 absolute)");
}

TEST(CompareValuesTest, ToleranceScalesWithPrecision) {
  EXPECT_EQ(toleranceFor(PrimitiveType::kS32).relative, 0);
  EXPECT_EQ(toleranceFor(PrimitiveType::kPred).absolute, 0);
  EXPECT_LT(toleranceFor(PrimitiveType::kF64).relative, toleranceFor(PrimitiveType::kF32).relative);
  EXPECT_LT(toleranceFor(PrimitiveType::kF32).relative, toleranceFor(PrimitiveType::kF16).relative);
  EXPECT_LT(toleranceFor(PrimitiveType::kF16).relative, toleranceFor(PrimitiveType::kBF16).relative);
  // One bf16 ulp at 1 (2^-7) is within tolerance, a quarter is not.
  Value one = typed(PrimitiveType::kBF16, {}, {1});
  EXPECT_EQ(compareValues(one, typed(PrimitiveType::kBF16, {}, {1.0078125})), "");
  EXPECT_NE(compareValues(one, typed(PrimitiveType::kBF16, {}, {1.25})), "");
}

TEST(RandomArgumentsTest, DeterministicAndInRange) {
  StatusOr<std::unique_ptr<HloModule>> module = parseHloModule(R"(
    ENTRY e {
      a = f32[100] parameter(0)
      b = s32[100] parameter(1)
      c = pred[100] parameter(2)
      d = (bf16[10], u8[3]) parameter(3)
      ROOT t = (f32[100], s32[100], pred[100], (bf16[10], u8[3])) tuple(a, b, c, d)
    })");
  ASSERT_TRUE(module.ok()) << module.message();
  std::vector<Value> args = randomArguments(**module, 7);
  std::vector<Value> again = randomArguments(**module, 7);
  std::vector<Value> other = randomArguments(**module, 8);
  ASSERT_EQ(args.size(), 4u);
  for (size_t i = 0; i < args.size(); ++i) EXPECT_EQ(args[i].toString(0), again[i].toString(0));
  EXPECT_NE(args[0].toString(0), other[0].toString(0));
  int trues = 0;
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_GE(args[0].doubleAt(i), -1.0);
    EXPECT_LT(args[0].doubleAt(i), 1.0);
    EXPECT_GE(args[1].int64At(i), 0);
    EXPECT_LT(args[1].int64At(i), 8);
    trues += static_cast<int>(args[2].int64At(i));
  }
  EXPECT_GT(trues, 20);
  EXPECT_LT(trues, 80);
  EXPECT_EQ(args[3].shape().toString(false), "(bf16[10], u8[3])");
  StatusOr<EvalResult> result = evaluateModule(**module, args);
  ASSERT_TRUE(result.ok()) << result.message();
}

}  // namespace
}  // namespace fusionscope::core
