// The simplifier's rewrites in simplify_arithmetic.cpp, as XLA's simplifier writes them: a reciprocal of a broadcast
// divisor (cpu), a division by an exponential as a product (cpu), quotients of quotients as one division, a product of
// exponentials as one exponential, a constant factor joined to the scalar that scales the product next, and
// comparisons of an iota with a constant beyond its range as constants.
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "core/ir/hlo_clone.h"
#include "core/passes/algebraic_simplifier.h"
#include "core/passes/fusion_config.h"
#include "core/text/hlo_printer.h"
#include "tests/core/testing/pass_testing.h"

namespace fusionscope::core {
namespace {

using testing::parseOrFail;

bool simplifyFor(HloModule& module, Backend backend) {
  AlgebraicSimplifier pass;
  return testing::runPass(pass, module, backend);
}

// A kernel matrix divided by exp(2 s) where the gradient reads that exp as well (gp_regression's jvp): XLA CPU keeps
// the division, and divides the other copy, whose exp nothing else reads, through a reciprocal.
constexpr std::string_view kSharedDivisor = R"(
HloModule m
ENTRY main {
  d = f32[8,8]{1,0} parameter(0)
  s = f32[] parameter(1)
  e = f32[] exponential(s)
  b = f32[8,8]{1,0} broadcast(e), dimensions={}
  q = f32[8,8]{1,0} divide(d, b)
  g = f32[] multiply(e, s)
  gb = f32[8,8]{1,0} broadcast(g), dimensions={}
  ROOT out = f32[8,8]{1,0} add(q, gb)
}
)";

TEST(SimplifyArithmeticTest, ADivisorOthersReadKeepsItsDivision) {
  auto module = parseOrFail(kSharedDivisor);
  ASSERT_NE(module, nullptr);
  EXPECT_FALSE(simplifyFor(*module, Backend::kCpu)) << printModule(*module);
  EXPECT_EQ(module->entry()->root()->operand(0)->opcode(), HloOpcode::kDivide) << printModule(*module);
}

// A quantization scale, max(amax, eps) / 448, divided by a constant of its own shape: the cpu preset multiplies by the
// reciprocal as XLA does (whose fusion then copies the cheap product into each user, where a division, expensive,
// stayed apart); the gpu preset keeps the division, and a constant divided by a constant is left to folding.
TEST(SimplifyArithmeticTest, CpuDividesByAConstantThroughItsReciprocal) {
  const std::string text = R"(
HloModule m
ENTRY main {
  amax = f32[] parameter(0)
  eps = f32[] constant(1e-12)
  m = f32[] maximum(amax, eps)
  c = f32[] constant(448)
  ROOT scale = f32[] divide(m, c)
}
)";
  auto module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(simplifyFor(*module, Backend::kCpu));
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kMultiply) << printModule(*module);
  EXPECT_EQ(root->operand(0)->name(), "m");
  // 1 / 448, folded by the simplifier's constant rules or still a division of constants.
  const HloInstruction* reciprocal = root->operand(1);
  if (reciprocal->opcode() == HloOpcode::kConstant) {
    ASSERT_NE(reciprocal->literal(), nullptr);
    EXPECT_FLOAT_EQ(static_cast<float>(reciprocal->literal()->floatValues().at(0)), 1.0f / 448) << printModule(*module);
  } else {
    ASSERT_EQ(reciprocal->opcode(), HloOpcode::kDivide) << printModule(*module);
    EXPECT_EQ(reciprocal->operand(1)->name(), "c");
  }

  auto gpu = parseOrFail(text);
  ASSERT_NE(gpu, nullptr);
  EXPECT_FALSE(simplifyFor(*gpu, Backend::kGpu)) << "the gpu preset keeps the division";

  auto constants = parseOrFail(R"(
HloModule m
ENTRY main {
  a = f32[] constant(3)
  c = f32[] constant(448)
  ROOT q = f32[] divide(a, c)
}
)");
  ASSERT_NE(constants, nullptr);
  simplifyFor(*constants, Backend::kCpu);
  EXPECT_NE(constants->entry()->root()->opcode(), HloOpcode::kMultiply) << printModule(*constants);
}

