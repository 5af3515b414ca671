// Elementwise semantics of the evaluator: arithmetic, integer wraparound, compare/select/clamp, conversions
// and rounding to narrow float types. Expected values are worked by hand or with numpy (float32/float16
// casts); transcendental results are compared within toleranceFor(f32).

#include <cmath>

#include <gtest/gtest.h>

#include "tests/core/eval/eval_testing.h"

namespace fusionscope::core {
namespace {

using testing::element;
using testing::evalText;
using testing::evalValue;
using testing::f32;
using testing::s32;
using testing::typed;

TEST(ElementwiseEvalTest, FloatBinaryArithmetic) {
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[4] parameter(0)
      y = f32[4] parameter(1)
      add = f32[4] add(x, y)
      sub = f32[4] subtract(x, y)
      mul = f32[4] multiply(x, y)
      div = f32[4] divide(x, y)
      max = f32[4] maximum(x, y)
      min = f32[4] minimum(x, y)
      rem = f32[4] remainder(x, y)
      ROOT t = (f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4]) tuple(add, sub, mul, div, max, min, rem)
    })",
                      {f32({4}, {1.5, -2, 3, 0.25}), f32({4}, {0.5, 4, -3, 2})});
  EXPECT_EQ(element(v, 0), "f32[4] {2, 2, 0, 2.25}");
  EXPECT_EQ(element(v, 1), "f32[4] {1, -6, 6, -1.75}");
  EXPECT_EQ(element(v, 2), "f32[4] {0.75, -8, -9, 0.5}");
  EXPECT_EQ(element(v, 3), "f32[4] {3, -0.5, -1, 0.125}");
  EXPECT_EQ(element(v, 4), "f32[4] {1.5, 4, 3, 2}");
  EXPECT_EQ(element(v, 5), "f32[4] {0.5, -2, -3, 0.25}");
  // fmod: the result takes the dividend's sign.
  EXPECT_EQ(element(v, 6), "f32[4] {0, -2, 0, 0.25}");
}

TEST(ElementwiseEvalTest, F32ResultsAreRoundedAfterEachOp) {
  // 1/3 in f32 is 0.3333333432674408 (numpy: float(np.float32(1)/np.float32(3))); times 3 rounds back to 1.
  Value v = evalValue(R"(
    ENTRY e {
      one = f32[] constant(1)
      three = f32[] constant(3)
      third = f32[] divide(one, three)
      back = f32[] multiply(third, three)
      ROOT t = (f32[], f32[]) tuple(third, back)
    })");
  EXPECT_EQ(v.tupleElement(0).doubleAt(0), 0.3333333432674408);
  EXPECT_EQ(element(v, 1), "f32[] 1");
  // 0.1 as an f32 constant is the float nearest 0.1.
  EXPECT_EQ(evalValue("ENTRY e { ROOT c = f32[] constant(0.1) }").doubleAt(0), 0.10000000149011612);
}

TEST(ElementwiseEvalTest, FloatSpecialValues) {
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[3] constant({1, 0, -1})
      z = f32[3] constant({0, 0, 0})
      nan = f32[3] constant({nan, 1, nan})
      div = f32[3] divide(x, z)
      max = f32[3] maximum(nan, x)
      min = f32[3] minimum(x, nan)
      finite = pred[3] is-finite(div)
      ROOT t = (f32[3], f32[3], f32[3], pred[3]) tuple(div, max, min, finite)
    })");
  EXPECT_EQ(element(v, 0), "f32[3] {inf, nan, -inf}");
  // maximum and minimum propagate NaN.
  EXPECT_EQ(element(v, 1), "f32[3] {nan, 1, nan}");
  EXPECT_EQ(element(v, 2), "f32[3] {nan, 0, nan}");
  EXPECT_EQ(element(v, 3), "pred[3] {false, false, false}");
}