TEST(SimplifyArithmeticTest, ADivisionByABroadcastExpIsAProductWithExpOfTheNegation) {
  const std::string text = R"(
HloModule m
ENTRY main {
  d = f32[8,8]{1,0} parameter(0)
  s = f32[] parameter(1)
  e = f32[] exponential(s)
  b = f32[8,8]{1,0} broadcast(e), dimensions={}
  ROOT q = f32[8,8]{1,0} divide(d, b)
}
)";
  auto module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(simplifyFor(*module, Backend::kCpu));
  // d * broadcast(exp(-s)): the reciprocal 1 / exp(s) became exp(-s), and the product with one went.
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kMultiply) << printModule(*module);
  const HloInstruction* spread = root->operand(1);
  ASSERT_EQ(spread->opcode(), HloOpcode::kBroadcast) << printModule(*module);
  const HloInstruction* exp = spread->operand(0);
  ASSERT_EQ(exp->opcode(), HloOpcode::kExp) << printModule(*module);
  ASSERT_EQ(exp->operand(0)->opcode(), HloOpcode::kNegate) << printModule(*module);
  EXPECT_EQ(exp->operand(0)->operand(0)->name(), "s");
  testing::expectResultsWithinRounding(*parseOrFail(text), *module);

  auto gpu = parseOrFail(text);
  ASSERT_NE(gpu, nullptr);
  EXPECT_FALSE(simplifyFor(*gpu, Backend::kGpu)) << "the gpu preset keeps the division";
}

TEST(SimplifyArithmeticTest, AConstantDivisorIsInvertedHoweverManyReadIt) {
  auto module = parseOrFail(R"(
HloModule m
ENTRY main {
  a = f32[8]{0} parameter(0)
  c = f32[] constant(4)
  b = f32[8]{0} broadcast(c), dimensions={}
  q = f32[8]{0} divide(a, b)
  ROOT r = f32[8]{0} add(q, b)
}
)");
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(simplifyFor(*module, Backend::kCpu));
  EXPECT_EQ(module->entry()->root()->operand(0)->opcode(), HloOpcode::kMultiply) << printModule(*module);
}

// AdamW's update m / (1 - b1^t) / (sqrt(v_hat) + eps), with the bias correction read by every parameter's update
// (so the cpu preset does not divide by it through a reciprocal).
TEST(SimplifyArithmeticTest, AQuotientDividedIsOneDivisionByAProduct) {
  const std::string text = R"(
HloModule m
ENTRY main {
  m = f32[16]{0} parameter(0)
  c = f32[] parameter(1)
  v = f32[16]{0} parameter(2)
  cb = f32[16]{0} broadcast(c), dimensions={}
  mhat = f32[16]{0} divide(m, cb)
  u = f32[16]{0} divide(mhat, v)
  other = f32[16]{0} multiply(cb, v)
  shared = f32[] negate(c)
  ROOT out = (f32[16]{0}, f32[16]{0}, f32[]) tuple(u, other, shared)
}
)";
  for (Backend backend : {Backend::kCpu, Backend::kGpu}) {
    auto module = parseOrFail(text);
    ASSERT_NE(module, nullptr);
    ASSERT_TRUE(simplifyFor(*module, backend));
    const HloInstruction* u = module->entry()->root()->operand(0);
    ASSERT_EQ(u->opcode(), HloOpcode::kDivide) << printModule(*module);
    EXPECT_EQ(u->operand(0)->name(), "m") << printModule(*module);
    ASSERT_EQ(u->operand(1)->opcode(), HloOpcode::kMultiply) << printModule(*module);
    EXPECT_EQ(u->operand(1)->operand(0)->name(), "cb");
    EXPECT_EQ(u->operand(1)->operand(1)->name(), "v");
    testing::expectResultsWithinRounding(*parseOrFail(text), *module);
  }
}

TEST(SimplifyArithmeticTest, DivisionsByQuotientsAndOfQuotientsByQuotients) {
  const std::string text = R"(
HloModule m
ENTRY main {
  a = f32[16]{0} parameter(0)
  b = f32[16]{0} parameter(1)
  c = f32[16]{0} parameter(2)
  d = f32[16]{0} parameter(3)
  bc = f32[16]{0} divide(b, c)
  x = f32[16]{0} divide(a, bc)
  ab = f32[16]{0} divide(a, b)
  cd = f32[16]{0} divide(c, d)
  y = f32[16]{0} divide(ab, cd)
  ROOT out = (f32[16]{0}, f32[16]{0}) tuple(x, y)
}
)";
  auto module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(simplifyFor(*module, Backend::kGpu));
  // a / (b / c) => (a * c) / b
  const HloInstruction* x = module->entry()->root()->operand(0);
  ASSERT_EQ(x->opcode(), HloOpcode::kDivide) << printModule(*module);
  ASSERT_EQ(x->operand(0)->opcode(), HloOpcode::kMultiply) << printModule(*module);
  EXPECT_EQ(x->operand(1)->name(), "b");
  // (a / b) / (c / d) => (a * d) / (b * c)
  const HloInstruction* y = module->entry()->root()->operand(1);
  ASSERT_EQ(y->opcode(), HloOpcode::kDivide) << printModule(*module);
  ASSERT_EQ(y->operand(0)->opcode(), HloOpcode::kMultiply) << printModule(*module);
  EXPECT_EQ(y->operand(0)->operand(1)->name(), "d");
  ASSERT_EQ(y->operand(1)->opcode(), HloOpcode::kMultiply) << printModule(*module);
  EXPECT_EQ(y->operand(1)->operand(1)->name(), "c");
  testing::expectResultsWithinRounding(*parseOrFail(text), *module);
}

TEST(SimplifyArithmeticTest, IntegerQuotientsStay) {
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  a = s32[16]{0} parameter(0)
  b = s32[16]{0} parameter(1)
  c = s32[16]{0} parameter(2)
  ab = s32[16]{0} divide(a, b)
  ROOT q = s32[16]{0} divide(ab, c)
}
)");
}

// JAX's index wrap over an iota of indices (a gather's `where(i < 0, i + n, i)`): i < 0 is false everywhere, so the
// select is the iota itself. Comparisons the iota's range does not decide stay.
TEST(SimplifyArithmeticTest, ACompareOfAnIotaWithAConstantOutsideItsRangeIsAConstant) {
  const std::string text = R"(
HloModule m
ENTRY main {
  i = s32[48]{0} iota(), iota_dimension=0
  zero = s32[] constant(0)
  z = s32[48]{0} broadcast(zero), dimensions={}
  lt = pred[48]{0} compare(i, z), direction=LT
  n = s32[] constant(48)
  b = s32[48]{0} broadcast(n), dimensions={}
  wrapped = s32[48]{0} add(i, b)
  ROOT idx = s32[48]{0} select(lt, wrapped, i)
}
)";
  for (Backend backend : {Backend::kCpu, Backend::kGpu}) {
    auto module = parseOrFail(text);
    ASSERT_NE(module, nullptr);
    ASSERT_TRUE(simplifyFor(*module, backend));
    EXPECT_EQ(module->entry()->root()->name(), "i") << printModule(*module);
  }
  // 47 >= 47 for the last index, so `i < 47` and `47 > i` are decided only per element; `i <= 47` is true everywhere,
  // `i == 48` false and `i != 48` true (48 is past the last index), `48 > i` true.
  for (const char* compare : {"compare(i, c47), direction=LT", "compare(c47, i), direction=GT"}) {
    testing::expectUnchanged<AlgebraicSimplifier>(std::string(R"(
HloModule m
ENTRY main {
  i = s32[48]{0} iota(), iota_dimension=0
  k = s32[] constant(47)
  c47 = s32[48]{0} broadcast(k), dimensions={}
  ROOT r = pred[48]{0} )") + compare + "\n}\n");
  }
  for (const char* compare : {"compare(i, c47), direction=LE", "compare(i, c48), direction=NE",
                              "compare(c48, i), direction=GT", "compare(i, c48), direction=EQ"}) {
    auto module = parseOrFail(std::string(R"(
HloModule m
ENTRY main {
  i = s32[48]{0} iota(), iota_dimension=0
  k = s32[] constant(47)
  c47 = s32[48]{0} broadcast(k), dimensions={}
  l = s32[] constant(48)
  c48 = s32[48]{0} broadcast(l), dimensions={}
  ROOT r = pred[48]{0} )") + compare +
                              "\n}\n");
    ASSERT_NE(module, nullptr) << compare;
    ASSERT_TRUE(simplifyFor(*module, Backend::kGpu)) << compare;
    const HloInstruction* root = module->entry()->root();
    ASSERT_EQ(root->opcode(), HloOpcode::kBroadcast) << compare << "\n" << printModule(*module);
    const bool expected = std::string_view(compare).find("EQ") == std::string_view::npos;
    ASSERT_NE(root->operand(0)->literal(), nullptr) << compare;
    EXPECT_EQ(root->operand(0)->literal()->asDouble(0), expected ? 1.0 : 0.0) << compare;
  }
}

// exp(a) * exp(b) => exp(a + b) on both backends, also when others read the exponentials (gp_regression's exp(s)^2
// written as a product, which the gradient divides by).
TEST(SimplifyArithmeticTest, AProductOfExponentialsIsTheExponentialOfTheSum) {
  const std::string text = R"(
HloModule m
ENTRY main {
  a = f32[8]{0} parameter(0)
  b = f32[8]{0} parameter(1)
  ea = f32[8]{0} exponential(a)
  eb = f32[8]{0} exponential(b)
  p = f32[8]{0} multiply(ea, eb)
  ROOT t = (f32[8]{0}, f32[8]{0}) tuple(p, ea)
}
)";
  for (Backend backend : {Backend::kCpu, Backend::kGpu}) {
    auto module = parseOrFail(text);
    ASSERT_NE(module, nullptr);
    EXPECT_TRUE(simplifyFor(*module, backend));
    const HloInstruction* product = module->entry()->root()->operand(0);
    ASSERT_EQ(product->opcode(), HloOpcode::kExp) << printModule(*module);
    EXPECT_EQ(product->operand(0)->opcode(), HloOpcode::kAdd) << printModule(*module);
    auto original = parseOrFail(text);
    ASSERT_NE(original, nullptr);
    testing::expectResultsWithinRounding(*original, *module);
  }
}