TEST(ElementwiseEvalTest, FloatUnaryExactOps) {
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[6] constant({-2.5, -0.5, 0.5, 1.5, 2.5, -0})
      abs = f32[6] abs(x)
      neg = f32[6] negate(x)
      floor = f32[6] floor(x)
      ceil = f32[6] ceil(x)
      afz = f32[6] round-nearest-afz(x)
      even = f32[6] round-nearest-even(x)
      sign = f32[6] sign(x)
      ROOT t = (f32[6], f32[6], f32[6], f32[6], f32[6], f32[6], f32[6]) tuple(abs, neg, floor, ceil, afz, even, sign)
    })");
  EXPECT_EQ(element(v, 0), "f32[6] {2.5, 0.5, 0.5, 1.5, 2.5, 0}");
  EXPECT_EQ(element(v, 1), "f32[6] {2.5, 0.5, -0.5, -1.5, -2.5, 0}");
  EXPECT_EQ(element(v, 2), "f32[6] {-3, -1, 0, 1, 2, -0}");
  EXPECT_EQ(element(v, 3), "f32[6] {-2, -0, 1, 2, 3, -0}");
  EXPECT_EQ(element(v, 4), "f32[6] {-3, -1, 1, 2, 3, -0}");
  EXPECT_EQ(element(v, 5), "f32[6] {-2, -0, 0, 2, 2, -0}");
  EXPECT_EQ(element(v, 6), "f32[6] {-1, -1, 1, 1, 1, -0}");
}

TEST(ElementwiseEvalTest, FloatTranscendentalOpsMatchNumpy) {
  // Reference: numpy float64 results cast to float32.
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[4] parameter(0)
      exp = f32[4] exponential(x)
      expm1 = f32[4] exponential-minus-one(x)
      tanh = f32[4] tanh(x)
      logistic = f32[4] logistic(x)
      sin = f32[4] sine(x)
      cos = f32[4] cosine(x)
      erf = f32[4] erf(x)
      a = f32[4] abs(x)
      sqrt = f32[4] sqrt(a)
      log1p = f32[4] log-plus-one(a)
      ROOT t = (f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4], f32[4]) tuple(exp, expm1, tanh, logistic, sin, cos, erf, sqrt, log1p)
    })",
                      {f32({4}, {0.5, -1.25, 2.0, 0.0})});
  std::vector<std::vector<double>> expected = {
      {1.6487212181091309, 0.2865048050880432, 7.389056205749512, 1.0},
      {0.6487212777137756, -0.7134951949119568, 6.389056205749512, 0.0},
      {0.46211716532707214, -0.8482836484909058, 0.9640275835990906, 0.0},
      {0.622459352016449, 0.22270013391971588, 0.8807970881462097, 0.5},
      {0.4794255495071411, -0.9489846229553223, 0.9092974066734314, 0.0},
      {0.8775825500488281, 0.3153223693370819, -0.416146844625473, 1.0},
      {0.5204998850822449, -0.9229001402854919, 0.9953222870826721, 0.0},
      {0.7071067690849304, 1.1180340051651, 1.4142135381698608, 0.0},
      {0.40546509623527527, 0.8109301924705505, 1.0986123085021973, 0.0},
  };
  ASSERT_TRUE(v.isTuple());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(compareValues(f32({4}, expected[i]), v.tupleElement(static_cast<int>(i))), "") << "output " << i;
  }
}

TEST(ElementwiseEvalTest, PowerAtan2RsqrtCbrt) {
  Value v = evalValue(R"(
    ENTRY e {
      a = f32[2] constant({1.5, 1})
      b = f32[2] constant({0.5, -1})
      pow = f32[2] power(a, b)
      atan2 = f32[2] atan2(a, b)
      r = f32[2] constant({2, 4})
      rsqrt = f32[2] rsqrt(r)
      c = f32[2] constant({27, -8})
      cbrt = f32[2] cbrt(c)
      ROOT t = (f32[2], f32[2], f32[2], f32[2]) tuple(pow, atan2, rsqrt, cbrt)
    })");
  // numpy: 1.5**0.5 = 1.2247449159622192 (f32), atan2(1.5, 0.5) = 1.2490457723982544, atan2(1, -1) = 3*pi/4.
  EXPECT_EQ(compareValues(f32({2}, {1.2247449159622192, 1.0}), v.tupleElement(0)), "");
  EXPECT_EQ(compareValues(f32({2}, {1.2490457723982544, 2.356194496154785}), v.tupleElement(1)), "");
  EXPECT_EQ(compareValues(f32({2}, {0.7071067690849304, 0.5}), v.tupleElement(2)), "");
  EXPECT_EQ(element(v, 3), "f32[2] {3, -2}");
}

TEST(ElementwiseEvalTest, SignedIntegerWraparound) {
  Value v = evalValue(R"(
    ENTRY e {
      max = s32[] constant(2147483647)
      min = s32[] constant(-2147483648)
      one = s32[] constant(1)
      big = s32[] constant(65536)
      add = s32[] add(max, one)
      sub = s32[] subtract(min, one)
      mul = s32[] multiply(big, big)
      neg = s32[] negate(min)
      abs = s32[] abs(min)
      b = s8[] constant(127)
      b1 = s8[] constant(1)
      badd = s8[] add(b, b1)
      ROOT t = (s32[], s32[], s32[], s32[], s32[], s8[]) tuple(add, sub, mul, neg, abs, badd)
    })");
  EXPECT_EQ(element(v, 0), "s32[] -2147483648");
  EXPECT_EQ(element(v, 1), "s32[] 2147483647");
  EXPECT_EQ(element(v, 2), "s32[] 0");
  EXPECT_EQ(element(v, 3), "s32[] -2147483648");
  EXPECT_EQ(element(v, 4), "s32[] -2147483648");
  EXPECT_EQ(element(v, 5), "s8[] -128");
}

TEST(ElementwiseEvalTest, UnsignedIntegerWraparound) {
  Value v = evalValue(R"(
    ENTRY e {
      zero = u8[] constant(0)
      one = u8[] constant(1)
      sub = u8[] subtract(zero, one)
      x = u32[] constant(4294967295)
      y = u32[] constant(2)
      add = u32[] add(x, y)
      mul = u32[] multiply(x, y)
      big = u64[] constant(18446744073709551615)
      one64 = u64[] constant(1)
      add64 = u64[] add(big, one64)
      gt = pred[] compare(big, one64), direction=GT
      ROOT t = (u8[], u32[], u32[], u64[], u64[], pred[]) tuple(sub, add, mul, big, add64, gt)
    })");
  EXPECT_EQ(element(v, 0), "u8[] 255");
  EXPECT_EQ(element(v, 1), "u32[] 1");
  EXPECT_EQ(element(v, 2), "u32[] 4294967294");
  EXPECT_EQ(element(v, 3), "u64[] 18446744073709551615");
  EXPECT_EQ(element(v, 4), "u64[] 0");
  // u64 compares unsigned: the all-ones value is the largest.
  EXPECT_EQ(element(v, 5), "pred[] true");
}

TEST(ElementwiseEvalTest, IntegerDivisionFollowsXla) {
  Value v = evalValue(R"(
    ENTRY e {
      x = s32[5] constant({7, -7, 7, -2147483648, 5})
      y = s32[5] constant({-2, 2, 0, -1, 0})
      div = s32[5] divide(x, y)
      rem = s32[5] remainder(x, y)
      ux = u32[2] constant({7, 9})
      uy = u32[2] constant({0, 4})
      udiv = u32[2] divide(ux, uy)
      urem = u32[2] remainder(ux, uy)
      ROOT t = (s32[5], s32[5], u32[2], u32[2]) tuple(div, rem, udiv, urem)
    })");
  // Truncating division; x/0 = -1 (all bits set), x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0.
  EXPECT_EQ(element(v, 0), "s32[5] {-3, -3, -1, -2147483648, -1}");
  EXPECT_EQ(element(v, 1), "s32[5] {1, -1, 7, 0, 5}");
  EXPECT_EQ(element(v, 2), "u32[2] {4294967295, 2}");
  EXPECT_EQ(element(v, 3), "u32[2] {7, 1}");
}