// (d * broadcast(-0.5)) * broadcast(s) => d * broadcast(s * -0.5) when nothing else reads d * -0.5: one multiply per
// element, by one scalar (gp_regression's -0.5 * distances / exp(2 log_scale), the division a product by then).
TEST(SimplifyArithmeticTest, AConstantFactorJoinsTheScalarThatScalesTheProductNext) {
  const std::string text = R"(
HloModule m
ENTRY main {
  d = f32[8,8]{1,0} parameter(0)
  s = f32[] parameter(1)
  c = f32[] constant(-0.5)
  bc = f32[8,8]{1,0} broadcast(c), dimensions={}
  scaled = f32[8,8]{1,0} multiply(d, bc)
  bs = f32[8,8]{1,0} broadcast(s), dimensions={}
  ROOT r = f32[8,8]{1,0} multiply(scaled, bs)
}
)";
  auto module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  EXPECT_TRUE(simplifyFor(*module, Backend::kCpu));
  const HloInstruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), HloOpcode::kMultiply) << printModule(*module);
  EXPECT_EQ(root->operand(0)->name(), "d") << printModule(*module);
  ASSERT_EQ(root->operand(1)->opcode(), HloOpcode::kBroadcast) << printModule(*module);
  const HloInstruction* factor = root->operand(1)->operand(0);
  EXPECT_EQ(factor->opcode(), HloOpcode::kMultiply) << printModule(*module);
  EXPECT_TRUE(factor->shape().isScalar()) << printModule(*module);
  auto original = parseOrFail(text);
  ASSERT_NE(original, nullptr);
  testing::expectResultsWithinRounding(*original, *module);
}

// Where the scaled product is read elsewhere too, joining the factor would multiply every element twice: it stays.
TEST(SimplifyArithmeticTest, AScaledProductOthersReadKeepsItsConstantFactor) {
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  d = f32[8,8]{1,0} parameter(0)
  s = f32[] parameter(1)
  c = f32[] constant(-0.5)
  bc = f32[8,8]{1,0} broadcast(c), dimensions={}
  scaled = f32[8,8]{1,0} multiply(d, bc)
  bs = f32[8,8]{1,0} broadcast(s), dimensions={}
  r = f32[8,8]{1,0} multiply(scaled, bs)
  ROOT t = (f32[8,8]{1,0}, f32[8,8]{1,0}) tuple(r, scaled)
}
)");
}