TEST(ElementwiseEvalTest, ShiftsAndBitOps) {
  Value v = evalValue(R"(
    ENTRY e {
      x = s32[4] constant({1, 1, -8, -8})
      n = s32[4] constant({31, 32, 1, 40})
      shl = s32[4] shift-left(x, n)
      sra = s32[4] shift-right-arithmetic(x, n)
      srl = s32[4] shift-right-logical(x, n)
      a = s32[3] constant({12, -1, 0})
      b = s32[3] constant({10, 5, 0})
      and = s32[3] and(a, b)
      or = s32[3] or(a, b)
      xor = s32[3] xor(a, b)
      not = s32[3] not(a)
      popcnt = s32[3] popcnt(a)
      clz = s32[3] count-leading-zeros(a)
      p = pred[2] constant({true, false})
      pnot = pred[2] not(p)
      ROOT t = (s32[4], s32[4], s32[4], s32[3], s32[3], s32[3], s32[3], s32[3], s32[3], pred[2]) tuple(shl, sra, srl, and, or, xor, not, popcnt, clz, pnot)
    })");
  // Shifts by the bit width or more shift everything out (arithmetic right shift keeps the sign).
  EXPECT_EQ(element(v, 0), "s32[4] {-2147483648, 0, -16, 0}");
  EXPECT_EQ(element(v, 1), "s32[4] {0, 0, -4, -1}");
  EXPECT_EQ(element(v, 2), "s32[4] {0, 0, 2147483644, 0}");
  EXPECT_EQ(element(v, 3), "s32[3] {8, 5, 0}");
  EXPECT_EQ(element(v, 4), "s32[3] {14, -1, 0}");
  EXPECT_EQ(element(v, 5), "s32[3] {6, -6, 0}");
  EXPECT_EQ(element(v, 6), "s32[3] {-13, 0, -1}");
  EXPECT_EQ(element(v, 7), "s32[3] {2, 32, 0}");
  EXPECT_EQ(element(v, 8), "s32[3] {28, 0, 32}");
  EXPECT_EQ(element(v, 9), "pred[2] {false, true}");
}

TEST(ElementwiseEvalTest, IntegerPowerAndMinMax) {
  Value v = evalValue(R"(
    ENTRY e {
      a = s32[4] constant({3, 2, -1, 5})
      b = s32[4] constant({4, 31, 3, -1})
      pow = s32[4] power(a, b)
      max = s32[4] maximum(a, b)
      min = s32[4] minimum(a, b)
      ROOT t = (s32[4], s32[4], s32[4]) tuple(pow, max, min)
    })");
  // 2^31 wraps to INT_MIN; a negative exponent gives 0 unless the base is 1 or -1.
  EXPECT_EQ(element(v, 0), "s32[4] {81, -2147483648, -1, 0}");
  EXPECT_EQ(element(v, 1), "s32[4] {4, 31, 3, 5}");
  EXPECT_EQ(element(v, 2), "s32[4] {3, 2, -1, -1}");
}

TEST(ElementwiseEvalTest, CompareDirectionsAndNaN) {
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[3] constant({1, 2, nan})
      y = f32[3] constant({2, 2, nan})
      eq = pred[3] compare(x, y), direction=EQ
      ne = pred[3] compare(x, y), direction=NE
      lt = pred[3] compare(x, y), direction=LT
      le = pred[3] compare(x, y), direction=LE
      gt = pred[3] compare(x, y), direction=GT
      ge = pred[3] compare(x, y), direction=GE
      ROOT t = (pred[3], pred[3], pred[3], pred[3], pred[3], pred[3]) tuple(eq, ne, lt, le, gt, ge)
    })");
  EXPECT_EQ(element(v, 0), "pred[3] {false, true, false}");
  EXPECT_EQ(element(v, 1), "pred[3] {true, false, true}");
  EXPECT_EQ(element(v, 2), "pred[3] {true, false, false}");
  EXPECT_EQ(element(v, 3), "pred[3] {true, true, false}");
  EXPECT_EQ(element(v, 4), "pred[3] {false, false, false}");
  EXPECT_EQ(element(v, 5), "pred[3] {false, true, false}");
}

TEST(ElementwiseEvalTest, CompareTotalOrder) {
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[3] constant({-0, nan, -inf})
      y = f32[3] constant({0, inf, nan})
      lt = pred[3] compare(x, y), direction=LT, type=TOTALORDER
      eq = pred[3] compare(x, x), direction=EQ, type=TOTALORDER
      ROOT t = (pred[3], pred[3]) tuple(lt, eq)
    })");
  // -0 < +0, +inf < NaN, -inf < NaN, and NaN equals itself.
  EXPECT_EQ(element(v, 0), "pred[3] {true, false, true}");
  EXPECT_EQ(element(v, 1), "pred[3] {true, true, true}");
}

TEST(ElementwiseEvalTest, SelectAndClamp) {
  Value v = evalValue(R"(
    ENTRY e {
      p = pred[3] constant({true, false, true})
      a = s32[3] constant({1, 2, 3})
      b = s32[3] constant({10, 20, 30})
      sel = s32[3] select(p, a, b)
      lo = f32[] constant(0)
      hi = f32[] constant(1)
      x = f32[4] constant({-1, 0.5, 2, nan})
      clamp = f32[4] clamp(lo, x, hi)
      ROOT t = (s32[3], f32[4]) tuple(sel, clamp)
    })");
  EXPECT_EQ(element(v, 0), "s32[3] {1, 20, 3}");
  EXPECT_EQ(element(v, 1), "f32[4] {0, 0.5, 1, nan}");
}

TEST(ElementwiseEvalTest, ConvertFloatToIntegerSaturatesAndTruncates) {
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[6] constant({2.7, -2.7, nan, 3e9, -3e9, 0.5})
      s = s32[6] convert(x)
      u = u8[6] convert(x)
      p = pred[6] convert(x)
      ROOT t = (s32[6], u8[6], pred[6]) tuple(s, u, p)
    })");
  EXPECT_EQ(element(v, 0), "s32[6] {2, -2, 0, 2147483647, -2147483648, 0}");
  EXPECT_EQ(element(v, 1), "u8[6] {2, 0, 0, 255, 0, 0}");
  EXPECT_EQ(element(v, 2), "pred[6] {true, true, true, true, true, true}");
}

TEST(ElementwiseEvalTest, ConvertBetweenIntegersWraps) {
  Value v = evalValue(R"(
    ENTRY e {
      x = s32[3] constant({300, -1, 128})
      u8 = u8[3] convert(x)
      s8 = s8[3] convert(x)
      u32 = u32[3] convert(x)
      f = f32[3] convert(x)
      ROOT t = (u8[3], s8[3], u32[3], f32[3]) tuple(u8, s8, u32, f)
    })");
  EXPECT_EQ(element(v, 0), "u8[3] {44, 255, 128}");
  EXPECT_EQ(element(v, 1), "s8[3] {44, -1, -128}");
  EXPECT_EQ(element(v, 2), "u32[3] {300, 4294967295, 128}");
  EXPECT_EQ(element(v, 3), "f32[3] {300, -1, 128}");
}