// x % 2^k as XLA's simplifier writes it: x & (2^k - 1) for unsigned x, and the same on |x| with x's sign given back
// for signed x (jnp.linalg.det's pivot parity `count % 2`): bit for bit the remainder, negatives and INT_MIN
// included. A remainder by 3 stays.
TEST(SimplifyArithmeticTest, ARemainderByAPowerOfTwoIsAMask) {
  const std::string text = R"(
HloModule m
ENTRY main {
  x = s32[6]{0} parameter(0)
  u = u32[6]{0} parameter(1)
  four = s32[] constant(4)
  b4 = s32[6]{0} broadcast(four), dimensions={}
  eight = u32[] constant(8)
  b8 = u32[6]{0} broadcast(eight), dimensions={}
  rs = s32[6]{0} remainder(x, b4)
  ru = u32[6]{0} remainder(u, b8)
  ROOT t = (s32[6]{0}, u32[6]{0}) tuple(rs, ru)
}
)";
  auto module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  EXPECT_TRUE(simplifyFor(*module, Backend::kCpu));
  EXPECT_EQ(testing::countOpcode(*module, HloOpcode::kRemainder), 0) << printModule(*module);
  EXPECT_EQ(module->entry()->root()->operand(0)->opcode(), HloOpcode::kSelect) << printModule(*module);
  EXPECT_EQ(module->entry()->root()->operand(1)->opcode(), HloOpcode::kAnd) << printModule(*module);
  auto original = parseOrFail(text);
  ASSERT_NE(original, nullptr);
  const std::vector<Value> args = {
      Value::integers(Shape(PrimitiveType::kS32, {6}), {-7, -4, 0, 5, 2147483647, -2147483648LL}),
      Value::integers(Shape(PrimitiveType::kU32, {6}), {0, 7, 8, 9, 4294967295LL, 12})};
  auto before = evaluateModule(*original, args);
  auto after = evaluateModule(*module, args);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_EQ(after->result.toString(0), before->result.toString(0));
  EXPECT_EQ(before->result.tupleElement(0).toString(0), "s32[6] {-3, 0, 0, 1, 3, 0}");
  testing::expectUnchanged<AlgebraicSimplifier>(R"(
HloModule m
ENTRY main {
  x = s32[6]{0} parameter(0)
  three = s32[] constant(3)
  b3 = s32[6]{0} broadcast(three), dimensions={}
  ROOT r = s32[6]{0} remainder(x, b3)
}
)");
}

// x * convert(p) is select(p, x, 0) for complex x too (x * (1 + 0i) is x exactly), as XLA's dumps show for a
// complex `a + 8 * jnp.eye(n, dtype=complex64)`.
TEST(SimplifyArithmeticTest, AComplexProductWithAConvertedPredicateIsASelect) {
  const std::string text = R"(
HloModule m
ENTRY main {
  x = c64[4,4]{1,0} parameter(0)
  i = s32[4,4]{1,0} iota(), iota_dimension=0
  j = s32[4,4]{1,0} iota(), iota_dimension=1
  eye = pred[4,4]{1,0} compare(i, j), direction=EQ
  c = c64[4,4]{1,0} convert(eye)
  ROOT m = c64[4,4]{1,0} multiply(x, c)
}
)";
  auto module = parseOrFail(text);
  ASSERT_NE(module, nullptr);
  EXPECT_TRUE(simplifyFor(*module, Backend::kCpu));
  EXPECT_EQ(module->entry()->root()->opcode(), HloOpcode::kSelect) << printModule(*module);
  // Equal but for the signs of zeros (x * 0 is -0 where x's part is negative; the select gives +0), as for reals.
  auto original = parseOrFail(text);
  ASSERT_NE(original, nullptr);
  testing::expectResultsWithinRounding(*original, *module);
}

}  // namespace
}  // namespace fusionscope::core