TEST(ElementwiseEvalTest, F16RoundsToNearestEven) {
  // numpy.float16: 2049 -> 2048 (tie to even), 65519 -> 65504, 65520 -> inf, 1e-7 -> 2 * 2^-24 (subnormal),
  // 0.1 -> 0.0999755859375.
  Value v = evalValue(R"(
    ENTRY e {
      i = s32[2] constant({2049, 2051})
      fi = f16[2] convert(i)
      x = f32[4] constant({65519, 65520, 1e-7, 0.1})
      fx = f16[4] convert(x)
      ROOT t = (f16[2], f16[4]) tuple(fi, fx)
    })");
  EXPECT_EQ(element(v, 0), "f16[2] {2048, 2052}");
  ASSERT_TRUE(v.isTuple());
  const Value& fx = v.tupleElement(1);
  EXPECT_EQ(fx.doubleAt(0), 65504.0);
  EXPECT_TRUE(std::isinf(fx.doubleAt(1)));
  EXPECT_EQ(fx.doubleAt(2), 1.1920928955078125e-07);
  EXPECT_EQ(fx.doubleAt(3), 0.0999755859375);
}

TEST(ElementwiseEvalTest, F16ArithmeticRoundsEachResult) {
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: even mantissa wins (1). 1 + 3*2^-11 ties between
  // 1 + 2^-10 (odd) and 1 + 2^-9 (even): 1.001953125. numpy.float16 agrees.
  Value v = evalValue(R"(
    ENTRY e {
      one = f16[2] constant({1, 1})
      d = f16[2] constant({0.00048828125, 0.00146484375})
      ROOT add = f16[2] add(one, d)
    })");
  EXPECT_EQ(v.toString(0), "f16[2] {1, 1.0019531}");
  EXPECT_EQ(v.doubleAt(1), 1.001953125);
}

TEST(ElementwiseEvalTest, BF16RoundsToNearestEven) {
  // bf16 keeps 8 significant bits: 1 + 2^-8 ties to 1, 1 + 3*2^-8 ties to 1 + 2^-6, 1.0078125^2 = 1.0156860...
  // rounds to 1.015625, pi to 3.140625 (numpy float32 bits rounded to the upper 16, nearest-even).
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[3] constant({1.00390625, 1.01171875, 3.14159265})
      b = bf16[3] convert(x)
      y = bf16[] constant(1.0078125)
      sq = bf16[] multiply(y, y)
      ROOT t = (bf16[3], bf16[]) tuple(b, sq)
    })");
  EXPECT_EQ(element(v, 0), "bf16[3] {1, 1.015625, 3.140625}");
  EXPECT_EQ(element(v, 1), "bf16[] 1.015625");
}

TEST(ElementwiseEvalTest, BitcastConvertReinterpretsBits) {
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[2] constant({1, -2.5})
      bits = s32[2] bitcast-convert(x)
      h = f16[] constant(1)
      hbits = u16[] bitcast-convert(h)
      b = bf16[] constant(1)
      bbits = s16[] bitcast-convert(b)
      i = u16[] constant(31744)
      inf = f16[] bitcast-convert(i)
      back = f32[2] bitcast-convert(bits)
      ROOT t = (s32[2], u16[], s16[], f16[], f32[2]) tuple(bits, hbits, bbits, inf, back)
    })");
  // numpy: np.float32(1).view(np.int32) = 1065353216, np.float32(-2.5).view(np.int32) = -1071644672,
  // f16 1.0 = 0x3C00, bf16 1.0 = 0x3F80, f16 0x7C00 = inf.
  EXPECT_EQ(element(v, 0), "s32[2] {1065353216, -1071644672}");
  EXPECT_EQ(element(v, 1), "u16[] 15360");
  EXPECT_EQ(element(v, 2), "s16[] 16256");
  EXPECT_EQ(element(v, 3), "f16[] inf");
  EXPECT_EQ(element(v, 4), "f32[2] {1, -2.5}");
}

// A width change splits or joins elements along a last dimension, least significant part first (XLA's rule, as
// JAX's rng keys use it: u32[4] key data as u64[2]).
TEST(ElementwiseEvalTest, BitcastConvertChangingTheWidthSplitsAndJoinsParts) {
  Value v = evalValue(R"(
    ENTRY e {
      k = u32[2,2] constant({{1, 2}, {3, 4}})
      joined = u64[2] bitcast-convert(k)
      split = u32[2,2] bitcast-convert(joined)
      f = f32[] constant(1)
      halves = u16[2] bitcast-convert(f)
      bytes = u8[2,2,4] bitcast-convert(k)
      ROOT t = (u64[2], u32[2,2], u16[2], u8[2,2,4]) tuple(joined, split, halves, bytes)
    })");
  // numpy: np.array([[1, 2], [3, 4]], np.uint32).view(np.uint64) = [8589934593, 17179869187];
  // np.float32(1).view(np.uint16) = [0, 16256].
  EXPECT_EQ(element(v, 0), "u64[2] {8589934593, 17179869187}");
  EXPECT_EQ(element(v, 1), "u32[2,2] {{1, 2}, {3, 4}}");
  EXPECT_EQ(element(v, 2), "u16[2] {0, 16256}");
  EXPECT_EQ(element(v, 3), "u8[2,2,4] {{{1, 0, 0, 0}, {2, 0, 0, 0}}, {{3, 0, 0, 0}, {4, 0, 0, 0}}}");
}

TEST(ElementwiseEvalTest, ReducePrecisionToF16Range) {
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[4] constant({1.00048828125, 70000, 1e-5, -3})
      ROOT r = f32[4] reduce-precision(x), exponent_bits=5, mantissa_bits=10
    })");
  // Mantissa ties to even (1), overflow to inf, below f16's smallest normal (6.1e-5) flushes to zero.
  EXPECT_EQ(v.toString(0), "f32[4] {1, inf, 0, -3}");
}

TEST(ElementwiseEvalTest, MismatchedOperandShapesAreAnErrorNamingTheInstruction) {
  EXPECT_EQ(evalText(R"(
    ENTRY e {
      x = f32[2] parameter(0)
      y = f32[3] parameter(1)
      ROOT add.1 = f32[2] add(x, y)
    })",
                     {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}),
            "ERROR: add.1: operand 1 has shape f32[3] but the result has 2 element(s)");
}

TEST(ElementwiseEvalTest, OperationNotDefinedForTypeIsAnError) {
  EXPECT_EQ(evalText(R"(
    ENTRY e {
      x = f32[2] constant({1, 2})
      ROOT p = f32[2] popcnt(x)
    })"),
            "ERROR: p: popcnt is not defined for f32");
}

TEST(ElementwiseEvalTest, LargeElementwise) {
  // 1M-element add, multiply and exp, every element checked. How fast it runs is fs_core_bench's
  // BM_EvaluateElementwise1M (bench/core_bench.cpp), not a test's business.
  std::vector<double> data(1 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<double>(i % 100) / 100.0;
  Value x = f32({1024, 1024}, data);
  Value v = evalValue(R"(
    ENTRY e {
      x = f32[1024,1024] parameter(0)
      a = f32[1024,1024] add(x, x)
      m = f32[1024,1024] multiply(a, x)
      ROOT e = f32[1024,1024] exponential(m)
    })",
                      {x});
  ASSERT_EQ(v.elementCount(), 1 << 20);
  for (int64_t i = 0; i < v.elementCount(); i += 997) {
    const float in = static_cast<float>(data[static_cast<size_t>(i)]);
    const float expected = std::exp((in + in) * in);
    EXPECT_NEAR(v.doubleAt(i), expected, 1e-6 * expected) << i;
  }
}

}  // namespace
}  // namespace fusionscope::core
